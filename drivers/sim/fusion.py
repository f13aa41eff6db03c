"""Host speed of long element-wise chains: runs of exactly rounded element-wise steps compiled into one numba loop.

A special function lowered over primitives (drivers/ir_lowerings*.py) is hundreds of element-wise IR ops; step
by step that is one numpy call, and one pass over memory, per op. `fuse_steps` groups an executable's steps:
each group of element-wise steps of one shape whose ops all have a numba form (`_expr`; or an element-wise `while` whose
regions are) becomes one step whose kernel is a generated numba function, one loop over the elements that keeps
intermediates in registers and writes only the values read after the group (or returned by the program). A
group holding a `while` runs its elements in blocks of lanes instead (fusion_lanes.py): the loop trip by trip
over a block, so that independent elements' dependency chains overlap; each lane's operations are its
element's own.

Only ops whose value in numba is provably numpy's, bit for bit, are fused: IEEE-exact arithmetic (+ - * /
sqrt), comparisons, select, min/max (numpy's NaN and zero rule), abs/neg, floor/ceil/trunc/rint, copysign,
is_finite, converts between float32, float64 and bool, and erf/erfc (whose sim kernels are numba's own
math.erf/erfc), each in its operands' dtype: numba types float32 op float32 as float32; constants are typed
arrays, never Python floats, so nothing widens to float64; `error_model="numpy"` gives IEEE division; no
fastmath, so no reassociation or FMA contraction (the machine code of bessel_j0's loops: float32 mulss/addss,
no fma, no cvtss2sd). Other transcendentals (exp, log, sin, ...) stay numpy steps: numpy's float32 SIMD
routines are not the libm numba calls (on this machine np.exp/log/sin/cos/tanh differ from numba's in float32
over 2^18 random bit patterns). A NaN's payload may differ where two NaNs meet in one op (the operand order of
the machine code decides; numpy's own loops differ there between layouts). tests/test_sim_fusion.py checks the
fused values against the steps'. Simulated costs come from the Program (driver.py `program_cost`), never from
the steps, so fusing changes no cost.

The exception is float32 exp and logistic (1 / (1 + exp(-x)), as the kernel): exp_numpy.expf ports numpy's float32
SIMD exp operation by operation (bit-equal on all 2^32 inputs), and can fuse only where exp_numpy.AVAILABLE says
the running numpy's np.exp is that routine; elsewhere exp stays a numpy step. `FUSE_EXP` is off: the port runs
1.7-4 ns an element against np.exp's ~0.45 (AVX-512, 16 lanes), so a fused softmax or SiLU loop costs more than the
memory pass it saves (medium compiled Llama / GPT-2 steps, on / off: 0.995-1.037, benchmarks/fusion_flags.py).
int64 compares and selects fuse too (`FUSE_INT64`: exact, as RoPE's slice-gradient masks need); no other int64 op does.

Steps are grouped by dependency, not adjacency: a fusable step joins the group after the last non-fusable step
it depends on, so non-fusable steps (which may raise) keep their order and fused ones, pure and never raising,
only move earlier. A small step that is pure and never raises (a fusable op, float power, reshape: an
optimizer's bias corrections from its step counts) is no such barrier either: it runs right after the last
barrier it depends on, before the groups there; and a broadcast of one element (such a correction) is part of
a group, its value read once before the loop (tests/test_sim_fusion_scalars.py). An AdamW step's chain over
each parameter is then one loop where it was split at every correction. A group runs fused when it has at least
`MIN_OPS` ops (`MIN_OPS_EXP` when one is a fused exp/logistic, `SHORT_EXP`) over at least `MIN_ELEMENTS`
elements; below that (every ordinary eager op) the steps stay as they
are, with no compile cost. Compiled loops are cached in process by their source, and on disk (fusion_cache.py).

Vectorizing: LLVM vectorizes a loop only where it can check at run time that its arrays do not overlap, which
it gives up on past a few pairs of arrays, and a check fails where a result is written over an operand through
a second name. So a group's independent chains run as one loop each (`_chains`: an AdamW step's parameters of
one shape, each loop reading p, g, m, v once and writing p, m, v once), and a result whose buffer is an
operand's memory exactly is stored through that operand's argument (`FusedStep.source_in_place`). Both keep
every statement and its order, so every value (tests/test_sim_fused_in_place.py); on a 4.2M-parameter compiled
AdamW step they took the sim from 1.45x to 0.45x CPU eager's foreach step (ABBA in one process, SPLIT and
IN_PLACE off for the old side).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim import exp_numpy
from torchtpu.drivers.sim import fusion_lanes as lanes
from torchtpu.drivers.sim.fusion_cache import compile_source

MIN_ELEMENTS = 1 << 16  # a group over fewer elements stays step by step
MIN_OPS = 4  # a group of fewer ops (a while counts its regions' ops) stays step by step
WRITE_INTO = True  # False: results given buffers are computed apart and copied in (the old path, for measuring)
SPLIT = True  # False: a group's independent chains share one loop (the old path, for measuring)
IN_PLACE = True  # False: a result written over an operand goes through its own argument (the old path, for measuring)

FUSE_EXP = False  # True: float32 exp/logistic fused where np.exp is exp_numpy's routine (slower: see above)
SHORT_EXP = True  # False: a group holding exp/logistic needs MIN_OPS ops too (the old path, for measuring)
MIN_OPS_EXP = 2  # with SHORT_EXP, a group holding a fused exp/logistic runs fused from this many ops
FUSE_INT64 = True  # False: int64 compares and selects stay steps (the old path, for measuring)

_DTYPES = ("float32", "float64", "bool")
_CONST_DTYPES = (*_DTYPES, "int64")  # a loop's constant arrays; int64 ones only in a loop that has an int64 constant
_FLOATS = frozenset({"float32", "float64"})
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}

# op name -> (template over operand names, operand dtypes allowed): the numba expression of the numpy kernel
_UNARY = {"abs": "abs({0})", "negate": "(-{0})", "sqrt": "np.sqrt({0})", "floor": "np.floor({0})",
          "ceil": "np.ceil({0})", "trunc": "np.trunc({0})", "round_nearest_even": "np.rint({0})",
          "square": "({0} * {0})",
          # the sim's erf/erfc kernels are numba ufuncs over math.erf/math.erfc (kernels.py): the same numba
          # lowering (libm erff/erfcf, erf/erfc), so the fused call is the kernel's call
          "erf": "math.erf({0})", "erfc": "math.erfc({0})"}
_BINARY = {"add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})", "divide": "({0} / {1})",
           # numpy's rule (not numba's np.maximum, which keeps the first of two equal zeros): a NaN first
           # operand, else a NaN second one, else the second operand of two equal ones (-0.0 and 0.0)
           "maximum": "({0} if ({0} > {1} or {0} != {0}) else {1})",
           "minimum": "({0} if ({0} < {1} or {0} != {0}) else {1})",
           "copysign": "np.copysign({0}, {1})"}
# float32 exp and logistic through exp_numpy.expf (when FUSE_EXP); a loop calling it imports it, the source digest in
# the line, so an edit of exp_numpy.py is a new loop source, never a stale disk cache
_EXP = {"exponential": "exp_numpy.expf({0})", "logistic": "({1} / ({1} + exp_numpy.expf(-{0})))"}
_EXP_IMPORT = f"from torchtpu.drivers.sim import exp_numpy  # {exp_numpy.SOURCE_DIGEST}"
_BOOL = {"and": "({0} & {1})", "or": "({0} | {1})", "xor": "({0} ^ {1})"}


def _expr(op: Op, args: list[str], const: Callable[[Any, str], str]) -> str | None:
    """The numba expression of `op` over operand names `args` (`const(value, dtype)`: the name of a constant),
    or None when the op is not fused (another dtype, or no bit-exact numba form)."""
    name = op.name
    ins = [v.dtype for v in op.inputs]
    out = op.outputs[0].dtype if len(op.outputs) == 1 else None
    if FUSE_INT64 and "int64" in (out, *ins) and name in ("compare", "select"):
        # integers compare exactly, and a select copies its operand: numba's int64 `<` and `a if c else b` are
        # numpy's (RoPE's slice-gradient masks: compares of iotas, and/or, select)
        if name == "compare" and ins == ["int64", "int64"] and out == "bool":
            return f"({args[0]} {_COMPARE[op.attr('direction')]} {args[1]})"
        if name == "select" and ins == ["bool", "int64", "int64"] and out == "int64":
            return f"({args[1]} if {args[0]} else {args[2]})"
        return None
    if out not in _DTYPES or any(d not in _DTYPES for d in ins):
        return None
    if name in _UNARY and ins == [out] and out in _FLOATS:
        return _UNARY[name].format(*args)
    if name in _EXP and ins == [out] == ["float32"] and FUSE_EXP and exp_numpy.AVAILABLE:
        return _EXP[name].format(args[0], const(1, out))
    if name in ("reciprocal", "rsqrt") and ins == [out] and out in _FLOATS:  # np.float32(1) / x (/ sqrt(x))
        return f"({const(1, out)} / {args[0] if name == 'reciprocal' else f'np.sqrt({args[0]})'})"
    if name in _BINARY and ins == [out, out] and out in _FLOATS:
        return _BINARY[name].format(*args)
    if name in _BOOL and ins == [out, out] and out == "bool":
        return _BOOL[name].format(*args)
    if name == "not" and ins == [out] == ["bool"]:
        return f"(not {args[0]})"
    if name == "compare" and ins[0] == ins[1] and ins[0] in _FLOATS:
        return f"({args[0]} {_COMPARE[op.attr('direction')]} {args[1]})"
    if name == "select" and ins[1] == ins[2] == out:
        return f"({args[1]} if {args[0]} else {args[2]})"
    if name == "is_finite" and ins[0] in _FLOATS:
        return f"np.isfinite({args[0]})"
    if name == "convert":
        if out == "bool":  # the kernel's `x != 0`
            return f"({args[0]} != {const(0, ins[0])})"
        # float32 <-> float64 rounds to nearest even, bool gives 0 or 1, as numpy's astype
        return f"np.{out}({args[0]})"
    return None


def _fusable(op: Op) -> bool:
    return _expr(op, ["a"] * len(op.inputs), lambda value, dtype: "c") is not None


def _region_fusable(op: Op) -> bool:
    """A `while` whose condition and body regions are all fusable ops over fused dtypes."""
    for key in ("cond", "body"):
        program = op.attr(key).program
        if any(v.dtype not in _DTYPES for v in program.inputs):
            return False
        for rop in program.ops:
            if rop.name == "constant":
                if rop.outputs[0].dtype not in _DTYPES or isinstance(rop.attr("value"), tuple):
                    return False
            elif not _fusable(rop):
                return False
    return True


def _weight(op: Op) -> int | None:
    """How many fused ops `op` counts as (its regions' ops for a while; none for a scalar's broadcast, which the
    loop reads once), or None when it is not fusable."""
    if _scalar_broadcast(op):
        return 0
    if not op.outputs or any(v.shape != op.outputs[0].shape for v in (*op.inputs, *op.outputs)):
        return None
    if op.name == "while":
        if any(v.dtype not in _DTYPES for v in op.outputs) or not _region_fusable(op):
            return None
        return sum(len(op.attr(k).program.ops) for k in ("cond", "body"))
    return 1 if _fusable(op) else None


def _scalar_broadcast(op: Op) -> bool:
    """A broadcast of one element (a 0-d or all-ones-shaped value) in a fused dtype: the loop reads it once."""
    return op.name == "broadcast_in_dim" and len(op.inputs) == 1 and len(op.outputs) == 1 \
        and _numel(op.inputs[0].shape) == 1 and op.inputs[0].dtype == op.outputs[0].dtype \
        and (op.outputs[0].dtype in _DTYPES or (FUSE_INT64 and op.outputs[0].dtype == "int64"))


# small steps that may run anywhere after their operands (pure, never raising) besides the fusable ones: float
# power is np.power (kernels.py `_power` checks only integer exponents), reshape a view
_FLOATING = frozenset({"power", "reshape"})


def _floating(op: Op) -> bool:
    """Whether a step below MIN_ELEMENTS is no barrier to fusion (module docstring): a pure op that never raises
    (every fusable op but a while, float power, reshape). It runs where it stood, or earlier."""
    if op.name == "while" or not op.outputs:
        return False
    if op.name in _FLOATING:
        return op.name == "reshape" or all(v.dtype in _FLOATS for v in (*op.inputs, *op.outputs))
    return _weight(op) is not None


class _Source:
    """The generated function's text: constants (one typed array per dtype, read once into locals), fresh
    names, and the loop body as statements: `("let", name, expr, operand names)`, or a top-level `while`
    (`_While`), from which `lines` writes the per-element code and fusion_lanes.py the lane-parallel one."""

    def __init__(self) -> None:
        self.consts: dict[str, list[Any]] = {d: [] for d in _CONST_DTYPES}
        self.head: list[str] = []
        self.body: list[Any] = []
        self.dtypes: dict[str, str] = {}  # name -> dtype, for every name a statement defines
        self._names = itertools.count()
        self._named: dict[tuple[str, bytes], str] = {}

    def name(self, dtype: str) -> str:
        out = f"t{next(self._names)}"
        self.dtypes[out] = dtype
        return out

    def const(self, value: Any, dtype: str) -> str:
        """The local holding `value` in `dtype`, one per bit pattern (-0.0 is not 0.0)."""
        key = (dtype, np.array(value, dtype).tobytes())
        name = self._named.get(key)
        if name is None:
            values = self.consts[dtype]
            name = self._named[key] = f"k_{dtype}_{len(values)}"
            self.head.append(f"    {name} = c_{dtype}[{len(values)}]")
            values.append(value)
        return name

    def op(self, op: Op, args: list[str], into: list[Any]) -> list[str]:
        """Appends `op`'s statement to `into`; returns its results' names."""
        if op.name == "while":
            return self._while(op, args, into)
        if _scalar_broadcast(op):
            return [args[0]]  # the operand's one value, read before the loop
        expr = _expr(op, args, self.const)
        if expr is None:  # pragma: no cover - _weight admitted it
            raise AssertionError(f"fusion: {op.name} is not fusable")
        out = self.name(op.outputs[0].dtype)
        into.append(("let", out, expr, tuple(args)))
        return [out]

    def _region(self, program: Any, args: list[str], into: list[Any]) -> list[str]:
        env = {v.id: a for v, a in zip(program.inputs, args)}
        for rop in program.ops:
            if rop.name == "constant":
                env[rop.outputs[0].id] = self.const(rop.attr("value"), rop.outputs[0].dtype)
                continue
            for v, n in zip(rop.outputs, self.op(rop, [env[i.id] for i in rop.inputs], into)):
                env[v.id] = n
        return [env[v.id] for v in program.outputs]

    def _while(self, op: Op, args: list[str], into: list[Any]) -> list[str]:
        state = [self.name(v.dtype) for v in op.outputs]
        cond: list[Any] = []
        (go,) = self._region(op.attr("cond").program, state, cond)
        body: list[Any] = []
        new = self._region(op.attr("body").program, state, body)
        into.append(_While(state, list(args), cond, go, body, new, int(op.attr("limit"))))
        return state


class _While:
    """A top-level `while`: its state names, their initial values, the condition's statements and flag, the
    body's statements and the new state's names, the trip limit."""

    __slots__ = ("state", "args", "cond", "go", "body", "new", "limit")

    def __init__(self, state: list[str], args: list[str], cond: list[Any], go: str, body: list[Any],
                 new: list[str], limit: int) -> None:
        self.state, self.args, self.cond, self.go = state, args, cond, go
        self.body, self.new, self.limit = body, new, limit


def lines(stmts: Sequence[Any], indent: str) -> list[str]:
    """The per-element code of `stmts`: a while is the element's loop, as the sim kernel runs it per element:
    while cond(s) and fewer than `limit` trips, s = body(s); the result is the state when cond first fails or
    after `limit` trips."""
    out = []
    for st in stmts:
        if not isinstance(st, _While):
            out.append(f"{indent}{st[1]} = {st[2]}")
            continue
        out += [f"{indent}{s} = {a}" for s, a in zip(st.state, st.args)]
        out.append(f"{indent}for _ in range({st.limit}):")
        inner = indent + "    "
        out += lines(st.cond, inner)
        out += [f"{inner}if not {st.go}:", f"{inner}    break"]
        out += lines(st.body, inner)
        # all at once: a body may pass one state value on as another (`a, b = a + b, a`)
        out.append(f"{inner}{', '.join(st.state)}, = {', '.join(st.new)},")
    return out


def fuse_steps(steps: Sequence[Any], program_outputs: Sequence[int], folded: dict[int, np.ndarray]
               ) -> list[Any]:
    """The driver's `steps` (`op`, `inputs`, `outputs`, `index`, `kernel`, `fast`) with each group of at least
    MIN_OPS fusable ops over at least MIN_ELEMENTS elements replaced by one `FusedStep`; `folded`: the slots
    whose values are fixed at compile time (scalar ones become constants of the loop)."""
    big = [s for s in steps if s.op.outputs and s.op.outputs[0].type.numel >= MIN_ELEMENTS]
    least = min(MIN_OPS, MIN_OPS_EXP) if SHORT_EXP else MIN_OPS
    if len(big) < least and not any(s.op.name == "while" for s in big):  # every ordinary eager program
        return list(steps)
    producer: dict[int, Any] = {slot: step for step in steps for slot in step.outputs}
    barrier: dict[int, int] = {}  # id(step) -> how many non-fusable steps must run before it
    groups: dict[tuple[int, tuple[int, ...]], list[Any]] = {}  # (barrier, shape) -> fusable steps, in order
    floating: dict[int, list[Any]] = {}  # barrier -> the small pure steps that run right after it, in order
    rigid = 0
    for step in steps:
        at = max((barrier[id(producer[s])] for s in step.inputs if s in producer), default=0)
        shape = step.op.outputs[0].shape if step.op.outputs else ()
        big = _numel(shape) >= MIN_ELEMENTS
        weight = _weight(step.op) if big else None
        if weight is None:
            if not big and _floating(step.op):
                barrier[id(step)] = at
                floating.setdefault(at, []).append(step)
                continue
            rigid += 1
            barrier[id(step)] = rigid
            continue
        barrier[id(step)] = at
        groups.setdefault((at, shape), []).append(step)
    if not any(_enough(members) for members in groups.values()):
        return list(steps)
    readers: dict[int, set[int]] = {slot: {-1} for slot in program_outputs}  # slot -> ids of the steps reading it
    for step in steps:
        for slot in step.inputs:
            readers.setdefault(slot, set()).add(id(step))
    by_barrier: dict[int, list[Any]] = {}
    for (at, shape), members in groups.items():  # dicts keep insertion order: groups in order of first step
        if _enough(members):
            inside = {id(m) for m in members}
            plain: set[int] = set()  # the steps of short chains, each run once as it is
            for part in _chains(members, readers, inside) if SPLIT else [members]:
                if SPLIT and not _enough(part):
                    by_barrier.setdefault(at, []).extend(m for m in part if id(m) not in plain)
                    plain.update(id(m) for m in part)
                    continue
                read = {slot for m in part for slot in m.outputs if readers.get(slot, set()) - inside}
                by_barrier.setdefault(at, []).append(FusedStep(part, shape, read, folded))
        else:
            by_barrier.setdefault(at, []).extend(members)
    placed = {id(m) for members in groups.values() for m in members}
    placed.update(id(m) for members in floating.values() for m in members)
    out = [*floating.get(0, ()), *by_barrier.get(0, ())]
    rigid = 0
    for step in steps:  # the rigid steps in their order, each followed by the small pure steps and the groups that
        if id(step) not in placed:  # wait for it (a group may read those small steps, never the other way round)
            rigid += 1
            out.append(step)
            out.extend(floating.get(rigid, ()))
            out.extend(by_barrier.get(rigid, ()))
    return out


def _enough(members: Sequence[Any]) -> bool:
    """Whether a group (or chain) of fusable steps runs fused: MIN_OPS ops, or with SHORT_EXP MIN_OPS_EXP when
    one is a fused exp/logistic (a pass over memory saved beside a transcendental outweighs the loop's call:
    SiLU's `x * logistic(x)`, softmax's `exp(x - max)`)."""
    weight = sum(_weight(m.op) or 0 for m in members)
    if weight >= MIN_OPS:
        return True
    return SHORT_EXP and weight >= MIN_OPS_EXP and any(m.op.name in _EXP for m in members)


def _chains(members: list[Any], readers: dict[int, set[int]], inside: set[int]) -> list[list[Any]]:
    """A group's independent chains (steps joined where one reads another's result), each a group of its own, in
    order of first step: one loop per chain reads and writes only its own arrays, few enough for the compiler to
    check their overlap at run time and vectorize (an AdamW step's chain over one parameter: p, g, m, v), where one
    loop over every parameter of a shape stays scalar. A scalar's broadcast is no link: each chain reading it
    reads it itself. The whole group when a broadcast's value is read after it (it would be written more than
    once), or holds a `while` (its lanes' loop writes no operand).
    Chains under MIN_OPS ops stay together in one more group."""
    broadcasts = {slot: m for m in members if _scalar_broadcast(m.op) for slot in m.outputs}
    if any(readers.get(slot, set()) - inside for slot in broadcasts) or any(m.op.name == "while" for m in members):
        return [members]
    root: dict[int, int] = {}  # id(step) -> id(a step of its chain), for the steps that are not broadcasts

    def find(k: int) -> int:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    made: dict[int, int] = {}  # slot -> id(its producer) in the group, broadcasts aside
    for m in members:
        if _scalar_broadcast(m.op):
            continue
        root[id(m)] = id(m)
        for slot in m.inputs:
            if slot in made:
                root[find(made[slot])] = find(id(m))
        made.update((slot, id(m)) for slot in m.outputs)
    chains: dict[int, list[Any]] = {}
    for m in members:
        if not _scalar_broadcast(m.op):
            chains.setdefault(find(id(m)), []).append(m)
    long = [c for c in chains.values() if _enough(c)]
    if len(long) < 2:
        return [members]
    parts = long
    short = {id(m) for m in members if not _scalar_broadcast(m.op)} - {id(m) for c in long for m in c}
    if short:  # the short chains stay together, as they were (one loop, or the steps when still short)
        parts.append([m for m in members if id(m) in short])
    out = []
    for chain in parts:
        used = {slot for m in chain for slot in m.inputs}
        first = [b for slot, b in broadcasts.items() if slot in used]  # the broadcasts it reads, before its steps
        out.append(list(dict.fromkeys(first)) + chain)
    return out


def _scalar(value: np.ndarray | None) -> bool:
    """A compile-time value that is one number broadcast (a folded scalar constant)."""
    return value is not None and value.size >= 1 and all(st == 0 for st in value.strides)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class FusedStep:
    """A group of fusable steps as one step of the driver's plan: `kernel(op, operands)` runs the generated loop
    over the group's array operands and returns its results read after it (by later steps or as program
    outputs). A call whose operands are not what the loop was compiled for (another dtype or shape) runs the
    original steps instead."""

    __slots__ = ("kernel", "op", "inputs", "outputs", "index", "fast", "out", "steps", "source", "weight",
                 "writes_into", "numel", "result_values", "head", "loop", "in_place")

    def __init__(self, steps: list[Any], shape: tuple[int, ...], read: set[int],
                 folded: dict[int, np.ndarray]) -> None:
        self.steps, self.op, self.index, self.fast = tuple(steps), steps[0].op, steps[0].index, None
        src = _Source()
        env: dict[int, str] = {}
        arrays: list[int] = []  # the slots passed in at run time
        in_dtypes: list[str] = []
        in_shapes: list[tuple[int, ...]] = []  # `shape`, or a scalar broadcast's one-element operand's shape
        fixed: dict[int, np.ndarray] = {}  # the scalar constants, for the unfused fallback
        made = {slot for s in steps for slot in s.outputs}
        for step in steps:
            for slot, value in zip(step.inputs, step.op.inputs):
                if slot in env or slot in made:
                    continue
                if _scalar(folded.get(slot)):
                    env[slot] = src.const(folded[slot].flat[0], value.dtype)
                    fixed[slot] = folded[slot]
                else:
                    env[slot] = f"v{len(arrays)}"
                    arrays.append(slot)
                    in_dtypes.append(value.dtype)
                    in_shapes.append(tuple(value.shape))
        for step in steps:
            for slot, n in zip(step.outputs, src.op(step.op, [env[s] for s in step.inputs], src.body)):
                env[slot] = n
        results = [(slot, v.dtype) for s in steps for slot, v in zip(s.outputs, s.op.outputs) if slot in read]
        self.result_values = [v for s in steps for slot, v in zip(s.outputs, s.op.outputs) if slot in read]
        self.numel = _numel(shape)
        # a plain loop reads every operand's element i before it writes any result's element i, so it may write
        # its results into output buffers (`kernel(op, operands, into)`; direct_outputs.py decides where)
        self.writes_into = not any(isinstance(st, _While) for st in src.body)
        kinds = [d for d in _CONST_DTYPES if d in _DTYPES or src.consts[d]]  # no int64 array where unused
        params = ["n", *(f"a{j}" for j in range(len(arrays))), *(f"r{j}" for j in range(len(results))),
                  *(f"c_{d}" for d in kinds)]
        scalars = [j for j, s in enumerate(in_shapes) if s != tuple(shape)]  # read once, before the loop
        src.head.extend(f"    v{j} = a{j}[0]" for j in scalars)
        elements = [j for j in range(len(arrays)) if j not in scalars]
        if lanes.LANES > 1 and any(isinstance(st, _While) for st in src.body):  # blocks of lanes (fusion_lanes.py)
            loop = lanes.lane_lines(src.body, [(f"v{j}", f"a{j}") for j in elements],
                                    [(env[slot], f"r{j}") for j, (slot, _) in enumerate(results)], src.dtypes)
            self.in_place = None
        else:
            loop = ["    for i in range(n):", *(f"        v{j} = a{j}[i]" for j in elements),
                    *lines(src.body, "        "),
                    *(f"        r{j}[i] = {env[slot]}" for j, (slot, _) in enumerate(results))]
            self.in_place = (len(loop) - len(results), [env[slot] for slot, _ in results], elements)
        self.head = ["import math", "import numpy as np", "import numba",
                     *([_EXP_IMPORT] if any("exp_numpy." in line for line in (*src.head, *loop)) else []), "", "",
                     "@numba.njit(cache=True, error_model='numpy', nogil=True)", f"def fused({', '.join(params)}):",
                     *src.head]
        self.loop = loop
        self.source = "\n".join([*self.head, *loop, ""])
        self.weight = len(loop)
        self.inputs, self.outputs = tuple(arrays), tuple(slot for slot, _ in results)
        self.out = self.outputs[0] if self.outputs else -1
        consts = tuple(np.array(src.consts[d], dtype=np.dtype(d)) for d in kinds)
        self.kernel = _launcher(self, shape, in_shapes, [np.dtype(d) for d in in_dtypes],
                                [np.dtype(d) for _, d in results], consts, fixed)


    def source_in_place(self, into_input: tuple[int, ...]) -> str:
        """The loop's source with result j stored through operand `into_input[j]`'s own argument where that is
        not -1 (the result's buffer is that operand's memory exactly): one array seen under one name, so the
        compiler knows the element-i load precedes the element-i store and may vectorize the loop (through two
        names that alias, its runtime overlap check fails and the scalar loop runs). The statements and their
        order are the plain loop's, so the values are too (`()`: the plain source)."""
        if not into_input:
            return self.source
        if self.in_place is None:  # pragma: no cover - the launcher asks only for a plain loop
            raise AssertionError("fusion: an in-place store asked of a lane loop")
        first, names, _ = self.in_place
        stores = [f"        {f'a{k}' if k >= 0 else f'r{j}'}[i] = {name}"
                  for j, (k, name) in enumerate(zip(into_input, names))]
        return "\n".join([*self.head, *self.loop[:first], *stores, ""])


def _in_place(fused: FusedStep, flat: list[np.ndarray], outs: list[np.ndarray], direct: list[int]
              ) -> tuple[int, ...]:
    """For each result, the element-wise operand whose memory its output buffer is exactly (-1: none), or () when
    no result's is (both are one-dimensional, C-contiguous, `numel` long and of one dtype: one data address
    means one memory)."""
    if fused.in_place is None:
        return ()
    at = {flat[k].__array_interface__["data"][0]: k for k in fused.in_place[2]}
    key = [-1] * len(outs)
    for j in direct:
        k = at.get(outs[j].__array_interface__["data"][0], -1)
        if k >= 0 and flat[k].dtype == outs[j].dtype and flat[k].size == outs[j].size:
            key[j] = k
    return tuple(key) if any(k >= 0 for k in key) else ()


def _launcher(fused: FusedStep, shape: tuple[int, ...], in_shapes: list[tuple[int, ...]],
              in_dtypes: list[np.dtype], out_dtypes: list[np.dtype], consts: tuple[np.ndarray, ...],
              fixed: dict[int, np.ndarray]) -> Callable[[Op, list], list]:
    n = _numel(shape)
    steps, slots, results = fused.steps, fused.inputs, fused.outputs
    compiled: dict[tuple[int, ...], Callable[..., None]] = {}  # in-place stores (`_in_place`) -> loop

    def run(op: Op, args: list[np.ndarray], into: Sequence[np.ndarray | None] = ()) -> list[np.ndarray]:
        """The group's results; `into` (one per result, or None): buffers of the result's shape and dtype that
        receive it (straight into a C-contiguous one, which may be an operand's own memory exactly, as
        direct_outputs.py allows; computed then copied into any other) and are returned in its place."""
        flat = []
        for a, dtype, expected in zip(args, in_dtypes, in_shapes):
            if a.dtype != dtype or a.shape != expected:
                values = unfused(steps, {**fixed, **dict(zip(slots, args))}, results)
                return _into(values, into)
            flat.append(a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1))
        outs = [np.empty(n, dtype) for dtype in out_dtypes]
        direct = []
        for j, buffer in enumerate(into):
            if WRITE_INTO and buffer is not None and buffer.flags.c_contiguous and buffer.dtype == out_dtypes[j] \
                    and buffer.shape == shape:
                outs[j] = buffer.reshape(-1)
                direct.append(j)
        key = _in_place(fused, flat, outs, direct) if IN_PLACE and direct else ()
        loop = compiled.get(key)
        if loop is None:
            loop = compiled[key] = compile_source(fused.source_in_place(key))
        loop(n, *flat, *outs, *consts)
        values = [into[j] if j in direct else r.reshape(shape) for j, r in enumerate(outs)]
        return _into(values, [None if j in direct else b for j, b in enumerate(into)]) if into else values

    return run


def _into(values: list[Any], into: Sequence[np.ndarray | None]) -> list[Any]:
    """`values`, each one with a buffer in `into` copied into it and replaced by it."""
    for j, buffer in enumerate(into):
        if buffer is not None:
            np.copyto(buffer, values[j], casting="unsafe")
            values[j] = buffer
    return values


def unfused(steps: Sequence[Any], env: dict[int, Any], results: Sequence[int]) -> list[Any]:
    """`steps` one by one over `env` (slot -> value), as the driver runs them; the values of `results`."""
    for step in steps:
        operands = [env[i] for i in step.inputs]
        if step.fast is not None:
            env[step.out] = step.fast(*operands)
        else:
            env.update(zip(step.outputs, step.kernel(step.op, operands)))
    return [env[i] for i in results]
