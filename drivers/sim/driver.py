"""SimDriver: runs Programs on host memory with `torchtpu.sim` kernels and charges simulated time.

Values and costs come from separate rules over the same Program: `kernels.KERNELS` computes values, `costs.COSTS`
prices each op from shapes alone. An executable's cost is fixed at compile time: its element-wise, movement and
reduction ops form one fused region whose intermediates stay on chip (only the program's inputs and outputs
touch HBM, as XLA fuses them), MXU ops are priced on their own, and each launch pays the host overhead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from torchtpu.drivers import config
from torchtpu.drivers.base import Driver, Executable, ExecutionError
from torchtpu.drivers.ir import Op, Program
from torchtpu.drivers.sim import kernels_data  # noqa: F401  (registers the movement/MXU kernels)
from torchtpu.drivers.sim.costs import COSTS
from torchtpu.drivers.sim.fast import elide_broadcasts, specialize
from torchtpu.drivers.sim.kernels import KERNELS, NP_DTYPES, Kernel
from torchtpu.drivers.sim.straight_line import compile_steps
from torchtpu.sim.chips import ChipSpec, get_chip
from torchtpu.sim.cost import CostModel, CostRecord
from torchtpu.sim.timeline import Timeline

try:  # numpy >= 2: the error state is a context variable holding an "extobj" capsule
    from numpy._core._ufunc_config import _extobj_contextvar
    from numpy._core.umath import _make_extobj
except ImportError:  # pragma: no cover - other numpy versions take np.errstate
    _extobj_contextvar = _make_extobj = None

DEFAULT_CHIP = "v5e"


class _IgnoreErrors:
    """`np.errstate(all="ignore")` for one launch at a fraction of its cost (it builds the error state anew on
    every entry: about 1 us, a third of a small launch).

    `enter` sets what `np.errstate(all="ignore").__enter__` sets, `_make_extobj(all="ignore")` derived from the
    current state (its buffer size and error callback are kept), computed once per current state object: the
    state is an immutable capsule that every `seterr`/`setbufsize`/`errstate` replaces, so the same capsule
    means the same derived state. `exit` resets the context variable as `__exit__` does. The cache is one tuple,
    replaced whole, so threads never see a state paired with another thread's base.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: tuple[Any, Any] = (None, None)

    def enter(self) -> Any:
        if _extobj_contextvar is None:  # pragma: no cover
            state = np.errstate(all="ignore")
            state.__enter__()
            return state
        base = _extobj_contextvar.get()
        cache = self._cache
        if cache[0] is not base:
            cache = self._cache = (base, _make_extobj(all="ignore"))
        return _extobj_contextvar.set(cache[1])

    @staticmethod
    def exit(token: Any) -> None:
        if _extobj_contextvar is None:  # pragma: no cover
            token.__exit__(None, None, None)
        else:
            _extobj_contextvar.reset(token)


_IGNORE_ERRORS = _IgnoreErrors()


def chip_from_env() -> ChipSpec:
    return get_chip(config.get("TORCHTPU_CHIP"))


class _Step:
    """One IR op of an executable: its kernel and where its operands and results sit in the run's value list."""

    __slots__ = ("kernel", "op", "inputs", "outputs", "index", "fast", "out")

    def __init__(self, kernel: Kernel, op: Op, inputs: tuple[int, ...], outputs: tuple[int, ...], index: int) -> None:
        self.kernel, self.op, self.inputs, self.outputs, self.index = kernel, op, inputs, outputs, index
        self.fast = specialize(op)  # a direct numpy call with the generic kernel's value, or None (fast.py)
        self.out = outputs[0] if outputs else -1


def _external(value: np.ndarray) -> bool:
    """Whether `value` may be memory the caller passed in (an input buffer or a view of one): arrays a kernel
    made during the launch, and views of them, own their root memory and cannot overlap an output."""
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return not root.flags.owndata


def _interpret(plan: _Plan, env: list[Any]) -> None:
    """The plan's steps one by one (what `plan.run` does in one function), raising ExecutionError with the
    index and name of the op that fails."""
    for step in plan.steps:
        try:
            if step.fast is not None:
                env[step.out] = step.fast(*[env[i] for i in step.inputs])
                continue
            results = step.kernel(step.op, [env[i] for i in step.inputs])
        except Exception as exc:
            raise ExecutionError(step.index, step.op.name, exc) from exc
        for i, value in zip(step.outputs, results):
            env[i] = value


class _Plan:
    """An executable's payload: the steps over a flat value list (program inputs first), the output slots and the
    launch cost, all fixed at compile time so that a launch does no lookups."""

    __slots__ = ("steps", "padding", "outputs", "cost", "charge", "name", "last", "last_dtype", "run")

    def __init__(self, steps: list[_Step], padding: tuple, outputs: tuple[int, ...], cost: CostRecord,
                 name: str) -> None:
        self.outputs, self.cost, self.name = outputs, cost, name
        self.charge = Timeline.charge(cost, name)  # what each launch adds to the timeline
        self.padding = padding  # the value list after the inputs: one slot per op result, constants filled in
        # A one-output program ending in a ufunc step writes that step's result straight into the output buffer
        # (`out=`: numpy buffers any overlap with the operands) instead of into a new array copied afterwards.
        self.last: _Step | None = None
        self.last_dtype: np.dtype | None = None
        if steps and len(outputs) == 1 and steps[-1].out == outputs[0] and isinstance(steps[-1].fast, np.ufunc):
            self.last, steps = steps[-1], steps[:-1]
            self.last_dtype = np.dtype(NP_DTYPES[self.last.op.outputs[0].dtype])
        self.steps = tuple(steps)
        # the steps as straight-line code (straight_line.py), returning the operands of the last step
        last_inputs = self.last.inputs if self.last is not None else ()
        needed = [i for i in outputs if self.last is None or i != self.last.out]
        self.run = compile_steps(self.steps, needed, name, last_inputs)


# Ops whose inputs are all constants are run once at compile time (constant, iota, broadcasts and arithmetic of
# them: the kernels are pure functions of their inputs) unless they keep more than this much memory alive.
FOLD_MAX_BYTES = 1 << 16
_NEVER_FOLD = frozenset({"rng"})


def _fold(kern: Kernel, op: Op, args: list[np.ndarray]) -> list[np.ndarray] | None:
    """The op's results made read-only, or None to leave it to run time (it raised, or is too big to keep)."""
    try:
        with np.errstate(all="ignore"):
            values = [np.asarray(v) for v in kern(op, args)]
    except Exception:  # noqa: BLE001 - it raises again, with the op named, when the executable runs
        return None
    for v in values:
        root = v
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root.nbytes > FOLD_MAX_BYTES:
            return None
    for v in values:
        v.flags.writeable = False
    return values


class SimDriver(Driver):
    name = "sim"

    def __init__(self, chip: ChipSpec | None = None, devices: int | None = None) -> None:
        super().__init__()
        self.chip = chip or chip_from_env()
        self._launch_overhead = float(self.chip.launch_overhead_s)  # host time each launch adds
        if self._launch_overhead < 0:
            raise ValueError(f"{self.chip.name}: launch_overhead_s must be >= 0, got {self._launch_overhead}")
        self.cost_model = CostModel(self.chip)
        kernels_data.MXU_ARRAY = self.chip.mxu_rows
        count = devices or config.get("TORCHTPU_NUM_DEVICES")
        self.timelines = [Timeline(self.chip) for _ in range(count)]

    def device_count(self) -> int:
        return len(self.timelines)

    def device_name(self, index: int) -> str:
        return f"{self.chip.display_name} (simulated)"

    def device_properties(self, index: int) -> dict[str, Any]:
        c = self.chip
        return {"name": self.device_name(index), "total_memory": int(c.hbm_bytes), "chip": c.name,
                "bf16_flops": c.bf16_flops, "hbm_bandwidth": c.hbm_bw, "tensorcores": c.tensorcores,
                "mxus_per_core": c.mxus_per_core, "mxu_shape": (c.mxu_rows, c.mxu_cols), "driver": self.name}

    def memory_limit(self, index: int) -> int:
        return int(self.chip.hbm_bytes)

    def _compile(self, program: Program) -> Executable:
        slot = {v.id: i for i, v in enumerate(program.inputs)}  # value id -> index in the run's value list
        count = len(program.inputs)
        steps = []
        folded: dict[int, np.ndarray] = {}  # slot -> value computed here, once, from constants alone
        for index, op in enumerate(program.ops):
            kern = KERNELS.get(op.name)
            if kern is None:
                raise NotImplementedError(f"the sim driver has no kernel for IR op {op.name!r}")
            ins = tuple(slot[v.id] for v in op.inputs)
            for v in op.outputs:
                slot[v.id] = count
                count += 1
            outs = tuple(slot[v.id] for v in op.outputs)
            if all(i in folded for i in ins) and op.name not in _NEVER_FOLD:
                values = _fold(kern, op, [folded[i] for i in ins])
                if values is not None:
                    folded.update(zip(outs, values))
                    continue
            steps.append(_Step(kern, op, ins, outs, index))
        cost = dataclasses.replace(self.program_cost(program), op=program.name)
        n_in = len(program.inputs)
        padding = tuple(folded.get(i) for i in range(n_in, count))
        outputs = tuple(slot[v.id] for v in program.outputs)
        elide_broadcasts(steps, outputs)
        plan = _Plan(steps, padding, outputs, cost, program.name)
        plan.charge = Timeline.charge(cost, program.name, program)  # records keep the Program (profilers)
        return Executable(program, payload=plan, meta={"cost": cost})

    def program_cost(self, program: Program) -> CostRecord:
        """The simulated cost of one launch of `program` (fused VPU region + MXU ops)."""
        vpu_records, mxu_records = [], []
        for op in program.ops:
            if op.name == "constant" or op.name == "iota":
                continue
            record = COSTS[op.name](self.cost_model, op)
            (mxu_records if op.name in ("dot_general", "convolution") else vpu_records).append(record)
        external = sum(v.type.nbytes for v in program.inputs) + sum(v.type.nbytes for v in program.outputs)
        records = list(mxu_records)
        if vpu_records:
            mxu_bytes = sum(r.hbm_bytes for r in mxu_records)
            records.append(self.cost_model.fuse(vpu_records, max(external - mxu_bytes, 0)))
        if not records:
            return self.cost_model.data_movement("copy", external // 2, external - external // 2)
        return records[0] if len(records) == 1 else self.cost_model.fuse(records, external)

    def execute(self, exe: Executable, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                device: int = 0) -> None:
        plan: _Plan = exe.payload
        env: list[Any] = [*inputs, *plan.padding]
        token = _IGNORE_ERRORS.enter()  # one per launch, not per kernel (see kernels.py)
        try:
            try:
                operands = plan.run(env)  # the last step's operands
            except Exception:  # noqa: BLE001 - step by step again, to name the op that raises
                _interpret(plan, env)
                operands = [env[i] for i in plan.last.inputs] if plan.last is not None else ()
            last = plan.last
            if last is not None:
                try:
                    if outputs[0].dtype == plan.last_dtype:
                        last.fast(*operands, out=outputs[0])
                        self._charge_launch(plan, device)
                        return
                    env[last.out] = last.fast(*operands)
                except Exception as exc:
                    raise ExecutionError(last.index, last.op.name, exc) from exc
        finally:
            _IGNORE_ERRORS.exit(token)
        results = [env[i] for i in plan.outputs]
        if len(outputs) > 1:  # a result that views an input may view memory an earlier output write overwrites
            results = [r.copy() if _external(r) and any(np.may_share_memory(r, o) for o in outputs) else r
                       for r in results]
        for result, out in zip(results, outputs):
            if result.dtype != out.dtype:
                result = result.astype(out.dtype)
            np.copyto(out, result, casting="unsafe")
        self._charge_launch(plan, device)

    def _charge_launch(self, plan: _Plan, device: int) -> None:
        self.timelines[device].issue(self._launch_overhead, plan.charge)

    def charge(self, record: CostRecord, device: int = 0, name: str = "") -> None:
        self.timelines[device].issue(self._launch_overhead, Timeline.charge(record, name))

    def synchronize(self, device: int | None = None) -> None:
        for i, timeline in enumerate(self.timelines):
            if device is None or device == i:
                timeline.synchronize()

    def stats(self) -> dict[str, Any]:
        totals: dict[str, Any] = {}
        for timeline in self.timelines:
            for key, value in timeline.totals().items():
                if isinstance(value, dict):
                    merged = totals.setdefault(key, {})
                    for k, v in value.items():
                        if isinstance(v, dict):
                            inner = merged.setdefault(k, {})
                            for kk, vv in v.items():
                                inner[kk] = inner.get(kk, 0) + vv
                        else:
                            merged[k] = merged.get(k, 0) + v
                else:
                    totals[key] = totals.get(key, 0) + value
        totals["host_seconds"] = max(t.host_seconds for t in self.timelines)
        totals["wall_seconds"] = max(t.wall_seconds for t in self.timelines)
        totals["chip"] = self.chip.name
        return totals

    def reset_stats(self) -> None:
        for timeline in self.timelines:
            timeline.reset()
