"""SimDriver: runs Programs on host memory with `torchtpu.sim` kernels and charges simulated time.

Values and costs come from separate rules over the same Program: `kernels.KERNELS` computes values, `costs.COSTS`
prices each op from shapes alone. An executable's cost is fixed at compile time: its element-wise, movement and
reduction ops form one fused region whose intermediates stay on chip (only the program's inputs and outputs
touch HBM, as XLA fuses them), MXU ops are priced on their own, and each launch pays the host overhead.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from torchtpu.drivers import config
from torchtpu.drivers.base import Driver, Executable, ExecutionError
from torchtpu.drivers.ir import OPS, Op, Program, unsupported_error
from torchtpu.drivers.sim import direct_outputs, in_place
from torchtpu.drivers.sim import host_memory as _memory
from torchtpu.drivers.sim.costs import COSTS
from torchtpu.drivers.sim.direct_outputs import plan_direct, same_view
from torchtpu.drivers.sim.fast import elide_broadcasts, reshaped_into, specialize
from torchtpu.drivers.sim.folding import fold as _fold
from torchtpu.drivers.sim.folding import root_of as _root_of
from torchtpu.drivers.sim.fusion import fuse_steps
from torchtpu.drivers.sim.kernels import KERNELS, NP_DTYPES, Kernel
from torchtpu.drivers.sim.kernels_data import MXU_ARRAY_KERNELS  # (importing it registers the movement/MXU kernels)
from torchtpu.drivers.sim.launcher import launcher
from torchtpu.drivers.sim.output_overlap import unshared
from torchtpu.drivers.sim.rank_limit import MAX_DIMS, check_program, check_rank
from torchtpu.drivers.sim.shared_rounding import share_rounding
from torchtpu.drivers.sim.straight_line import compile_steps, failed_step
from torchtpu.drivers.sim.streams import StreamTimeline
from torchtpu.sim import mxu
from torchtpu.sim.chips import ChipSpec, get_chip
from torchtpu.sim.cost import CostModel, CostRecord
from torchtpu.sim.timeline import Timeline
from torchtpu.sim.topology import Topology

_FP8 = frozenset({NP_DTYPES["float8_e4m3fn"], NP_DTYPES["float8_e5m2"]})

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

# glibc's malloc gives the top of its heap back to the OS once more than M_TRIM_THRESHOLD (128 KiB by default)
# is free there, so a launch whose temporaries are a few MB (a region replaying a training step keeps many alive
# at once) faults every page of them in again on each launch: measured 45 us instead of 16 us per 128k-element
# multiply, and the GPT-2 (hidden 128) training step's region 60 ms instead of 37 ms (benchmarks/defer_and_fuse.py).
# Keeping up to this much free memory, and growing the heap by this much more at a time, avoids it. Setting either
# also freezes the mmap threshold (which rises to the largest block freed, up to 32 MiB) where it is (128 KiB at
# start): each larger array was a fresh mapping faulted in anew (~16,500 faults per compiled GPT-2 hidden-256
# training step, 20% of a Llama step's CPU in the kernel; CPU eager's alike), so it is set to that ceiling too.
_TRIM_THRESHOLD, _TOP_PAD = 64 << 20, 16 << 20
_MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # malloc.h


def _keep_heap() -> None:
    """Sets glibc's trim threshold, top pad and mmap threshold for this process (once; a no-op off glibc)."""
    global _keep_heap_done
    if _keep_heap_done:
        return
    _keep_heap_done = True
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    mallopt(_M_TOP_PAD, _TOP_PAD)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


_keep_heap_done = False


def chip_from_env() -> ChipSpec:
    return get_chip(config.get("TORCHTPU_CHIP"))


def topology_from_env(chip: ChipSpec | None = None) -> Topology:
    """The simulated system of TORCHTPU_TOPOLOGY / TORCHTPU_HOSTS on TORCHTPU_CHIP (sim/topology.py); unset: the
    default of TORCHTPU_NUM_DEVICES chips on one host. A bad combination raises ConfigError naming the variables."""
    spec = chip or chip_from_env()
    shape = config.get("TORCHTPU_TOPOLOGY")
    hosts = config.get("TORCHTPU_HOSTS")
    if shape is None:
        if hosts is not None:
            raise config.ConfigError(f"TORCHTPU_HOSTS={hosts} needs TORCHTPU_TOPOLOGY (the slice shape of each "
                                     "host group); valid: set TORCHTPU_TOPOLOGY too, or unset TORCHTPU_HOSTS")
        return Topology.single_host(spec, config.get("TORCHTPU_NUM_DEVICES"))
    try:
        topo = Topology.of(spec, shape, hosts)
    except ValueError as exc:
        raise config.ConfigError(str(exc)) from None
    if config.is_set("TORCHTPU_NUM_DEVICES") and config.get("TORCHTPU_NUM_DEVICES") != topo.chips_per_host:
        raise config.ConfigError(
            f"TORCHTPU_NUM_DEVICES={config.get('TORCHTPU_NUM_DEVICES')} disagrees with TORCHTPU_TOPOLOGY="
            f"{'x'.join(map(str, shape))}, whose hosts have {topo.chips_per_host} chips; valid: unset "
            f"TORCHTPU_NUM_DEVICES or set it to {topo.chips_per_host}")
    return topo


def process_host(topo: Topology, environ: Any = None) -> int:
    """This process's host in `topo`: rank r drives chip r, so RANK // chips_per_host (torchrun's RANK and
    WORLD_SIZE); 0 outside a distributed launch. A WORLD_SIZE beyond the system's chips, or a LOCAL_RANK that is
    not RANK's place on its host (torchrun's --nproc-per-node other than the chips per host), raises ConfigError."""
    env = os.environ if environ is None else environ
    if not topo.explicit:
        return 0
    world, rank = env.get("WORLD_SIZE"), env.get("RANK")
    if world is not None and world.strip().isdigit() and int(world) > topo.chips:
        raise config.ConfigError(
            f"WORLD_SIZE={world} ranks, but TORCHTPU_TOPOLOGY={'x'.join(map(str, topo.shape))} "
            f"({topo.describe()}, {topo.hosts} host{'s' if topo.hosts > 1 else ''}) has {topo.chips} chips (one "
            f"rank per chip); valid: at most {topo.chips} ranks, or a larger TORCHTPU_TOPOLOGY / TORCHTPU_HOSTS")
    if rank is None or not rank.strip().isdigit():
        return 0
    local = env.get("LOCAL_RANK")
    if local is not None and local.strip().isdigit() and int(local) != int(rank) % topo.chips_per_host:
        per_node = env.get("LOCAL_WORLD_SIZE", "?")
        raise config.ConfigError(
            f"RANK={rank} is LOCAL_RANK={local} of its node ({per_node} processes per node), but rank r drives chip "
            f"r and TORCHTPU_TOPOLOGY={'x'.join(map(str, topo.shape))} hosts have {topo.chips_per_host} chips, so "
            f"rank {rank} would be local rank {int(rank) % topo.chips_per_host} of host "
            f"{int(rank) // topo.chips_per_host}; valid: one process per chip of each host, torchrun "
            f"--nproc-per-node {topo.chips_per_host}")
    return int(rank) // topo.chips_per_host


class _Step:
    """One IR op of an executable: its kernel and where its operands and results sit in the run's value list."""

    __slots__ = ("kernel", "op", "inputs", "outputs", "index", "fast", "out")

    def __init__(self, kernel: Kernel, op: Op, inputs: tuple[int, ...], outputs: tuple[int, ...], index: int,
                 mxu_array: int) -> None:
        self.kernel, self.op, self.inputs, self.outputs, self.index = kernel, op, inputs, outputs, index
        self.fast = specialize(op, mxu_array)  # a direct numpy call with the generic kernel's value, or None (fast.py)
        self.out = outputs[0] if outputs else -1


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


def _fold_final_reshape(steps: list[_Step], outputs: tuple[int, ...]) -> list[_Step]:
    """`steps` with a final reshape of a `writes_out` step's result (read by nothing else) merged into that step,
    so that it can write the program's one output itself (fast.py `reshaped_into`)."""
    if len(steps) < 2 or len(outputs) != 1:
        return steps
    producer, reshape = steps[-2], steps[-1]
    kernel = getattr(producer, "fast", None)
    if type(producer) is not _Step or type(reshape) is not _Step or not getattr(kernel, "writes_out", False) \
            or not hasattr(kernel, "result_shape") \
            or reshape.op.name != "reshape" or reshape.out != outputs[0] or reshape.inputs != (producer.out,) \
            or len(producer.outputs) != 1 or any(producer.out in s.inputs for s in steps[:-1]):
        return steps
    merged = _Step.__new__(_Step)
    merged.kernel, merged.op, merged.inputs = producer.kernel, producer.op, producer.inputs
    merged.index = producer.index  # an error names the product
    merged.outputs, merged.out = reshape.outputs, reshape.out
    merged.fast = reshaped_into(producer.fast, tuple(reshape.op.attr("shape")))
    return [*steps[:-2], merged]


class _Plan:
    """An executable's payload: the steps over a flat value list (program inputs first), the output slots and the
    launch cost, all fixed at compile time so that a launch does no lookups."""

    __slots__ = ("steps", "padding", "outputs", "cost", "charge", "name", "last", "last_dtype", "run", "direct",
                 "run_direct")

    def __init__(self, steps: list[_Step], padding: tuple, outputs: tuple[int, ...], cost: CostRecord,
                 name: str, n_inputs: int) -> None:
        self.outputs, self.cost, self.name = outputs, cost, name
        self.charge = Timeline.charge(cost, name)  # what each launch adds to the timeline
        self.padding = padding  # the value list after the inputs: one slot per op result, constants filled in
        # A one-output program ending in a ufunc step writes that step's result straight into the output buffer
        # (`out=`: numpy buffers any overlap with the operands) instead of into a new array copied afterwards; so
        # does a small eager `mm` (fast.py's `writes_out` kernels: they read their operands before writing).
        self.last: _Step | None = None
        self.last_dtype: np.dtype | None = None
        steps = _fold_final_reshape(steps, outputs)
        if steps and len(outputs) == 1 and steps[-1].out == outputs[0] and (
                isinstance(steps[-1].fast, np.ufunc) or getattr(steps[-1].fast, "writes_out", False)):
            self.last, steps = steps[-1], steps[:-1]
            self.last_dtype = np.dtype(NP_DTYPES[self.last.op.outputs[0].dtype])
        self.steps = tuple(steps)
        # the steps as straight-line code (straight_line.py), returning the operands of the last step
        last_inputs = self.last.inputs if self.last is not None else ()
        needed = [i for i in outputs if self.last is None or i != self.last.out]
        self.run = compile_steps(self.steps, needed, name, last_inputs)
        # results written into the output buffers by the steps that compute them, where allowed (direct_outputs.py)
        self.direct = plan_direct(self.steps, outputs, n_inputs, self.last)
        self.run_direct = None if self.direct is None else compile_steps(
            self.steps, [slot for slot, _ in self.direct.copies], name, last_inputs, self.direct.direct)


# Ops whose inputs are all constants are run once at compile time (constant, iota, broadcasts and arithmetic of
# them: the kernels are pure functions of their inputs). The plan keeps only the folded values that its steps
# read or that it outputs: each output one of at most FOLD_MAX_BYTES, those its steps read at most FOLD_KEEP_BYTES
# together; intermediates of up to FOLD_TRANSIENT_BYTES are dropped after the build (a causal attention mask:
# iota, int64 differences, compares and selects over (tokens, tokens), one float mask kept). A plan that would
# keep more is built again folding only values of at most FOLD_MAX_BYTES, as before.
FOLD_MAX_BYTES = 1 << 16
FOLD_KEEP_BYTES = 1 << 20
FOLD_TRANSIENT_BYTES = 1 << 24
_NEVER_FOLD = frozenset({"rng"})


def program_cost(model: CostModel, program: Program) -> CostRecord:
    """The simulated cost of one launch of `program` on `model`'s chip (fused VPU region + MXU ops)."""
    vpu_records, mxu_records = [], []
    for op in program.ops:
        if op.name == "constant" or op.name == "iota":
            continue
        record = COSTS[op.name](model, op)
        (mxu_records if OPS[op.name].kind == "matmul" else vpu_records).append(record)
    external = in_place.external_bytes(program)  # an in-place scatter: the elements it writes
    records = list(mxu_records)
    if vpu_records:
        mxu_bytes = sum(r.hbm_bytes for r in mxu_records)
        records.append(model.fuse(vpu_records, max(external - mxu_bytes, 0)))
    if not records:
        return model.data_movement("copy", external // 2, external - external // 2)
    return records[0] if len(records) == 1 else model.fuse(records, external)


_mxu_mode = config.reader("TORCHTPU_MXU_MODE")


def build_steps(program: Program, array: int) -> tuple[list[Any], tuple[Any, ...], tuple[int, ...]]:
    """A program's plan (a whole program's, or a `while_array` region's: regions.py): its steps over value slots
    (constants folded once, long element-wise chains fused, broadcasts elided), the folded values of the slots
    after its inputs that it reads (None for the others), and its output slots. `array` is the MXU width the
    dot_general steps tile for."""
    built = _build_steps(program, array, FOLD_TRANSIENT_BYTES)
    return built if built is not None else _build_steps(program, array, FOLD_MAX_BYTES)


def _build_steps(program: Program, array: int, limit: int) -> tuple[list[Any], tuple[Any, ...],
                                                                    tuple[int, ...]] | None:
    """`build_steps` folding constant values of up to `limit` bytes; None when the folded values it would keep
    are over FOLD_MAX_BYTES (an output) or FOLD_KEEP_BYTES (read by its steps, together)."""
    slot = {v.id: i for i, v in enumerate(program.inputs)}  # value id -> index in the run's value list
    count = len(program.inputs)
    steps = []
    folded: dict[int, np.ndarray] = {}  # slot -> value computed here, once, from constants alone
    for index, op in enumerate(program.ops):
        kern = KERNELS.get(op.name)
        if kern is None:
            raise unsupported_error("sim", op.name)
        if op.name in MXU_ARRAY_KERNELS:
            kern = functools.partial(kern, array=array)
        ins = tuple(slot[v.id] for v in op.inputs)
        for v in op.outputs:
            slot[v.id] = count
            count += 1
        outs = tuple(slot[v.id] for v in op.outputs)
        if all(i in folded for i in ins) and op.name not in _NEVER_FOLD:
            values = _fold(kern, op, [folded[i] for i in ins], limit)
            if values is not None:
                folded.update(zip(outs, values))
                continue
        steps.append(_Step(kern, op, ins, outs, index, array))
    outputs = tuple(slot[v.id] for v in program.outputs)
    steps = fuse_steps(steps, outputs, folded)  # long element-wise chains as one numba loop (fusion.py)
    elide_broadcasts(steps, outputs)
    share_rounding(steps)
    read = {i for s in steps for i in s.inputs if i in folded}
    if limit > FOLD_MAX_BYTES:
        if any(_root_of(folded[i]).nbytes > FOLD_MAX_BYTES for i in outputs if i in folded):
            return None
        roots = {id(r): r.nbytes for r in (_root_of(folded[i]) for i in read)}
        if sum(roots.values()) > FOLD_KEEP_BYTES:
            return None
    kept = read.union(i for i in outputs if i in folded)
    padding = tuple(folded[i] if i in kept else None for i in range(len(program.inputs), count))
    return steps, padding, outputs

class SimChip:
    """One simulated device: its chip spec (MXU width, VMEM, HBM size), cost model, HBM limit, and its own
    timeline (simulated clock and stats). A SimDriver holds one per device; devices may be different chips."""

    __slots__ = ("spec", "cost_model", "timeline", "launch_overhead", "hbm_limit")

    def __init__(self, spec: ChipSpec | str) -> None:
        self.spec = get_chip(spec)
        self.launch_overhead = float(self.spec.launch_overhead_s)  # host time each launch adds
        if self.launch_overhead < 0:
            raise ValueError(f"{self.spec.name}: launch_overhead_s must be >= 0, got {self.launch_overhead}")
        self.cost_model = CostModel(self.spec)
        self.timeline = StreamTimeline(self.spec)  # one queue until streams are used (drivers/sim/streams.py)
        self.hbm_limit = int(self.spec.hbm_bytes)


_MAX_STORAGE_VIEWS = 4096


class SimDriver(Driver):
    """Simulated chips on host memory. `chips` (one spec or name per device) makes devices of different
    generations; `topology` (default TORCHTPU_TOPOLOGY) makes this process's host of a simulated slice, its
    devices the host's chips; otherwise `devices` (TORCHTPU_NUM_DEVICES) devices of `chip` (TORCHTPU_CHIP)."""

    name, max_rank = "sim", MAX_DIMS
    strided_operands = True
    wants_frees = False  # storage views are keyed by address, size and dtype: a reused address maps the same memory
    host_memory = (_memory.SPACE, _memory.BASE)  # buffers are host memory: a view of it by address

    def __init__(self, chip: ChipSpec | str | None = None, devices: int | None = None,
                 chips: Sequence[ChipSpec | str] | None = None, cache_size: int | None = None,
                 topology: Topology | None = None, host: int | None = None) -> None:
        super().__init__(cache_size)
        if chips is not None:
            if chip is not None or devices is not None or topology is not None:
                raise ValueError("SimDriver: give chips= (one per device), topology= or chip=/devices=; not both")
            if not chips:
                raise ValueError("SimDriver: chips= must name at least one chip")
            specs = [get_chip(c) for c in chips]
            topology = Topology.single_host(specs[0], len(specs))
        else:
            if topology is None:
                if chip is None and devices is None:
                    topology = topology_from_env()
                else:
                    spec = get_chip(chip) if chip is not None else chip_from_env()
                    topology = Topology.single_host(spec, devices or config.get("TORCHTPU_NUM_DEVICES"))
            elif chip is not None or devices is not None:
                raise ValueError("SimDriver: give topology= or chip=/devices=, not both")
        self.topology = topology
        self.host = process_host(topology) if host is None else int(host)
        self.chip_ids = tuple(topology.host_chips(self.host))  # device i is global chip chip_ids[i]
        if chips is None:
            specs = [topology.chip] * len(self.chip_ids)
        self.chips = [SimChip(spec) for spec in specs]
        self._targets = tuple(c.spec for c in self.chips)
        self._storage_views: dict[int, tuple[int, str, np.ndarray]] = {}
        mxu.set_mode_source(_mxu_mode)
        _keep_heap()

    @property
    def chip(self) -> ChipSpec:
        """Device 0's chip spec."""
        return self.chips[0].spec

    @property
    def cost_model(self) -> CostModel:
        """Device 0's cost model."""
        return self.chips[0].cost_model

    @property
    def timelines(self) -> list[Timeline]:
        return [c.timeline for c in self.chips]

    def device_count(self) -> int:
        return len(self.chips)

    def device_name(self, index: int) -> str:
        """The chip's display name, "TPU v5e" style (JAX's device_kind spelling of the generation)."""
        return self.chips[index].spec.display_name

    def device_properties(self, index: int) -> dict[str, Any]:
        c = self.chips[index].spec
        topo = self.topology
        gid = self.chip_ids[index]
        return {"name": self.device_name(index), "total_memory": self.chips[index].hbm_limit, "chip": c.name,
                "bf16_flops": c.bf16_flops, "hbm_bandwidth": c.hbm_bw, "tensorcores": c.tensorcores,
                "mxus_per_core": c.mxus_per_core, "mxu_shape": (c.mxu_rows, c.mxu_cols),
                "vmem_bytes_per_core": c.vmem_bytes_per_core, "driver": self.name, "simulated": True,
                "id": gid, "coords": topo.coords(gid), "core_on_chip": 0, "slice_index": topo.slice_of(gid),
                "process_index": topo.host_of(gid), "topology": "x".join(map(str, topo.shape)),
                "num_slices": topo.slices, "num_hosts": topo.hosts}

    def memory_limit(self, index: int) -> int:
        return self.chips[index].hbm_limit

    def target(self, device: int) -> ChipSpec:
        return self._targets[device]

    # -- buffers: the storage's host memory itself --
    def storage_buffer(self, key: int, nbytes: int, dtype: str, device: int) -> np.ndarray:
        """A zero-copy flat numpy view of the storage's host memory at address `key` (cached per address)."""
        seen = self._storage_views.get(key)
        if seen is not None and seen[0] == nbytes and seen[1] == dtype:
            return seen[2]
        np_dtype = np.dtype(NP_DTYPES[dtype])
        if nbytes == 0 or key == 0:
            return np.empty(0, np_dtype)
        view = _memory.flat(key, nbytes - nbytes % np_dtype.itemsize).view(np_dtype)
        if len(self._storage_views) >= _MAX_STORAGE_VIEWS:
            self._storage_views.clear()
        self._storage_views[key] = (nbytes, dtype, view)
        return view

    def read_storage(self, key: int, nbytes: int, dtype: str, device: int, writable: bool = True, *,
                     discard: bool = False) -> np.ndarray:
        return self.storage_buffer(key, nbytes, dtype, device)

    def write_storage(self, key: int, array: np.ndarray, device: int) -> None:
        flat = np.ascontiguousarray(array).reshape(-1)
        if flat.nbytes == 0 or flat.ctypes.data == key:  # nothing, or the storage's own memory (read_storage's)
            return
        np.copyto(np.frombuffer((ctypes.c_char * flat.nbytes).from_address(key), np.uint8), flat.view(np.uint8))

    def free_storage(self, key: int) -> None:
        self._storage_views.pop(key, None)

    def view(self, buffer: np.ndarray, shape: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
        check_rank(len(shape))  # numpy's as_strided would raise its own ValueError
        item = buffer.itemsize
        if buffer.dtype in _FP8:  # numpy's as_strided cannot spell ml_dtypes' fp8 types ('<f1'): stride the bytes
            view = np.lib.stride_tricks.as_strided(buffer[offset:].view(np.uint8), tuple(shape), tuple(strides))
            return view.view(buffer.dtype)
        return np.lib.stride_tricks.as_strided(buffer[offset:], tuple(shape), tuple(s * item for s in strides))

    def _compile(self, program: Program, device: int) -> Executable:
        check_program(program)
        chip = self.chips[device]
        array = chip.spec.mxu_array  # the tiling travels in the executable's steps, never in a module global
        steps, padding, outputs = build_steps(program, array)
        cost = dataclasses.replace(program_cost(chip.cost_model, program), op=program.name)
        plan = _Plan(steps, padding, outputs, cost, program.name, len(program.inputs))
        plan.charge = Timeline.charge(cost, program.name, program)  # records keep the Program (profilers)
        return Executable(program, payload=plan, meta={"cost": cost, "chip": chip.spec.name, "mxu_array": array})

    def program_cost(self, program: Program) -> CostRecord:
        """The simulated cost of one launch of `program` on device 0's chip (fused VPU region + MXU ops)."""
        return program_cost(self.cost_model, program)

    def execute(self, exe: Executable, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                device: int = 0) -> None:
        target = self._targets[device]
        if exe.target is not target and exe.target != target:
            raise ValueError(f"executable {exe.program.name!r} was compiled for {getattr(exe.target, 'name', None)}"
                             f"; device {device} is a {target.name}: compile it for that device")
        plan: _Plan = exe.payload
        env: list[Any] = [*inputs, *plan.padding]
        if plan.direct is not None and direct_outputs.ENABLED and plan.direct.allowed(inputs, outputs):
            self._execute_direct(plan, env, outputs, device)
            return
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
        results = unshared([env[i] for i in plan.outputs], outputs)
        for result, out in zip(results, outputs):
            if result.dtype != out.dtype:
                result = result.astype(out.dtype)
            np.copyto(out, result, casting="unsafe")
        self._charge_launch(plan, device)

    def launcher(self, exe: Executable) -> Any:
        """A callable like `execute` for repeated launches of `exe` (launcher.py: direct for one-kernel plans)."""
        if type(self).execute is not SimDriver.execute:  # a subclass's execute is what it launches with
            return self.execute
        return launcher(self, exe, _IGNORE_ERRORS)

    def _execute_direct(self, plan: _Plan, env: list[Any], outputs: Sequence[np.ndarray], device: int) -> None:
        """`execute` with the direct writes (direct_outputs.py): the steps write those outputs themselves, the
        rest are copied. A step that raises is named from the traceback, not by running the steps again: the
        direct writes before it may have updated inputs in place (only where no later step may raise)."""
        token = _IGNORE_ERRORS.enter()
        try:
            try:
                plan.run_direct(env, outputs)  # (no `last` step: a plan with one has one output, written by it)
            except Exception as exc:  # noqa: BLE001 - named by its step
                n = failed_step(plan.run_direct, exc)
                if n is None:
                    raise
                step = plan.steps[n]
                raise ExecutionError(step.index, step.op.name, exc) from exc
        finally:
            _IGNORE_ERRORS.exit(token)
        copies = [(slot, k) for slot, k in plan.direct.copies if not same_view(env[slot], outputs[k])]
        # only these copies write now (the steps wrote the other outputs already): a result that shares memory
        # with an output the steps wrote, as a saved activation and its reshape returned as two outputs, needs no
        # defensive copy (GPT-2 hidden 256's training forward copied 4.5 MB per step for none)
        results = unshared([env[slot] for slot, _ in copies], [outputs[k] for _, k in copies])
        for result, (_, k) in zip(results, copies):
            out = outputs[k]
            if result.dtype != out.dtype:
                result = result.astype(out.dtype)
            np.copyto(out, result, casting="unsafe")
        self._charge_launch(plan, device)

    def _charge_launch(self, plan: _Plan, device: int) -> None:
        chip = self.chips[device]
        chip.timeline.issue(chip.launch_overhead, plan.charge)

    def charge(self, record: CostRecord, device: int = 0, name: str = "") -> None:
        chip = self.chips[device]
        chip.timeline.issue(chip.launch_overhead, Timeline.charge(record, name))

    def synchronize(self, device: int | None = None) -> None:
        if device is None:
            for chip in self.chips:
                chip.timeline.synchronize()
        elif 0 <= device < len(self.chips):  # (an index past the devices synchronized nothing, as before)
            self.chips[device].timeline.synchronize()

    def stats(self, device: int | None = None) -> dict[str, Any]:
        """Totals over every device's timeline (`device`: that device's alone)."""
        chips = self.chips if device is None else [self.chips[device]]
        timelines = [c.timeline for c in chips]
        totals: dict[str, Any] = {}
        for timeline in timelines:
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
        totals["host_seconds"] = max(t.host_seconds for t in timelines)
        totals["wall_seconds"] = max(t.wall_seconds for t in timelines)
        totals["chip"] = ",".join(dict.fromkeys(c.spec.name for c in chips))
        return totals

    def reset_stats(self) -> None:
        for chip in self.chips:
            chip.timeline.reset()
