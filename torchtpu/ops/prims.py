"""IR builders for lowerings: each call emits IR ops into the Builder being traced.

These add what the IR leaves to the front end: numpy broadcasting, torch type promotion, Python scalars as
constants, and negative-dimension handling. Lowerings call only these (and the Sym operators built on them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from torchtpu.ops import scalar_args
from torchtpu.ops.scalar_args import Placeholder
from torchtpu.ops.tracing import IR_TO_TORCH, TORCH_TO_IR, Sym, current_builder

Kind = ELEMENTWISE_TYPE_PROMOTION_KIND
Number = bool | int | float


COMPLEX_PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}  # a complex dtype's parts


def complex_for(*dtypes: torch.dtype) -> torch.dtype:
    """The complex dtype that holds values of `dtypes` exactly enough: complex128 beside any double, else complex64."""
    return torch.complex128 if any(d in (torch.float64, torch.complex128) for d in dtypes) else torch.complex64


def emit(name: str, inputs: Sequence[Sym], **attrs: Any) -> list[Sym]:
    return [Sym(v) for v in current_builder().emit(name, [x.value for x in inputs], **attrs)]


def emit1(name: str, inputs: Sequence[Sym], **attrs: Any) -> Sym:
    return emit(name, inputs, **attrs)[0]


def canon_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def canon_dims(dims: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """`dims` wrapped and sorted, as ATen's dim_list_to_bitset reads a dim list: each in range (a 0-d tensor's in
    [-1, 0]), none named twice."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    seen: set[int] = set()
    for d in dims:
        wrapped = canon_dim(d, ndim)
        if wrapped in seen:
            raise RuntimeError(f"dim {wrapped} appears multiple times in the list of dims")
        seen.add(wrapped)
    return tuple(sorted(seen)) if ndim else ()


def check_index(index: Sym, size: int, message: str, *, negative: bool = False, error: str = "IndexError",
                ignore: int | None = None) -> Sym:
    """`index` unchanged, checked when the program runs against ATen's rule for the op: -size <= i < size with
    `negative` (Python-style indexing), else 0 <= i < size; `ignore` is always allowed. A bad value raises
    `error` (IndexError or RuntimeError, as the CPU kernel does) with `message`, "{}" standing for the value."""
    if index.numel() == 0:
        return index
    attrs: dict[str, Any] = {"size": int(size), "low": -int(size) if negative else 0, "error": error,
                             "message": message}
    if ignore is not None:
        attrs["ignore"] = int(ignore)
    return emit1("check_index", [index], **attrs)


_INT_BITS = {torch.int64: 64, torch.int32: 32, torch.int16: 16, torch.int8: 8, torch.uint8: 8}


def const(value: Number, dtype: torch.dtype, shape: Sequence[int] = ()) -> Sym:
    if dtype == torch.complex32:  # the IR moves complex32 only: the value in complex64, rounded once
        return convert(const(value, torch.complex64, shape), dtype)
    if isinstance(value, Placeholder):  # a scalar argument: a 0-d program input of this dtype (scalar_args.py)
        return broadcast_to(_placeholder_input(value, dtype), tuple(shape))
    if dtype in _INT_BITS and value.__class__ is not bool:
        value = _wrap_int(value, dtype)
    return emit1("constant", [], value=value, shape=tuple(shape), dtype=TORCH_TO_IR[dtype])


def _placeholder_input(p: Placeholder, dtype: torch.dtype) -> Sym:
    inputs = scalar_args.current()
    if inputs is None:
        p._read()
    convert = None
    if dtype == torch.bool:
        convert = bool
    elif dtype in _INT_BITS:
        convert = lambda v: _wrap_int(v, dtype)  # noqa: E731
    return Sym(inputs.input(current_builder(), p, TORCH_TO_IR[dtype], convert))


def _wrap_int(value: Any, dtype: torch.dtype) -> int:
    """int(value) wrapped as ATen's cast does (uint8_tensor * -1: 255)."""
    bits = _INT_BITS[dtype]
    if isinstance(value, complex):  # a Scalar read as an integer (threshold_backward): c10's checked conversion
        from torchtpu.dtypes import checked_scalar

        value = checked_scalar(value, dtype)
    value = int(value)
    low = 0 if dtype == torch.uint8 else -(1 << (bits - 1))
    return (value - low) % (1 << bits) + low if not low <= value < low + (1 << bits) else value


def dense(values: Any, dtype: torch.dtype) -> Sym:
    """A dense constant from a nested sequence or numpy array (its shape is kept), e.g. interpolation weights."""
    import numpy as np

    arr = np.asarray(values)
    if arr.ndim == 0:
        return const(arr.item(), dtype)
    if dtype == torch.complex32:
        return convert(dense(values, torch.complex64), dtype)
    if dtype.is_complex:
        part = dtype.to_real()
        return emit1("complex", [dense(arr.real, part), dense(arr.imag, part)])
    flat = tuple(bool(v) if dtype == torch.bool else int(v) if not dtype.is_floating_point
                 else float(v) for v in arr.reshape(-1).tolist())
    return emit1("constant", [], value=flat, shape=tuple(arr.shape), dtype=TORCH_TO_IR[dtype])


def _meta(x: Any) -> Any:
    if isinstance(x, Placeholder):
        return x.kind(1)  # promotes as any Python scalar of its class
    if isinstance(x, Sym):
        return torch.empty(x.shape, dtype=x.dtype, device="meta")
    return x


_promotions: dict[tuple, tuple[torch.dtype, torch.dtype]] = {}


def _promotion_key(a: Any) -> Any:
    if isinstance(a, Placeholder):
        return a.kind
    if isinstance(a, Sym):
        return (a.dtype, a.ndim == 0)
    return type(a)


def result_dtype(*args: Any, kind: Kind = Kind.DEFAULT) -> tuple[torch.dtype, torch.dtype]:
    """(computation dtype, result dtype) by torch's elementwise promotion rules (memoized by dtype category and
    the default dtype, which an integer or Python-float operand's float result takes)."""
    present = [a for a in args if a is not None]
    key = (kind, torch.get_default_dtype(), *(_promotion_key(a) for a in present))
    found = _promotions.get(key)
    if found is None:
        found = _promotions[key] = elementwise_dtypes(*[_meta(a) for a in present], type_promotion_kind=kind)
    return found


def convert(x: Sym | Number, dtype: torch.dtype) -> Sym:
    if not isinstance(x, Sym):
        return const(x, dtype)
    if x.dtype == dtype:
        return x
    if dtype == torch.float8_e4m3fn and x.dtype not in (torch.int8, torch.uint8, torch.bool):
        # c10 saturates to +-448 (torch 2.13 CPU: 1e30 and inf -> 448); the IR convert rounds as XLA (-> NaN)
        hi = torch.finfo(torch.float8_e4m3fn).max
        if x.dtype == torch.float8_e5m2:
            x = emit1("convert", [x], dtype="float32")
        x = emit1("clamp", [const(-hi, x.dtype, x.shape), x, const(hi, x.dtype, x.shape)])
    return emit1("convert", [x], dtype=TORCH_TO_IR[dtype])


_HALF_OF = {torch.complex64: torch.complex32, torch.float32: torch.float16}


def via_complex64(fn: Any, x: Sym) -> Sym:
    """`fn` of a complex32 `x` as CPU's ComplexHalf kernels compute it: in complex64, each part of the result
    rounded to float16 once (a complex64 result to complex32, a float32 one, abs's, to float16)."""
    y = fn(convert(x, torch.complex64))
    return convert(y, _HALF_OF.get(y.dtype, y.dtype))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    first = tuple(shapes[0])
    if all(tuple(s) == first for s in shapes[1:]):
        return first
    return tuple(torch.broadcast_shapes(*shapes))


def broadcast_to(x: Sym, shape: Sequence[int]) -> Sym:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    offset = len(shape) - x.ndim
    if offset < 0:
        raise ValueError(f"cannot broadcast {x.shape} to {shape}")
    return emit1("broadcast_in_dim", [x], shape=shape, broadcast_dimensions=tuple(range(offset, len(shape))))


def broadcast(*xs: Sym) -> list[Sym]:
    shape = broadcast_shapes(*[x.shape for x in xs])
    return [broadcast_to(x, shape) for x in xs]


_NARROW_FLOATS = (torch.float16, torch.bfloat16)


def prepare(args: Sequence[Any], dtype: torch.dtype, scalar_other_exact: bool = False) -> list[Sym]:
    """Converts tensors and scalars to `dtype` and broadcasts them to a common shape. Where the common dtype is
    float16/bfloat16 (computed in float32), an operand of another dtype is cast to it first, as TensorIterator
    casts its operands before the kernel widens them (int32 2049 + float16 0.5 is 2048 on CPU, 70000 * 0.0 NaN; a
    Python scalar too: float16 0.5 + 2049 is 2048); `scalar_other_exact`: ATen's mul, true, floor and trunc
    division read a scalar (one element: TensorIterator's is_scalar; or Python) second operand's original value
    instead (float16 0.0 * 70000 is 0)."""
    if dtype == torch.float32 and any(isinstance(a, Sym) and a.dtype in _NARROW_FLOATS for a in args):
        common = result_dtype(*args, kind=Kind.NO_OPMATH)[1]
        return broadcast(*[convert(a, dtype) if scalar_other_exact and k == 1 and _is_scalar(a)
                           else via_common(a, dtype, common) for k, a in enumerate(args)])
    if dtype == torch.complex64 and result_dtype(*args, kind=Kind.NO_OPMATH)[1] == torch.complex32:
        # ComplexHalf: every operand cast to complex32 first (a Python scalar too: CPU's mul reads no scalar in
        # opmath for ComplexHalf), then widened
        return broadcast(*[via_common(a, dtype, torch.complex32) for a in args])
    return broadcast(*[convert(a, dtype) for a in args])


def _is_scalar(x: Any) -> bool:
    return not isinstance(x, Sym) or math.prod(x.shape) == 1


def via_common(x: Sym | Number, compute: torch.dtype, common: torch.dtype) -> Sym:
    """`x` in `compute`, through a float16/bfloat16 `common` dtype first where `compute` is its float32 (`prepare`)."""
    if ((common in _NARROW_FLOATS and compute == torch.float32) or (common == torch.complex32 and
                                                                   compute == torch.complex64)) \
            and not (isinstance(x, Sym) and x.dtype == common):
        x = convert(x, common)
    return convert(x, compute)


def binary(name: str, a: Any, b: Any, kind: Kind = Kind.DEFAULT, scalar_other_exact: bool = False) -> Sym:
    compute, result = result_dtype(a, b, kind=kind)
    x, y = prepare([a, b], compute, scalar_other_exact)
    return convert(emit1(name, [x, y]), result)


def unary(name: str, x: Sym, kind: Kind = Kind.DEFAULT) -> Sym:
    compute, result = result_dtype(x, kind=kind)
    return convert(emit1(name, [convert(x, compute)]), result)


def float_unary(name: str, x: Sym) -> Sym:
    return unary(name, x, Kind.INT_TO_FLOAT)


def true_divide(a: Any, b: Any) -> Sym:
    return binary("divide", a, b, Kind.INT_TO_FLOAT, scalar_other_exact=True)


def compare(direction: str, a: Any, b: Any) -> Sym:
    compute, _ = result_dtype(a, b)
    x, y = prepare([a, b], compute)
    return emit1("compare", [x, y], direction=direction)


def where(pred: Sym, a: Any, b: Any) -> Sym:
    _, result = result_dtype(a, b, kind=Kind.NO_OPMATH)
    x, y = [convert(v, result) for v in (a, b)]
    p, x, y = broadcast(convert(pred, torch.bool), x, y)
    return emit1("select", [p, x, y])


def full(value: Number, shape: Sequence[int], dtype: torch.dtype) -> Sym:
    return broadcast_to(const(value, dtype), tuple(shape))


def zeros_like(x: Sym, dtype: torch.dtype | None = None) -> Sym:
    return full(0, x.shape, dtype or x.dtype)


def reshape(x: Sym, shape: Sequence[int]) -> Sym:
    shape = tuple(shape)
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        shape = tuple(x.numel() // max(known, 1) if d == -1 else d for d in shape)
    if shape == x.shape:
        return x
    return emit1("reshape", [x], shape=shape)


def transpose(x: Sym, perm: Sequence[int]) -> Sym:
    perm = tuple(perm)
    if perm == tuple(range(x.ndim)):
        return x
    return emit1("transpose", [x], permutation=perm)


def swap(x: Sym, a: int, b: int) -> Sym:
    perm = list(range(x.ndim))
    a, b = canon_dim(a, x.ndim), canon_dim(b, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def slice_dim(x: Sym, dim: int, start: int, stop: int, step: int = 1) -> Sym:
    starts = [0] * x.ndim
    limits = list(x.shape)
    strides = [1] * x.ndim
    starts[dim], limits[dim], strides[dim] = start, stop, step
    if starts == [0] * x.ndim and limits == list(x.shape) and step == 1:
        return x
    return emit1("slice", [x], start=tuple(starts), limit=tuple(limits), strides=tuple(strides))


def concat(xs: Sequence[Sym], dim: int) -> Sym:
    if len(xs) == 1:
        return xs[0]
    return emit1("concatenate", list(xs), dimension=dim)


def reduce(x: Sym, kind: str, dims: tuple[int, ...], keepdim: bool = False) -> Sym:
    y = emit1("reduce", [x], kind=kind, dimensions=dims) if dims else x
    if keepdim and dims:
        y = reshape(y, tuple(1 if i in dims else d for i, d in enumerate(x.shape)))
    return y


def keep_dims(y: Sym, shape: Sequence[int], dims: tuple[int, ...]) -> Sym:
    return reshape(y, tuple(1 if i in dims else d for i, d in enumerate(shape)))


def iota(shape: Sequence[int], dim: int, dtype: torch.dtype = torch.int64) -> Sym:
    return emit1("iota", [], shape=tuple(shape), dtype=TORCH_TO_IR[dtype], dimension=dim)


def dot_general(a: Sym, b: Sym, lhs_batch: Sequence[int], rhs_batch: Sequence[int], lhs_contract: Sequence[int],
                rhs_contract: Sequence[int], out_dtype: torch.dtype) -> Sym:
    from torchtpu.precision import current_precision

    if a.dtype.is_complex or b.dtype.is_complex:  # (ar + i ai)(br + i bi): four real products on the MXU
        whole = complex_for(a.dtype, b.dtype, out_dtype)  # complex128: float64 products, exact as float64's
        parts = []
        for x in (a, b):
            x = convert(x, whole)
            parts.append((emit1("real", [x]), emit1("imag", [x])))
        (ar, ai), (br, bi) = parts
        dims = (lhs_batch, rhs_batch, lhs_contract, rhs_contract, COMPLEX_PART[whole])
        re = dot_general(ar, br, *dims) - dot_general(ai, bi, *dims)
        im = dot_general(ar, bi, *dims) + dot_general(ai, br, *dims)
        return convert(emit1("complex", [re, im]), out_dtype)
    return emit1("dot_general", [a, b], lhs_batch=tuple(lhs_batch), rhs_batch=tuple(rhs_batch),
                 lhs_contract=tuple(lhs_contract), rhs_contract=tuple(rhs_contract),
                 precision=current_precision().name, out_dtype=TORCH_TO_IR[out_dtype])


def ragged_dot(a: Sym, b: Sym, ends: Sym, mode: str, out_dtype: torch.dtype) -> Sym:
    """Grouped matmul over runtime group ends (IR op ragged_dot, drivers/ir_ragged_dot.py) at the current
    precision: "rows" multiplies each group's rows of a [M, K] by its matrix of b [G, K, N]; "contract" gives
    [G, M, N], each group's product over its own positions of the contraction."""
    from torchtpu.precision import current_precision

    return emit1("ragged_dot", [a, b, ends], mode=mode, precision=current_precision().name,
                 out_dtype=TORCH_TO_IR[out_dtype])


def matmul(a: Sym, b: Sym) -> Sym:
    """Batched matmul of (..., M, K) x (..., K, N) with equal batch dims (callers broadcast)."""
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"matmul batch dims differ: {a.shape} vs {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[-2]}x{a.shape[-1]} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")
    batch = tuple(range(a.ndim - 2))
    return dot_general(a, b, batch, batch, (a.ndim - 1,), (b.ndim - 2,), a.dtype)


def torch_dtype(ir_dtype: str) -> torch.dtype:
    return IR_TO_TORCH[ir_dtype]
