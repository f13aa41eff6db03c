"""Direct numpy callables for the sim's most frequent steps, chosen once per step at compile time.

The generic kernels (kernels*.py) take `(op, args)` and look up the op's function, widen narrow floats, round
results to the storage dtype and wrap results in lists: a few microseconds per call, which on the small arrays
of eager ops is most of a step's cost. When a step's operands and result need none of that (float32/float64/
int64/int32 in and out, plain `astype` conversions, no zero-size max/min), `specialize` returns the numpy
function (or a closure over the step's fixed shapes) that the generic kernel would end up calling, so the value
is the same bit for bit (tests/sim/test_fast_kernels.py checks each against the generic kernel); a 0-d result
is returned as a 0-d array, as the generic kernel returns it. A select of a dtype in kernels.SELECT_DTYPES is
the branch-free ufunc kernels.SELECT instead of np.where (the same copy of the picked bits,
tests/test_sim_select_ufunc.py). Indexing steps are in fast_index.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim.fast_index import SPECIALIZERS
from torchtpu.drivers.sim.kernels import _BINARY, _COMPARE, _UNARY_ANY, _UNARY_FLOAT, NP_DTYPES, SELECT, SELECT_DTYPES
from torchtpu.drivers.sim.kernels_data import _CUMULATIVE, _broadcast_plan, dot_layout
from torchtpu.sim import mxu
from torchtpu.sim.mxu_kernel import (
    PARALLEL_MIN_MACS,
    _transposed_is_cheaper,
    dot_exact_bf16_rounded,
    dot_small_bf16_rounded3,
    mm_small_bf16_rounded,
    mm_small_bf16_rounded_into,
)

FastKernel = Callable[..., np.ndarray]

# A plain exact mm up to this many multiply-adds writes the output buffer itself (`mm_into`, native entry too):
# the loop nest up to SMALL_INTO_MAX_MACS, the register-blocked kernel above (sim/mxu_kernel.py `_mm_into`).
INTO_MAX_MACS = PARALLEL_MIN_MACS - 1
# A fast product given `out=` has BLAS write it (False: computed into a new array and copied in, the path before;
# benchmarks toggle it to measure both in one process)
INTO = True
# A select step of a dtype in kernels.SELECT_DTYPES runs the branch-free ufunc kernels.SELECT (False: np.where, the
# path before; read when a plan is built, so benchmarks compare the two in separate processes)
SELECT_UFUNC = True
# A fast DEFAULT product calls `mxu.fast_default` (the one DEFAULT pass, without `mxu.matmul`'s argument checks and
# dispatch, which this step fixed at compile time); False: through `mxu.matmul`, the path before (benchmarks and
# tests/test_mxu_fast_default.py toggle it to compare both in one process)
LEAN = True

_PLAIN = frozenset({"float32", "float64", "int64", "int32"})  # computed as stored: no widening, no rounding
_FLOATS = frozenset({"float32", "float64"})
_RAW_BINARY = frozenset({"add", "subtract", "multiply", "maximum", "minimum"})  # no per-dtype checks in _binary
_RAW_FLOAT_BINARY = frozenset({"divide", "atan2", "hypot", "copysign", "nextafter"})
_RAW_UNARY = frozenset({"abs", "negate", "square", "sign"})
# np.sum/np.prod/np.max/np.min (kernels_data._REDUCERS) are these reductions behind a Python wrapper
_REDUCE_UFUNC = {"sum": np.add.reduce, "prod": np.multiply.reduce, "max": np.maximum.reduce,
                 "min": np.minimum.reduce}
_BOOL_REDUCE = {"and": np.logical_and.reduce, "or": np.logical_or.reduce}
_CONVERTIBLE = frozenset({"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"})


def specialize(op: Op, mxu_array: int = mxu.DEFAULT_ARRAY) -> FastKernel | None:
    """A callable taking the step's operand arrays and returning its one result, or None for the generic kernel;
    `mxu_array`: the chip's MXU width (K tiling of the exact matmul order)."""
    if len(op.outputs) != 1:
        return None
    fast = _specialize(op, mxu_array)
    if fast is None or op.outputs[0].shape != ():
        return fast
    return lambda *args: np.asarray(fast(*args))  # numpy hands back a scalar where the kernel makes a 0-d array


def _specialize(op: Op, mxu_array: int) -> FastKernel | None:
    out = op.outputs[0].dtype
    ins = [v.dtype for v in op.inputs]
    name = op.name
    if name in _BINARY:
        if ins != [out, out] or out not in _PLAIN:
            return None
        if name in _RAW_BINARY or (name in _RAW_FLOAT_BINARY and out in _FLOATS):
            return _BINARY[name] if name != "divide" else np.divide
        return None
    if name in _UNARY_FLOAT and ins == [out] and out in _FLOATS:
        return _UNARY_FLOAT[name]
    if name in _RAW_UNARY and ins == [out] and out in _PLAIN:
        return _UNARY_ANY[name]
    if name == "compare" and len(set(ins)) == 1 and ins[0] in _PLAIN:
        return _COMPARE[op.attr("direction")]
    if name == "select" and ins[1] == ins[2] == out:
        return SELECT if SELECT_UFUNC and ins[0] == "bool" and out in SELECT_DTYPES else np.where
    if name == "reshape":
        shape = tuple(op.attr("shape"))
        return lambda x: x.reshape(shape)
    if name == "transpose":
        permutation = tuple(op.attr("permutation"))
        return lambda x: x.transpose(permutation)
    if name == "dot_general" and ins == [out, out] and out == "float32":
        return _dot(op, mxu_array)
    if name == "broadcast_in_dim":
        shape = tuple(op.attr("shape"))
        transpose, expanded = _broadcast_plan(shape, tuple(op.attr("broadcast_dimensions")), op.inputs[0].shape)
        if transpose is not None:
            return None
        return lambda x: np.broadcast_to(x.reshape(expanded), shape)
    if name == "reduce" and ins == [out]:
        return _reduce(op, out)
    if name == "convert":
        return _convert(ins[0], out)
    if name == "cumulative" and ins == [out] and out in _PLAIN:
        kind, dim = op.attr("kind"), op.attr("dimension")
        if kind in ("sum", "prod"):  # np.cumsum/np.cumprod in the operand's dtype, as the kernel calls them
            fn, dtype = _CUMULATIVE[kind], NP_DTYPES[out]
            return lambda x: fn(x, axis=dim, dtype=dtype)
        if out not in _FLOATS:  # float max/min propagate NaN in the kernel
            accumulate = _CUMULATIVE[kind]
            return lambda x: accumulate(x, axis=dim)
        return None
    special = SPECIALIZERS.get(name)
    return special(op) if special is not None else None


def _reduce(op: Op, dtype: str) -> FastKernel | None:
    kind = op.attr("kind")
    dims = tuple(op.attr("dimensions"))
    if not dims:
        return None
    if dtype == "bool" and kind in _BOOL_REDUCE:  # np.all/np.any are these reductions behind a wrapper
        reduce = _BOOL_REDUCE[kind]
        return lambda x: reduce(x, axis=dims)
    # np.add/np.multiply reduce int32 in int64 (the kernel then stores int32); an empty max/min takes the identity
    if dtype not in _PLAIN or kind not in _REDUCE_UFUNC or (dtype == "int32" and kind in ("sum", "prod")) \
            or any(op.inputs[0].shape[d] == 0 for d in dims):
        return None
    reduce = _REDUCE_UFUNC[kind]
    return lambda x: reduce(x, axis=dims)


def _convert(src: str, dst: str) -> FastKernel | None:
    """`store(x, dst)` for conversions that are a plain `astype` (no narrow floats, no float-to-integer
    truncation), and `x != 0` for conversions to bool."""
    if src not in _CONVERTIBLE or dst not in _CONVERTIBLE:
        return None
    if dst == "bool":
        return lambda x: x != 0
    if src in _FLOATS and dst not in _FLOATS:
        return None
    dtype = NP_DTYPES[dst]
    return lambda x: x.astype(dtype, copy=False)  # `store` returns x itself when it already has the dtype


def _dot(op: Op, array: int) -> FastKernel:
    """float32 dot_general as the generic kernel computes it (operands permuted to (batch, m, k) @ (batch, k, n)
    and through `mxu.matmul`), with the permutation fixed here; DEFAULT precision in the exact order calls the
    fused rounding kernel directly, as `mxu.matmul` itself would (`dot_exact_bf16_rounded`, without its checks
    when the product is small: nonzero dimensions, below the parallel threshold), and a plain 2-D product (an
    eager `mm`) its 2-D twin, with the mode test inlined (`mxu.resolve_mode`)."""
    lperm, rperm, a_shape, b_shape = dot_layout(op, op.inputs[0].shape, op.inputs[1].shape)
    (b, m, k), n = a_shape, b_shape[2]
    c_shape = (b, m, n)
    macs = b * m * n * k
    out_shape = tuple(op.outputs[0].shape)
    precision = op.attr("precision")
    default = str(precision).upper() == "DEFAULT"
    small = default and 0 < macs < PARALLEL_MIN_MACS and type(array) is int and array >= 1
    lperm = None if lperm == tuple(range(len(lperm))) else lperm  # transposing by the identity: the same view
    rperm = None if rperm == tuple(range(len(rperm))) else rperm
    auto_exact = macs <= mxu.AUTO_EXACT_MAX_MACS  # what resolve_mode(None, macs) picks under "auto"
    get_mode = mxu.get_mode

    def dot(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The product; with `out` (the driver's last step, or a direct write: direct_outputs.py) written there,
        from BLAS itself where `out` is a C-contiguous float32 buffer of the result's shape (viewed at (batch,
        m, n)), else copied in."""
        a3 = (x if lperm is None else x.transpose(lperm)).reshape(a_shape)
        b3 = (y if rperm is None else y.transpose(rperm)).reshape(b_shape)
        mode = get_mode()
        if default and (mode == "exact" or (mode == "auto" and auto_exact)):
            if small:
                result = dot_small_bf16_rounded3(a3, b3, array).reshape(out_shape)
            else:
                result = dot_exact_bf16_rounded(a3, b3, array).reshape(out_shape)
        elif INTO and out is not None and out.shape == out_shape and out.dtype == np.float32 \
                and out.flags.c_contiguous:
            if default and LEAN:
                mxu.fast_default(a3, b3, out.reshape(c_shape))
            else:
                mxu.matmul(a3, b3, precision=precision, out_dtype=np.float32, array=array, out=out.reshape(c_shape))
            return out
        elif default and LEAN:
            result = mxu.fast_default(a3, b3).reshape(out_shape)
        else:
            result = mxu.matmul(a3, b3, precision=precision, out_dtype=np.float32, array=array).reshape(out_shape)
        if out is None:
            return result
        np.copyto(out, result)
        return out

    dot.writes_out = True  # type: ignore[attr-defined]  # the driver may pass `out=` (driver._Plan, direct_outputs)
    dot.result_shape = out_shape  # type: ignore[attr-defined]

    plain = (small and b == 1 and lperm is None and rperm is None and len(op.inputs[0].shape) == 2
             and len(op.inputs[1].shape) == 2 and out_shape == (m, n) and not _transposed_is_cheaper(m, n))
    if not plain:
        return dot

    def mm(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        mode = get_mode()
        if mode == "exact" or (mode == "auto" and auto_exact):
            return mm_small_bf16_rounded(x, y, array)
        return dot(x, y)

    if macs > INTO_MAX_MACS:
        return mm

    def mm_into(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """`mm`, written into `out` when given (the driver's last step: no result array, no copy)."""
        if out is None or out.shape != out_shape:
            result = mm(x, y)
            if out is None:
                return result
            np.copyto(out, result)
            return out
        mode = get_mode()
        if mode == "exact" or (mode == "auto" and auto_exact):
            mm_small_bf16_rounded_into(x, y, out, array)
        else:
            np.copyto(out, dot(x, y))
        return out

    def exact() -> bool:
        """Whether `mm_into` runs the exact small kernel now (the mode may change between calls)."""
        mode = get_mode()
        return mode == "exact" or (mode == "auto" and auto_exact)

    mm_into.writes_out = True  # type: ignore[attr-defined]  # the driver may pass `out=` (driver._Plan)
    mm_into.result_shape = out_shape  # type: ignore[attr-defined]
    # the native twin of the exact branch (sim/mxu_native.py): C++ calls it on contiguous buffers when `exact()`
    mm_into.native_exact = (exact, (m, k, n), array)  # type: ignore[attr-defined]
    return mm_into


def reshaped_into(kernel: FastKernel, shape: tuple[int, ...]) -> FastKernel:
    """A `writes_out` kernel followed by a reshape of its result to `shape` (a DEFER_AND_FUSE one-op region ends
    so), as one `writes_out` kernel: given `out`, the kernel writes `out` viewed at its own result shape (a copy
    where no such view exists)."""

    result_shape = kernel.result_shape  # type: ignore[attr-defined]

    def run(*args: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            return kernel(*args).reshape(shape)
        if out.flags.c_contiguous:  # always a view
            kernel(*args, out=out.reshape(result_shape))
            return out
        try:
            view = np.reshape(out, result_shape, copy=False)
        except ValueError:  # no view of `out` at the kernel's shape
            np.copyto(out, kernel(*args).reshape(shape))
            return out
        kernel(*args, out=view)
        return out

    run.writes_out = True  # type: ignore[attr-defined]
    return run


def _broadcasts_implicitly(fast: FastKernel | None) -> bool:
    return isinstance(fast, np.ufunc) or fast is np.where


def elide_broadcasts(steps: Sequence[Any], program_outputs: Sequence[int]) -> None:
    """Let numpy broadcast operands inside the ops that read them instead of materializing `broadcast_in_dim`.

    `steps` are the driver's steps (`op`, `fast`, `inputs`, `out`). A fast broadcast whose every reader is a
    fast ufunc (or `np.where`) that also reads a full-shape operand, and which is not a program output, becomes
    a reshape to its rank-aligned shape (size-1 axes where it broadcasts): the readers compute the same values
    from it (a ufunc broadcasts its operands), without `np.broadcast_to`'s Python cost.
    """
    readers: dict[int, list[Any]] = {}
    for step in steps:
        for slot in set(step.inputs):
            readers.setdefault(slot, []).append(step)
    outputs = set(program_outputs)
    lazy: dict[int, tuple] = {}
    for step in steps:
        op = step.op
        if op.name != "broadcast_in_dim" or step.fast is None or step.out in outputs:
            continue
        if all(_broadcasts_implicitly(r.fast) for r in readers.get(step.out, ())) and step.out in readers:
            lazy[step.out] = _broadcast_plan(tuple(op.attr("shape")), tuple(op.attr("broadcast_dimensions")),
                                             op.inputs[0].shape)[1]
    for step in steps:  # every reader keeps one operand at the full result shape, so its result has that shape
        if _broadcasts_implicitly(step.fast) and any(slot in lazy for slot in step.inputs):
            full = step.op.outputs[0].shape
            operands = list(zip(step.inputs, step.op.inputs))
            if not any(slot not in lazy and v.shape == full for slot, v in operands):
                keep = [slot for slot, v in operands if slot in lazy and v.shape == full][:1]
                for slot in keep or step.inputs:
                    lazy.pop(slot, None)
    for step in steps:
        if step.out in lazy and step.op.name == "broadcast_in_dim":
            expanded = lazy[step.out]
            step.fast = lambda x, expanded=expanded: x.reshape(expanded)
