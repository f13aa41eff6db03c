"""Program results computed straight into the launch's output buffers, where no later read can see the write.

Without this, every step's result is a new array and a launch ends by copying each program output into the
buffer the caller passed (`np.copyto`): for a compiled AdamW step that is every parameter and both moments,
about 11 ms of a GPT-2 (hidden 128) training step, and for a backward graph every gradient. A ufunc step whose
result is a program output can instead take the output buffer as `out=`; the value is the same bit for bit (the
same ufunc loop in the same dtype, elementwise, so the buffer's layout does not matter, and numpy buffers any
overlap between an operand and `out`). A product (fast.py's `dot`, `writes_out`) takes `out=` the same way: BLAS
writes a C-contiguous float32 buffer of its result's shape itself, the same call and so the same bits as into a
new array (its operands are rounded into scratch first, so an overlap cannot change what it reads); any other
buffer, or the exact order, gets the computed result copied in.

The write happens at that step instead of after the last one, so it is only allowed where no one can tell:

* at compile time (`plan_direct`): the step is a ufunc whose result is a program output, and for it the set of
  program inputs whose memory may still be read afterwards: by later steps, by the copies of the other outputs,
  through views (a step that is not a ufunc may return a view of its operands, so its result is taken to alias
  all of them); and whether a later step may raise (an index check,
  an integer division), which must leave the caller's buffers as they were;
* at launch (`DirectPlan.allowed`): the buffers' byte ranges: every candidate's buffer has the program output's
  shape and dtype, overlaps no other output buffer, and overlaps no input in its set (an input updated in place,
  such as a parameter, is fine once it is no longer read); a buffer that overlaps any input (written in place)
  is written early only when no later step may raise; a buffer (or its view) that a later step reads with bits
  that may depend on the layout (a sum: `_layout_read`) must be C-contiguous, as the new array it read before
  (without this check a transposed output buffer changed a later sum's bits). If any check fails the launch takes
  the ordinary path (all results computed, then copied). The decision is cached per combination of buffer
  objects (the runtime caches a tensor's buffer view by address and geometry, so steady-state launches hit).
* a result that is several program outputs is written into the first and copied from there into the others; one
  that other steps read too reaches its output through a view chain as well (`SHARED`, `IntoView.shared`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np
from torchtpu.drivers.sim.kernels import NP_DTYPES

# Steps that never raise at run time (beyond running out of memory): ufuncs of the fast path, fused chains
# (fusion.py: IEEE arithmetic only), and these ops of the generic kernels.
_PURE = frozenset({"reshape", "transpose", "broadcast_in_dim", "convert", "reduce", "dot_general", "select",
                   "concatenate", "slice", "pad", "iota", "constant", "compare", "add", "subtract", "multiply",
                   "divide", "power", "reciprocal", "maximum", "minimum", "negate", "abs", "exponential", "log",
                   "sqrt", "rsqrt", "tanh", "logistic", "square", "sign", "sine", "cosine", "log_plus_one",
                   "exponential_minus_one", "floor", "ceil"})
_FLOAT = frozenset({"float32", "float64", "bfloat16", "float16", "bool"})
_CACHE_MAX = 16  # decisions kept per plan (steady state needs one or two)
# Smaller outputs are copied: the launch's aliasing check (a few microseconds per buffer when its decision is not
# cached, as for an eager op's new outputs) would cost more than copying them (measured: a 64 KiB np.copyto ~5 us).
MIN_ELEMENTS = 4096  # per output written directly
MIN_TOTAL = 1 << 14  # over the plan's direct writes
_CHAIN_MAX = 4  # reshapes and transposes between a step and the output it writes through a view (IntoView)
ENABLED = True  # False: every launch takes the copy path (benchmarks/compile.py measures both in one run)
# Read at plan time (compile): a result with other readers too is written through a chain of views (`IntoView`),
# and a result that is several program outputs is written into the first and copied from there into the rest
# (False: both copied after the steps, as before; session 28 measured the two in one process)
SHARED = True


def _writes_into(step: Any) -> bool:
    """Whether the step's kernel takes the buffer to write as `out=`, any layout, and reads its operands before
    writing (overlap allowed): a ufunc, or a product (fast.py's `writes_out` kernels: `dot` from BLAS itself into
    a C-contiguous buffer of its result's shape, or computed and copied in)."""
    return isinstance(step.fast, np.ufunc) or getattr(step.fast, "writes_out", False) is True


def _pure(step: Any) -> bool:
    if isinstance(step.fast, np.ufunc) or hasattr(step, "source"):  # a FusedStep carries its loop's source
        return True
    op = step.op
    return op.name in _PURE and all(v.dtype in _FLOAT for v in op.outputs)


# The kernels of these ops (generic, or fast.py's: ufuncs, np.float32(1) / x, a 0-d result through np.asarray,
# the MXU product) compute a float result anew, never returning an operand or a view of one.
_COMPUTED = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "exponential",
                       "log", "sqrt", "rsqrt", "reciprocal", "negate", "tanh", "logistic", "dot_general"})


def _fresh(step: Any) -> bool:
    """Whether the step's results are always new arrays (else they may view its operands)."""
    if isinstance(step.fast, np.ufunc) or step.fast is np.where:
        return True
    members = getattr(step, "steps", None)  # a FusedStep: new arrays, or its members' results when unfused
    if members is not None and hasattr(step, "source"):
        return all(_fresh(m) for m in members)
    op = step.op
    return op.name in _COMPUTED and all(v.dtype in _FLOAT and v.dtype != "bool" for v in op.outputs)


_BOUNDS: dict[int, tuple[np.ndarray, int, int]] = {}  # id -> (the array, kept alive so the id stays its, lo, hi)
_BOUNDS_MAX = 8192


def _bounds(a: np.ndarray) -> tuple[int, int]:
    """The byte range [lo, hi) that `a`'s elements occupy (an empty array occupies none); cached per array object
    (an array's memory never moves; the runtime keeps one view object per tensor address and geometry)."""
    hit = _BOUNDS.get(id(a))
    if hit is not None and hit[0] is a:
        return hit[1], hit[2]
    lo, hi = _measure(a)
    if len(_BOUNDS) >= _BOUNDS_MAX:
        _BOUNDS.clear()
    _BOUNDS[id(a)] = (a, lo, hi)
    return lo, hi


def _measure(a: np.ndarray) -> tuple[int, int]:
    lo = hi = a.__array_interface__["data"][0]
    if a.size == 0:
        return lo, lo
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


class IntoView:
    """A writing step's `DirectPlan.direct` entry when its result reaches the program output only through a chain
    of reshapes and transposes, each the one reader of the last (a saved activation of a training forward:
    (2, 256, 1024) computed, (512, 1024) returned; a backward's weight gradient, transpose(transpose(dot))): the
    step writes into the output buffer viewed at its own shape (`path`: the chain undone from the output, each a
    ("reshape", shape) or ("transpose", permutation) of `outs[index]`; a view: the launch requires that one
    exists, as for a C-contiguous buffer or the transposed layout a compiled graph gives an attention output,
    (8, 64, 256) at strides (65536, 4, 256) viewed at (2, 4, 64, 256)), and the chain, reading it, gives the
    output's value (`slot`)."""

    __slots__ = ("index", "path", "slot", "shared", "layout")

    def __init__(self, index: int, path: tuple[tuple[str, tuple[int, ...]], ...], slot: int,
                 shared: bool = False, layout: bool = False) -> None:
        self.index, self.path, self.slot = index, path, slot
        self.shared = shared  # other steps read the step's result or a view in the chain too (`SHARED`)
        # and one of them may give other bits for another layout (`_layout_read`): the launch requires the view to
        # be C-contiguous, the new array's layout, and the plan takes the chain only where both layouts that
        # `_likely_viewed` expects give one
        self.layout = layout

    def source(self, buffer: str) -> str:
        """Python source of the view of `buffer` (an expression) that the step writes (straight_line.py)."""
        return buffer + "".join(f".{name}({arg!r})" for name, arg in self.path)

    def view(self, out: np.ndarray) -> np.ndarray | None:
        """`out` viewed at the step's shape, None where a reshape of the chain has no view."""
        for name, arg in self.path:
            if name == "transpose":
                out = out.transpose(arg)
                continue
            try:
                out = np.reshape(out, arg, copy=False)
            except ValueError:
                return None
        return out


class DirectPlan:
    """The direct writes of one plan: `direct` maps a step's position to the output index it writes;
    `copies`: (slot, output index) of the outputs still copied after the steps."""

    __slots__ = ("direct", "copies", "_checks", "_cache", "_exact", "_views", "_contiguous")

    def __init__(self, direct: dict[int, Any], copies: list[tuple[int, int]],
                 checks: dict[int, tuple[frozenset[int], bool, tuple[int, ...], np.dtype]],
                 exact: dict[int, frozenset[int]] | None = None, views: dict[int, IntoView] | None = None,
                 contiguous: frozenset[int] = frozenset()) -> None:
        self.direct, self.copies = direct, copies
        # output indices whose buffer (or its IntoView) must be C-contiguous: other steps, or the copies into the
        # slot's other outputs, read it where they read a new array before
        self._contiguous = contiguous
        self._views = views or {}  # output index -> its IntoView (written through a view)
        self._checks = checks  # output index -> (inputs read after its write, a later step may raise, shape, dtype)
        # output index -> the inputs its fused step (fusion.py) reads element by element as it writes: such an
        # input may share the output's memory only exactly (same bytes, both C-contiguous: element i read before
        # element i is written), never shifted
        self._exact = exact or {}
        self._cache: dict[tuple[int, ...], tuple[list, bool]] = {}

    def allowed(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> bool:
        """Whether this launch's buffers allow every direct write (see the module docstring).

        Cached by the buffers' identities (the entry keeps them alive, so an id stays its array's), except that
        a host scalar (a 0-d array owning its memory, new each launch) counts by position alone: it can only
        overlap an output viewing it, and a decision is not cached when an output views such an array."""
        key = (*[id(a) if a.ndim or a.base is not None else 0 for a in inputs], -1, *map(id, outputs))
        hit = self._cache.get(key)
        if hit is not None:
            return hit[1]
        ok = self._decide(inputs, outputs)
        if any(_host_scalar(_root(o)) for o in outputs):
            return ok
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = ([*inputs, *outputs], ok)
        return ok

    def _decide(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> bool:
        checks = self._checks
        for k, (_, _, shape, dtype) in checks.items():
            if outputs[k].shape != shape or outputs[k].dtype != dtype:
                return False
        contiguous = self._contiguous
        for k, into in self._views.items():
            view = into.view(outputs[k])
            if view is None or (k in contiguous and not view.flags.c_contiguous):
                return False
        for k in contiguous:
            if k not in self._views and not outputs[k].flags.c_contiguous:
                return False
        out_bounds = sorted((*_bounds(o), k) for k, o in enumerate(outputs) if o.size)
        for (_, hi, _), (lo, _, _) in zip(out_bounds, out_bounds[1:]):
            if lo < hi:  # output buffers overlap each other: their order of writing would matter
                return False
        los = [lo for lo, _, _ in out_bounds]
        for i, a in enumerate(inputs):
            if not a.size:
                continue
            lo, hi = _bounds(a)
            j = max(bisect.bisect_right(los, lo) - 1, 0)
            while j < len(out_bounds) and out_bounds[j][0] < hi:
                olo, ohi, k = out_bounds[j]
                check = checks.get(k)
                if ohi > lo and check is not None and (check[1] or i in check[0]):
                    return False
                if ohi > lo and i in self._exact.get(k, ()) and not _same_elements(a, outputs[k]):
                    return False
                j += 1
        return True


def same_view(a: Any, o: np.ndarray) -> bool:
    """Whether array `a` is `o`'s elements at `o`'s geometry (same address, shape, strides and dtype): copying
    `a` into `o` would change nothing. `SimDriver._execute_direct` skips such a copy (a compiled forward's weight
    transpose, returned as a view of the weight: compile/launch_layout.py): `allowed` checked that no other
    output overlaps `o`, so no write of the launch changed those elements."""
    return isinstance(a, np.ndarray) and a.shape == o.shape and a.strides == o.strides and a.dtype == o.dtype \
        and a.__array_interface__["data"][0] == o.__array_interface__["data"][0]


def _same_elements(a: np.ndarray, o: np.ndarray) -> bool:
    """Whether `a` and `o` are the same elements in the same order: flat index i at the same address in both."""
    return a.flags.c_contiguous and o.flags.c_contiguous and a.size == o.size and a.itemsize == o.itemsize \
        and _bounds(a) == _bounds(o)


def _host_scalar(root: np.ndarray) -> bool:
    """Whether `root` (an array's root, `_root`) is a host scalar's own memory (new each launch). A 0-d view of
    a storage (the runtime's `as_strided` view of a 0-d tensor, such as a compiled AdamW step's step count
    output) owns none, and is cached by identity like any buffer."""
    return root.ndim == 0 and root.flags.owndata


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def plan_direct(steps: Sequence[Any], outputs: Sequence[int], n_inputs: int,
                last: Any = None) -> DirectPlan | None:
    """The direct writes for `steps` (the driver's steps over value slots, program inputs first) producing the
    program output slots `outputs`; `last`: a final step the driver runs itself after them (it reads after every
    step). None when no step qualifies."""
    count: dict[int, int] = {}
    position: dict[int, int] = {}  # slot -> its first output index
    for k, slot in enumerate(outputs):
        count[slot] = count.get(slot, 0) + 1
        position.setdefault(slot, k)
    most = 1 << 30 if SHARED else 1  # outputs a writing step's result may be (the first written, others copied)
    direct: dict[int, Any] = {
        n: position[s.out] for n, s in enumerate(steps)
        if _writes_into(s) and len(s.outputs) == 1 and 1 <= count.get(s.out, 0) <= most
        and s.op.outputs[0].type.numel >= MIN_ELEMENTS}
    if last is not None:
        direct = {n: k for n, k in direct.items() if steps[n].out != last.out}
    direct.update(_through_reshape(steps, position, count, last))
    # a fused group (fusion.py) writes each of its results that is one program output into that output's buffer
    fused_into = {}
    for n, s in enumerate(steps):
        if getattr(s, "writes_into", False):
            into = tuple(position[slot] if count.get(slot) == 1 and (last is None or slot != last.out) else None
                         for slot in s.outputs)
            if any(k is not None for k in into):
                fused_into[n] = into
    written = sum(steps[n].op.outputs[0].type.numel for n in direct)
    written += sum(steps[n].numel * sum(k is not None for k in into) for n, into in fused_into.items())
    if written < MIN_TOTAL:
        return None
    direct.update(fused_into)
    roots: dict[int, frozenset[int]] = {i: frozenset((i,)) for i in range(n_inputs)}
    empty: frozenset[int] = frozenset()
    for step in steps:
        if _fresh(step):  # a new array, or (written directly) an output buffer
            made = empty
        else:
            made = empty.union(*(roots.get(i, empty) for i in step.inputs))
        for slot in step.outputs:
            roots[slot] = made
    written = {pair for n, k in direct.items() for pair in _written(steps[n], k)}
    copies = [(slot, k) for k, slot in enumerate(outputs) if (slot, k) not in written]
    # a written result that a later step (or the last) reads is read from the output buffer, in its layout: where
    # a reader's bits may depend on the layout (a sum's order), the launch requires the new array's, C-contiguous
    readers = _readers(steps, last)
    contiguous = frozenset(k for n, into in direct.items() for slot, k in _written(steps[n], into)
                           if _layout_read(steps[n].out if isinstance(into, IntoView) else slot, readers))
    # read after position n: later steps' operands, the last step's, and the copied outputs
    tail: set[int] = set()
    for slot, _ in copies:
        tail |= roots.get(slot, empty)
    if last is not None:
        for slot in last.inputs:
            tail |= roots.get(slot, empty)
    raises = last is not None and not _pure(last)
    steps_by_slot = {slot: step for step in steps for slot in step.outputs}
    checks = {}
    exact: dict[int, frozenset[int]] = {}
    for n in range(len(steps) - 1, -1, -1):
        step = steps[n]
        if n in direct and isinstance(direct[n], IntoView):
            op_out = step.op.outputs[0]
            checks[direct[n].index] = (frozenset(tail), raises, tuple(steps_by_slot[direct[n].slot].op.outputs[0]
                                                                       .shape), np.dtype(NP_DTYPES[op_out.dtype]))
        elif n in direct and not isinstance(direct[n], tuple):
            op_out = step.op.outputs[0]
            checks[direct[n]] = (frozenset(tail), raises, tuple(op_out.shape), np.dtype(NP_DTYPES[op_out.dtype]))
        elif n in direct:  # a fused loop: its own program-input operands exactly, any other operand's not at all
            own = frozenset(i for i in step.inputs if i < n_inputs)
            seen = frozenset(tail).union(*(roots.get(i, empty) for i in step.inputs if i >= n_inputs))
            for slot, k in _written(step, direct[n]):
                value = step.result_values[step.outputs.index(slot)]
                checks[k] = (seen, raises, tuple(value.shape), np.dtype(NP_DTYPES[value.dtype]))
                exact[k] = own
        for slot in step.inputs:
            tail |= roots.get(slot, empty)
        raises = raises or not _pure(step)
    views = {into.index: into for into in direct.values() if isinstance(into, IntoView)}
    return DirectPlan(direct, copies, checks, exact, views, contiguous)


def _through_reshape(steps: Sequence[Any], position: dict[int, int], count: dict[int, int],
                     last: Any) -> dict[int, IntoView]:
    """The writing steps whose result (no program output itself) reaches one program output (not the last
    step's) through up to `_CHAIN_MAX` reshapes and transposes, no output before the last: each writes into that
    output's buffer viewed at its own shape (`IntoView`). With `SHARED`, a result in the chain may have other
    readers too (a training forward's activation, reshaped both for the next product and as the saved output),
    and the first of several chains that reach outputs is written (a normed activation reshaped for each of q, k
    and v, each reshape saved: the others are copied from the written buffer's views after the steps)."""
    readers = _readers(steps, last)
    found = {}
    for n, s in enumerate(steps):
        if not _writes_into(s) or len(s.outputs) != 1 or s.out in count or s.op.outputs[0].type.numel < MIN_ELEMENTS:
            continue
        chains = _chains(s.out, readers, count, _CHAIN_MAX)
        if not chains or (chains[0][1] and not SHARED):
            continue
        chain, shared = chains[0]
        slot = chain[-1].out
        if count.get(slot) != 1 or (last is not None and slot == last.out):
            continue
        path = tuple(("reshape", tuple(r.op.inputs[0].shape)) if r.op.name == "reshape"
                     else ("transpose", tuple(int(i) for i in np.argsort(r.op.attr("permutation"))))
                     for r in reversed(chain))
        into = IntoView(position[slot], path, slot, shared, _layout_read(s.out, readers))
        if _likely_viewed(into, s, chain):
            found[n] = into
    return found


def _chains(slot: int, readers: dict[int, list[Any]], count: dict[int, int], depth: int) -> list[tuple[list, bool]]:
    """The chains of up to `depth` reshape and transpose steps from `slot` (no output) to a program output slot,
    each with whether a slot along it (the first included, the output excluded) has other readers too."""
    after = readers.get(slot, ())
    found = []
    for r in after:
        if r.op.name not in ("reshape", "transpose") or r.fast is None or len(r.outputs) != 1:
            continue
        if r.out in count:
            found.append(([r], len(after) != 1))
        elif depth > 1:
            found += [([r, *chain], shared or len(after) != 1)
                      for chain, shared in _chains(r.out, readers, count, depth - 1)]
    return found


def _readers(steps: Sequence[Any], last: Any) -> dict[int, list[Any]]:
    """slot -> the steps (and the last step) that read it."""
    readers: dict[int, list[Any]] = {}
    for step in (*steps, *([last] if last is not None else [])):
        for slot in set(step.inputs):
            readers.setdefault(slot, []).append(step)
    return readers


# Steps whose results carry their operand's layout on to their own readers (views, or a new array in the
# operand's layout, as astype keeps it)
_CARRY = frozenset({"reshape", "transpose", "broadcast_in_dim", "slice", "convert"})


def _layout_read(slot: int, readers: dict[int, list[Any]], depth: int = 8) -> bool:
    """Whether a step may read `slot` (or a view of it) with bits that depend on its memory layout. Ufuncs and
    np.where are element-wise, a fused loop gathers its operands into C order first (fusion.py), and a product
    (fast.py's `dot`) gives the same bits for any operand layout (sim/mxu_layout.py); a view step passes the
    question on to its readers; any other step may depend on it (a reduction sums in its operand's memory order)."""
    for r in readers.get(slot, ()):
        if isinstance(r.fast, np.ufunc) or r.fast is np.where or hasattr(r, "source") \
                or getattr(r.fast, "writes_out", False) is True:
            continue
        if r.op.name in _CARRY and depth > 0 and len(r.outputs) == 1:
            if _layout_read(r.outputs[0], readers, depth - 1):
                return True
            continue
        return True
    return False


def _likely_viewed(into: IntoView, step: Any, chain: list[Any]) -> bool:
    """Whether the output has a view at `step`'s shape both when C-contiguous and when laid out as the chain of
    views would lay out `step`'s C-order result (the layouts a compiled graph's outputs take): a launch whose
    output has none takes the copy path for every output, so a chain that would often refuse is left out (an
    attention's heads merged after a transpose: (2, 4, 256, 64) -> (2, 256, 256))."""
    natural = _layout(tuple(step.op.outputs[0].shape))
    for r in chain:
        if r.op.name == "transpose":
            natural = natural.transpose(tuple(r.op.attr("permutation")))
            continue
        try:
            natural = np.reshape(natural, tuple(r.op.attr("shape")), copy=False)
        except ValueError:  # the reshape copies: its result is C-contiguous
            natural = _layout(tuple(r.op.attr("shape")))
    views = into.view(_layout(natural.shape)), into.view(natural)
    return all(v is not None and (v.flags.c_contiguous or not into.layout) for v in views)


def _layout(shape: tuple[int, ...]) -> np.ndarray:
    """A C-contiguous float32 array of `shape` over no memory of its own, for shape and stride arithmetic only
    (never read or written)."""
    strides, step = [], 4
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return np.lib.stride_tricks.as_strided(np.empty(1, np.float32), shape, tuple(reversed(strides)), writeable=False)


def _written(step: Any, into: Any) -> list[tuple[int, int]]:
    """(slot, output index) of each result that `step` writes into an output buffer (`into`: its entry in
    `DirectPlan.direct`, an output index or, for a fused step, one per result or None)."""
    if isinstance(into, tuple):
        return [(slot, k) for slot, k in zip(step.outputs, into) if k is not None]
    if isinstance(into, IntoView):
        return [(into.slot, into.index)]
    return [(step.out, into)]
