"""Lowerings of reductions: sum, mean, prod, amax/amin, max/min with indices, argmax/argmin, var/std,
all/any, cumulative sums and products, logsumexp and vector norms."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from torchtpu.dtypes import _C_NAMES, checked_scalar
from torchtpu.ops import logcumsumexp_complex, operand_checks, reduce_layout
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def _acc_dtype(x: Sym, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    if x.dtype == torch.bool or not (x.dtype.is_floating_point or x.dtype.is_complex):
        return torch.int64
    return x.dtype


def _sum(x: Sym, dims: tuple[int, ...], keepdim: bool, dtype: torch.dtype | None,
         strides: tuple[int, ...] | None = None) -> Sym:
    out = _acc_dtype(x, dtype)
    if out in (torch.bfloat16, torch.float16) and x.numel() and reduce_layout.two_reduced_innermost(
            x.shape, reduce_layout.iterated_strides(x.shape, strides, x.dtype, out), dims):
        # ATen's sum_out, should_use_acc_buffer: a float16/bfloat16 result whose iterator has two reduced dims
        # innermost (dims (0, 2) of a contiguous 3-d input) is summed as self.to(float32) into a float32 buffer,
        # then cast: no element is rounded to the result dtype first (pytorch#83149; ops/reduce_layout.py)
        return P.convert(P.reduce(P.convert(x, torch.float32), "sum", dims, keepdim), out)
    compute = torch.float32 if out in (torch.bfloat16, torch.float16) else out
    # ATen's make_reduction_from_out_ty: the input is cast to the result dtype first (sum(float64, dtype=half)
    # rounds each element to half), then a half dtype is accumulated in float32
    y = P.reduce(P.convert(P.convert(x, out), compute), "sum", dims, keepdim)
    return P.convert(y, out)


@lower(aten.sum.dim_IntList, prepare=reduce_layout.self_strides)
def sum_dim(self: Sym, dim: list[int] | None, keepdim: bool = False, dtype: torch.dtype | None = None, *,
            _strides: tuple[int, ...] | None = None) -> Sym:
    dims = P.canon_dims(dim if dim else None, self.ndim)
    return _sum(self, dims, keepdim, dtype, _strides)


@lower(aten.sum.default, prepare=reduce_layout.self_strides)
def sum_all(self: Sym, dtype: torch.dtype | None = None, *, _strides: tuple[int, ...] | None = None) -> Sym:
    return _sum(self, tuple(range(self.ndim)), False, dtype, _strides)


def _mean(x: Sym, dims: tuple[int, ...], keepdim: bool, dtype: torch.dtype | None) -> Sym:
    out = dtype or x.dtype
    if not (out.is_floating_point or out.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {str(out).split('.')[-1].capitalize()}")
    count = 1
    for d in dims:
        count *= x.shape[d]
    if out.is_complex or x.dtype.is_complex:
        z = P.convert(x, P.complex_for(x.dtype, out))
        a, b = (P.reduce(P.emit1(part, [z]), "sum", dims, keepdim) for part in ("real", "imag"))
        return P.convert(_complex_div_real(a, b, count), out)
    # ATen's mean_out on CPU: sum_out(self, dtype=float32 for a float16/bfloat16 result, else the result dtype),
    # which casts each element to that dtype first (a float64 input with dtype=half is summed in float32), div_(n)
    acc = torch.float32 if out in (torch.float16, torch.bfloat16) else out
    total = P.reduce(P.convert(x, acc), "sum", dims, keepdim)
    return P.convert(total / float(count) if count else total * float("nan"), out)


def _complex_div_real(a: Sym, b: Sym, n: int) -> Sym:
    """(a + bi) / n as CPU's mean divides a complex sum: by the complex scalar n + 0i, c10::complex's division
    (c >= d: rat = d / c, scl = 1 / (c + d * rat), ((a + b * rat) * scl, (b - a * rat) * scl)): a multiply by the
    part dtype's 1 / n, and an inf part makes the other NaN (inf * 0), so (inf - 0.39j) / 2 is inf + NaNj."""
    if n == 0:  # 0 / 0 in each part, as c10's division by zeros
        return P.emit1("complex", [a / 0.0, b / 0.0])
    dtype = np.float64 if a.dtype == torch.float64 else np.float32
    scl = float(dtype(1.0) / dtype(n))
    return P.emit1("complex", [(a + b * 0.0) * scl, (b - a * 0.0) * scl])


@lower(aten.mean.dim)
def mean_dim(self: Sym, dim: list[int] | None, keepdim: bool = False, dtype: torch.dtype | None = None) -> Sym:
    return _mean(self, P.canon_dims(dim if dim else None, self.ndim), keepdim, dtype)


@lower(aten.mean.default)
def mean_all(self: Sym, dtype: torch.dtype | None = None) -> Sym:
    return _mean(self, tuple(range(self.ndim)), False, dtype)


@lower(aten.prod.default)
def prod_all(self: Sym, dtype: torch.dtype | None = None) -> Sym:
    out = _acc_dtype(self, dtype)
    return P.reduce(P.convert(self, out), "prod", tuple(range(self.ndim)))


@lower(aten.prod.dim_int)
def prod_dim(self: Sym, dim: int, keepdim: bool = False, dtype: torch.dtype | None = None) -> Sym:
    out = _acc_dtype(self, dtype)
    return P.reduce(P.convert(self, out), "prod", P.canon_dims(dim, self.ndim), keepdim)


def _extreme(x: Sym, kind: str, dims: tuple[int, ...], keepdim: bool) -> Sym:
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{kind}(): Expected reduction dim {d} to have non-zero size.")
    if x.dtype == torch.bool:
        return P.reduce(x, "or" if kind == "max" else "and", dims, keepdim)
    return P.reduce(x, kind, dims, keepdim)


@lower(aten.amax.default)
def amax(self: Sym, dim: list[int] = (), keepdim: bool = False) -> Sym:
    return _extreme(self, "max", P.canon_dims(dim if dim else None, self.ndim), keepdim)


@lower(aten.amin.default)
def amin(self: Sym, dim: list[int] = (), keepdim: bool = False) -> Sym:
    return _extreme(self, "min", P.canon_dims(dim if dim else None, self.ndim), keepdim)


@lower(aten.max.default)
def max_all(self: Sym) -> Sym:
    if self.numel() == 0:
        raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    return _extreme(self, "max", tuple(range(self.ndim)), False)


@lower(aten.min.default)
def min_all(self: Sym) -> Sym:
    if self.numel() == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    return _extreme(self, "min", tuple(range(self.ndim)), False)


def _extreme_all_out(x: Sym, kind: str, dtype: torch.dtype | None) -> Sym:
    """max()/min() of all elements into out= (ATen's max_unary_out: canCast checked before, then
    `out.fill_(self.max())`): CPU makes no empty-input check there, and an empty input's result is the reduction's
    identity (the dtype's lowest value for max, highest for min; fuzz seed 5). `dtype` is the out tensor's
    (out_rules.READS_IN_OUT_DTYPE): fill_'s Scalar is converted with c10's overflow check, asserted where the
    program runs (fuzz seed 62: an int64 max of 40000 into an int16 out= wrapped, CPU raises)."""
    if x.numel() > 0:
        y = _extreme(x, kind, tuple(range(x.ndim)), False)
    elif x.dtype == torch.bool:
        y = P.full(kind == "min", (), torch.bool)
    elif x.dtype.is_floating_point:
        y = P.full(float("inf") if kind == "min" else float("-inf"), (), x.dtype)
    else:
        info = torch.iinfo(x.dtype)
        y = P.full(info.max if kind == "min" else info.min, (), x.dtype)
    if dtype is None or dtype == x.dtype:
        return y
    if (bad := _fill_overflows(y, dtype)) is not None:
        operand_checks.data_check(bad, f"value cannot be converted to type {_C_NAMES[dtype]} without overflow")
    return P.convert(y, dtype)


def _fill_overflows(y: Sym, dtype: torch.dtype) -> Sym | None:
    """Whether fill_'s Scalar (a double or int64 from `y`'s one element) overflows `dtype` as c10's
    checked_convert finds it: float32 and complex64 refuse a finite double beyond their range (an infinity or NaN
    passes), the integer types a value beyond theirs (uint8 also takes -255..-1, two's complement); fill_ casts
    to float16 and bfloat16 without the check, and float64 holds every value. None where nothing can overflow."""
    if dtype in (torch.float32, torch.complex64) and y.dtype == torch.float64:
        big = float(torch.finfo(torch.float32).max)
        above = P.where(P.compare("GT", y, big), P.compare("LT", y, float("inf")), False)
        below = P.where(P.compare("LT", y, -big), P.compare("GT", y, float("-inf")), False)
        return P.where(above, True, below)
    if dtype.is_floating_point or dtype.is_complex or y.dtype == torch.bool:
        return None
    info, held = torch.iinfo(dtype), torch.iinfo(y.dtype)
    low = -info.max if dtype == torch.uint8 else info.min
    checks = ([P.compare("GT", y, info.max)] if info.max < held.max else []) + (
        [P.compare("LT", y, low)] if low > held.min else [])  # bounds y's own dtype holds (a constant must fit)
    if not checks:
        return None
    return checks[0] if len(checks) == 1 else P.where(checks[0], True, checks[1])


@lower(aten.max.unary_out)
def max_all_out(self: Sym, dtype: torch.dtype | None = None) -> Sym:
    return _extreme_all_out(self, "max", dtype)


@lower(aten.min.unary_out)
def min_all_out(self: Sym, dtype: torch.dtype | None = None) -> Sym:
    return _extreme_all_out(self, "min", dtype)


def _arg(x: Sym, kind: str, dim: int | None, keepdim: bool) -> Sym:
    if dim is None:
        flat = P.reshape(x, (x.numel(),))
        if x.numel() == 0:
            raise IndexError(f"arg{kind}(): Expected reduction dim to be specified for input.numel() == 0.")
        idx = P.emit1("argreduce", [flat], kind=kind, dimension=0)
        return P.reshape(idx, (1,) * x.ndim) if keepdim else idx
    d = P.canon_dim(dim, x.ndim)
    if x.ndim == 0:
        return P.full(0, (), torch.int64)
    if x.shape[d] == 0:
        raise IndexError(f"arg{kind}(): Expected reduction dim {d} to have non-zero size.")
    idx = P.emit1("argreduce", [x], kind=kind, dimension=d)
    return P.keep_dims(idx, x.shape, (d,)) if keepdim else idx


@lower(aten.argmax.default)
def argmax(self: Sym, dim: int | None = None, keepdim: bool = False) -> Sym:
    return _arg(self, "max", dim, keepdim)


@lower(aten.argmin.default)
def argmin(self: Sym, dim: int | None = None, keepdim: bool = False) -> Sym:
    return _arg(self, "min", dim, keepdim)


@lower(aten.max.dim)
def max_dim(self: Sym, dim: int, keepdim: bool = False) -> tuple[Sym, Sym]:
    d = P.canon_dims(dim, self.ndim)
    return _extreme(self, "max", d, keepdim), _arg(self, "max", dim, keepdim)


@lower(aten.min.dim)
def min_dim(self: Sym, dim: int, keepdim: bool = False) -> tuple[Sym, Sym]:
    d = P.canon_dims(dim, self.ndim)
    return _extreme(self, "min", d, keepdim), _arg(self, "min", dim, keepdim)


_UNSCALED = (2.0 ** -50, 2.0 ** 50)  # float32 moments of values in this range neither overflow nor underflow


def _pow2_scale(xf: Sym, dims: tuple[int, ...]) -> Sym:
    """A power of two near the largest |x| along `dims` (kept) where that is outside `_UNSCALED`; 1 where it is
    inside, 0 or not finite: ordinary values are computed unscaled (XLA's exp2 is not exact at every integer on
    the CPU client, so a scale there would not be a power of two)."""
    top = P.reduce(P.emit1("abs", [xf]), "max", dims, True)
    extreme = P.emit1("or", [P.compare("LT", top, _UNSCALED[0]), P.compare("GE", top, _UNSCALED[1])])
    usable = P.emit1("and", [P.emit1("and", [P.emit1("is_finite", [top]), P.compare("GT", top, 0.0)]), extreme])
    safe = P.where(usable, top, P.full(1.0, top.shape, top.dtype))
    return P.where(usable, P.emit1("exp2", [P.emit1("floor", [P.emit1("log2", [safe])])]),
                   P.full(1.0, top.shape, top.dtype))


def _var(x: Sym, dims: tuple[int, ...], correction: float, keepdim: bool, dtype: torch.dtype | None = None,
         take_sqrt: bool = False) -> Sym:
    """`dtype`: an out= tensor's (out_rules.ITERATOR_WRITES_OUT): ATen's reduction reads the input in it.
    `take_sqrt`: std, the root taken before the result's rounding (a complex x's after the parts' sum)."""
    if x.dtype == torch.complex32 and dtype is None:  # CPU's ComplexHalf: each part's var in float16, their
        re, im = _parts(x)                              # float16 sum, its float16 root
        total = P.convert(P.convert(_var(re, dims, correction, keepdim), torch.float32) +
                          P.convert(_var(im, dims, correction, keepdim), torch.float32), torch.float16)
        return P.convert(P.emit1("sqrt", [P.convert(total, torch.float32)]), torch.float16) if take_sqrt else total
    if x.dtype.is_complex:  # E|x - mean|^2 = var(re) + var(im), a real result as on CPU
        z = P.convert(x, P.complex_for(x.dtype))
        part = None if dtype is None else P.COMPLEX_PART.get(dtype, dtype)
        total = _var(P.emit1("real", [z]), dims, correction, keepdim, part) + \
            _var(P.emit1("imag", [z]), dims, correction, keepdim, part)
        return P.emit1("sqrt", [total]) if take_sqrt else total
    if dtype is not None and not dtype.is_complex:
        x = P.convert(x, dtype)
    xf = P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)
    scale = None
    if xf.dtype == torch.float32 and all(xf.shape[d] for d in dims):
        # CPU accumulates a float's moments in double (WelfordOps<scalar_t, double>): scaled by a power of two
        # (exact), no square overflows or underflows float32 before the result does (fuzz seed 34: std of values
        # near 1e30 was inf for CPU's 5.8e29)
        scale = _pow2_scale(xf, dims)
        xf = xf / P.broadcast_to(scale, xf.shape)
    count = 1
    for d in dims:
        count *= x.shape[d]
    mean = P.reduce(xf, "sum", dims, True) / float(max(count, 1))
    centered = xf - P.broadcast_to(mean, xf.shape)
    sq = P.reduce(centered * centered, "sum", dims, keepdim)
    # ATen divides by max(N - correction, 0): a divisor of 0 gives inf for a nonzero sum, NaN for 0 / 0 (a complex
    # x's parts each divided, as ATen's var(real) + var(imag))
    out = x.dtype if dtype is None else dtype
    if count == 0:  # the mean of nothing is NaN, whatever the divisor
        return P.convert(P.full(math.nan, sq.shape, sq.dtype), out)
    result = sq / (count - correction if count > correction else 0.0)  # a NaN correction: 0, as ATen
    if take_sqrt:
        result = P.emit1("sqrt", [result])
    if scale is not None:
        s = scale if keepdim else P.reshape(scale, result.shape)
        result = result * s if take_sqrt else result * s * s
    return P.convert(result, out)


def _parts(x: Sym) -> tuple[Sym, Sym]:
    """A complex x's real and imaginary parts (a complex32's float16, exact, as CPU's at::real / at::imag views)."""
    from torchtpu.ops.complex import imag, real

    return real(x), imag(x)


def _correction(correction: Any) -> float:
    """ATen's correction.value_or(1).toDouble(): a complex one's real part (ops/cpu_raise_checks2.py refused one
    with an imaginary part)."""
    return 1 if correction is None else checked_scalar(correction, torch.float64)


@lower(aten.var.correction, static=("correction",))
def var(self: Sym, dim: list[int] | None = None, *, correction: float | None = None, keepdim: bool = False,
        dtype: torch.dtype | None = None) -> Sym:
    return _var(self, P.canon_dims(dim if dim else None, self.ndim), _correction(correction), keepdim, dtype)


@lower(aten.std.correction, static=("correction",))
def std(self: Sym, dim: list[int] | None = None, *, correction: float | None = None, keepdim: bool = False,
        dtype: torch.dtype | None = None) -> Sym:
    return _var(self, P.canon_dims(dim if dim else None, self.ndim), _correction(correction), keepdim, dtype,
                take_sqrt=True)


@lower(aten.std_mean.correction, static=("correction",))
def std_mean(self: Sym, dim: list[int] | None = None, *, correction: float | None = None, keepdim: bool = False
             ) -> tuple[Sym, Sym]:
    """CPU's std_var_mean kernel: the root of the double variance (upstream's decomposition took it of var_mean's
    float32 variance: inf where the variance overflows float32 and the deviation does not; fuzz seed 39)."""
    dims = P.canon_dims(dim if dim else None, self.ndim)
    return _var(self, dims, _correction(correction), keepdim, take_sqrt=True), _welford_mean(self, dims, keepdim)


@lower(aten.var_mean.correction, static=("correction",))
def var_mean(self: Sym, dim: list[int] | None = None, *, correction: float | None = None, keepdim: bool = False
             ) -> tuple[Sym, Sym]:
    dims = P.canon_dims(dim if dim else None, self.ndim)
    return _var(self, dims, _correction(correction), keepdim), _welford_mean(self, dims, keepdim)


def _welford_mean(x: Sym, dims: tuple[int, ...], keepdim: bool) -> Sym:
    """var_mean's mean as ATen's CPU kernel (WelfordOps) leaves it: once the running mean is +-inf, the next
    element's update is inf - inf, NaN, so a non-finite element anywhere but last in the reduction gives NaN
    (CPU's mean(), a sum, gives inf there). The last element of any visiting order over the reduced dims is the
    one at each dim's last index, so the rule holds for CPU's every iteration order and its threads' combine
    steps alike. A complex x: each part on its own, as ATen's var_mean of its real and imaginary parts."""
    if x.dtype.is_complex:
        z = P.convert(x, P.complex_for(x.dtype))
        re, im = (P.convert(_welford_mean(part, dims, keepdim), P.COMPLEX_PART[z.dtype]) for part in _parts(x))
        return P.convert(P.emit1("complex", [re, im]), x.dtype)
    mean = _mean(x, dims, keepdim, None)
    if not dims or any(x.shape[d] == 0 for d in dims) or not x.dtype.is_floating_point:
        return mean
    before_last = P.compare("LT", P.iota(x.shape, dims[0]), x.shape[dims[0]] - 1)
    for d in dims[1:]:
        before_last = P.emit1("or", [before_last, P.compare("LT", P.iota(x.shape, d), x.shape[d] - 1)])
    early = P.emit1("and", [P.emit1("not", [P.emit1("is_finite", [x])]), before_last])
    return P.where(P.reduce(early, "or", dims, keepdim), P.full(math.nan, mean.shape, mean.dtype), mean)


def _logical(self: Sym, kind: str, dims: tuple[int, ...], keepdim: bool = False,
             dtype: torch.dtype | None = None) -> Sym:
    """`dtype`: an out= tensor's (out_rules.ITERATOR_WRITES_OUT): CPU's allany_impl reduces the input cast to it
    (a float 0.5 into a uint8 out is 0: all is False) where it has more than one element; one element is
    converted to bool directly."""
    if dtype == torch.uint8 and self.numel() > 1:
        self = P.convert(self, torch.uint8)
    out = P.reduce(P.compare("NE", self, 0), kind, dims, keepdim)
    if dtype is not None:
        return P.convert(out, dtype)
    return P.convert(out, torch.uint8) if self.dtype == torch.uint8 else out  # ATen keeps uint8 (legacy)


@lower(aten.all.default)
def all_(self: Sym, *, dtype: torch.dtype | None = None) -> Sym:
    return _logical(self, "and", tuple(range(self.ndim)), dtype=dtype)


@lower(aten.all.dim, aten.all.dims)
def all_dim(self: Sym, dim: Any = None, keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Sym:
    return _logical(self, "and", P.canon_dims(dim, self.ndim), keepdim, dtype)


@lower(aten.any.default)
def any_(self: Sym, *, dtype: torch.dtype | None = None) -> Sym:
    return _logical(self, "or", tuple(range(self.ndim)), dtype=dtype)


@lower(aten.any.dim, aten.any.dims)
def any_dim(self: Sym, dim: Any = None, keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Sym:
    return _logical(self, "or", P.canon_dims(dim, self.ndim), keepdim, dtype)


def _cumulative(x: Sym, kind: str, dim: int, dtype: torch.dtype | None) -> Sym:
    out = _acc_dtype(x, dtype)
    if x.ndim == 0:
        return P.convert(x, out)
    d = P.canon_dim(dim, x.ndim)
    x = P.convert(x, out)
    if kind == "prod" and out.is_complex and x.shape[d]:  # ATen's scan starts from 1: its first element is 1 * x[0]
        head = P.slice_dim(x, d, 0, 1)                   # (c10::complex's product: an infinite part times 0 is NaN)
        x = P.concat([P.full(1, head.shape, out) * head, P.slice_dim(x, d, 1, x.shape[d])], d)
    return P.emit1("cumulative", [x], kind=kind, dimension=d)


@lower(aten.cumsum.default)
def cumsum(self: Sym, dim: int, *, dtype: torch.dtype | None = None) -> Sym:
    return _cumulative(self, "sum", dim, dtype)


@lower(aten.cumprod.default)
def cumprod(self: Sym, dim: int, *, dtype: torch.dtype | None = None) -> Sym:
    return _cumulative(self, "prod", dim, dtype)


def _inplace_dtype(self: Sym, dtype: torch.dtype | None) -> torch.dtype | None:
    """cumsum_ / cumprod_: ATen's structured kernel gives the result self's dtype, so a bool self (only a 0-d or
    empty one gets past CPU's dispatch, ops/arg_order_checks.py) keeps its values instead of becoming int64;
    every other self computes as the functional op and is cast into self."""
    return torch.bool if dtype is None and self.dtype == torch.bool else dtype


@lower(aten.cumsum_.default)
def cumsum_(self: Sym, dim: int, *, dtype: torch.dtype | None = None) -> Sym:
    return _cumulative(self, "sum", dim, _inplace_dtype(self, dtype))


@lower(aten.cumprod_.default)
def cumprod_(self: Sym, dim: int, *, dtype: torch.dtype | None = None) -> Sym:
    return _cumulative(self, "prod", dim, _inplace_dtype(self, dtype))


@lower(aten.logsumexp.default)
def logsumexp(self: Sym, dim: list[int], keepdim: bool = False, dtype: torch.dtype | None = None) -> Sym:
    """ATen's logsumexp_out_impl: the max (of the real parts, for a complex input) taken out, an infinite max
    taken as 0. `dtype`, an out= tensor's (out_rules.ITERATOR_WRITES_OUT): the exponentials are summed into it and
    the log taken there, the max added in the common type of the two."""
    x = P.convert(self, torch.float32) if not (self.dtype.is_floating_point or self.dtype.is_complex) else self
    dims = P.canon_dims(dim if dim else None, x.ndim)
    if not dims:
        return x
    if not dim and not keepdim and x.ndim and 0 not in x.shape:  # ATen's squeeze of no dims keeps the max 1 x .. x 1
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * x.ndim}")
    if x.dtype.is_complex:
        from torchtpu.ops.complex import real

        m = P.reduce(real(x), "max", dims, True)
        m = P.where(P.compare("EQ", P.emit1("abs", [m]), P.full(float("inf"), m.shape, m.dtype)), P.zeros_like(m), m)
        s = P.reduce(P.float_unary("exponential", x - P.convert(P.broadcast_to(m, x.shape), x.dtype)), "sum", dims,
                     True)
        y = P.float_unary("log", s) + P.convert(m, x.dtype)
        return y if keepdim else P.reshape(y, tuple(d for i, d in enumerate(x.shape) if i not in dims))
    m = P.reduce(x, "max", dims, True)
    m = P.where(P.emit1("is_finite", [m]), m, P.zeros_like(m))
    e = P.emit1("exponential", [x - P.broadcast_to(m, x.shape)])
    if dtype is None or dtype == x.dtype:
        y = P.emit1("log", [P.reduce(e, "sum", dims, True)]) + m
    else:
        common = torch.promote_types(dtype, x.dtype)
        logs = P.float_unary("log", _sum(P.convert(e, dtype), dims, True, dtype))
        y = P.convert(P.convert(logs, common) + P.convert(m, common), dtype)
    return y if keepdim else P.reshape(y, tuple(d for i, d in enumerate(x.shape) if i not in dims))


@lower(aten.linalg_vector_norm.default, static=("ord",))
def vector_norm(self: Sym, ord: float = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
                *, dtype: torch.dtype | None = None) -> Sym:
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {aten_type_name(self.dtype)}")
    if self.dtype == torch.complex32 and dtype is None:  # CPU's ComplexHalf: complex64's norm, rounded once
        return P.convert(vector_norm(P.convert(self, torch.complex64), ord, dim, keepdim), torch.float16)
    if self.dtype.is_complex:  # |x| of the (complex) computation dtype, the result of its parts' dtype
        from torchtpu.ops.complex import complex_abs

        z = P.convert(self, dtype or self.dtype)
        return vector_norm(complex_abs(z), ord, dim, keepdim, dtype=P.COMPLEX_PART[z.dtype])
    out_dtype = dtype or self.dtype
    # ATen accumulates reduced-precision norms in float32 (opmath) and rounds once at the end: |x|^p summed and
    # raised to 1/p in bf16 would round twice, so a size-1 norm would not be exactly |x| (normalize's gradient
    # g/|x| - g/|x| then does not cancel).
    compute = torch.float32 if out_dtype in (torch.bfloat16, torch.float16) else out_dtype
    x = P.convert(self, compute)
    dims = P.canon_dims(dim, x.ndim)
    a = P.emit1("abs", [x])
    # one element per result: CPU gives |x| itself for every ord but 0 (|x|^p summed and raised to 1/p would
    # round, or overflow to inf for a large p: norm(tensor(7.99), 1e30) is 7.99)
    if ord == float("inf") or (ord != 0 and all(x.shape[d] == 1 for d in dims)):
        y = P.reduce(a, "max", dims, keepdim)
    elif ord == float("-inf"):
        y = P.reduce(a, "min", dims, keepdim)
    elif ord == 0:
        y = P.reduce(P.convert(P.compare("NE", a, 0), x.dtype), "sum", dims, keepdim)
    elif ord == 1 or any(x.shape[d] == 0 for d in dims):  # no elements: 0 for every ord with an identity, NaN's too
        y = P.reduce(a, "sum", dims, keepdim)
    elif ord == 2:
        y = P.emit1("sqrt", [P.reduce(a * a, "sum", dims, keepdim)])
    else:
        y = P.binary("power", P.reduce(P.binary("power", a, float(ord)), "sum", dims, keepdim), 1.0 / float(ord))
    return P.convert(y, out_dtype)


def _cumextreme(x: Sym, dim: int, kind: str) -> tuple[Sym, Sym]:
    """cummax / cummin: the running extreme and the index of its latest occurrence (NaN sticks, as ATen)."""
    if x.ndim == 0:
        if dim not in (-1, 0):  # ATen's cummax_helper/cummin_helper check, in its words (fuzz seed 24)
            raise IndexError(f"cum{kind}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return x, P.full(0, (), torch.int64)
    d = P.canon_dim(dim, x.ndim)
    if x.shape[d] == 0:
        return x, P.full(0, x.shape, torch.int64)
    src = P.convert(x, torch.int64 if x.dtype == torch.bool else x.dtype)
    values = P.emit1("cumulative", [src], kind=kind, dimension=d)
    hit = P.compare("EQ", src, values)
    if x.dtype.is_floating_point:
        hit = P.emit1("or", [hit, P.compare("NE", src, src)])
    pos = P.where(hit, P.iota(x.shape, d), P.full(-1, x.shape, torch.int64))
    return P.convert(values, x.dtype), P.emit1("cumulative", [pos], kind="max", dimension=d)


@lower(aten.cummax.default)
def cummax(self: Sym, dim: int) -> tuple[Sym, Sym]:
    return _cumextreme(self, dim, "max")


@lower(aten.cummin.default)
def cummin(self: Sym, dim: int) -> tuple[Sym, Sym]:
    return _cumextreme(self, dim, "min")


@lower(aten._logcumsumexp.default)
def logcumsumexp(self: Sym, dim: int) -> Sym:
    """log(cumsum(exp(x))): each prefix is shifted by its own running max (an (n, n) masked table along the
    dimension), so small early terms do not underflow against a large later maximum. A complex tensor: CPU's
    scan (ops/logcumsumexp_complex.py)."""
    if self.dtype.is_complex:
        d = P.canon_dim(dim, max(self.ndim, 1))
        if self.ndim == 0 or self.shape[d] == 0:  # CPU gives a 0-d tensor itself
            return self
        return logcumsumexp_complex.logcumsumexp(self, d)
    x = P.convert(self, torch.float64 if self.dtype == torch.float64 else torch.float32)
    d = P.canon_dim(dim, x.ndim)  # a 0-d tensor's dim is in [-1, 0] too
    if x.ndim == 0:
        return P.convert(x, self.dtype)
    n = x.shape[d]
    if n == 0:
        return P.convert(x, self.dtype)
    moved = P.transpose(x, [i for i in range(x.ndim) if i != d] + [d])
    rows = moved.shape[:-1]
    shift = P.emit1("cumulative", [moved], kind="max", dimension=moved.ndim - 1)
    shift = P.where(P.emit1("is_finite", [shift]), shift, P.zeros_like(shift))
    xj = P.broadcast_to(P.reshape(moved, (*rows, 1, n)), (*rows, n, n))
    ci = P.broadcast_to(P.reshape(shift, (*rows, n, 1)), (*rows, n, n))
    keep = P.compare("LE", P.iota((*rows, n, n), len(rows) + 1), P.iota((*rows, n, n), len(rows)))
    terms = P.where(keep, P.emit1("exponential", [xj - ci]), P.zeros_like(xj))
    out = P.emit1("log", [P.reduce(terms, "sum", (len(rows) + 1,))]) + shift
    nan = P.reduce(P.convert(P.compare("NE", xj, xj), torch.int64) * P.convert(keep, torch.int64), "sum",
                   (len(rows) + 1,))
    out = P.where(P.compare("GT", nan, 0), P.full(float("nan"), out.shape, out.dtype), out)
    back = [0] * x.ndim
    order = [i for i in range(x.ndim) if i != d] + [d]
    for pos, i in enumerate(order):
        back[i] = pos
    return P.convert(P.transpose(out, back), self.dtype)
