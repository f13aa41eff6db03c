"""Lowerings of further random samplers (cauchy_, log_normal_, geometric_, multinomial) and of counting ops:
isin, histc, histogram, bincount and repeat_interleave (the last two have data-dependent sizes: one count is
read back, as in `dynamic`)."""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.execution import eager
from torchtpu.ops import cpu_raise_checks3, factory, operand_checks, sampler_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.sorting import sort_dim
from torchtpu.ops.tracing import Sym, aten_type_name
from torchtpu.ops.view_checks import isin_sorts

aten = torch.ops.aten


def _uniform(shape: tuple[int, ...], rng: Sym) -> Sym:
    """Uniform in (0, 1): the open interval keeps logs and tangents finite."""
    u = P.emit1("rng", [rng], shape=shape, dtype="float32", distribution="uniform")
    return P.emit1("maximum", [u, P.full(2.0 ** -24, shape, torch.float32)])


@lower(aten.cauchy_.default, random=True, static=("median", "sigma"))
def cauchy_(self: Sym, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    sampler_checks.check_cauchy(sigma)
    u = _uniform(self.shape, rng)
    return P.convert(P.emit1("tan", [(u - 0.5) * math.pi]) * float(sigma) + float(median), self.dtype)


@lower(aten.log_normal_.default, random=True, static=("mean", "std"))
def log_normal_(self: Sym, mean: float = 1.0, std: float = 2.0, *, generator: Any = None, rng: Sym) -> Sym:
    sampler_checks.check_log_normal(std)
    z = P.emit1("rng", [rng], shape=self.shape, dtype="float32", distribution="normal")
    return P.convert(P.emit1("exponential", [z * float(std) + float(mean)]), self.dtype)


@lower(aten.geometric_.default, random=True, static=("p",))
def geometric_(self: Sym, p: float, *, generator: Any = None, rng: Sym) -> Sym:
    sampler_checks.check_geometric(p)
    u = _uniform(self.shape, rng)
    k = P.emit1("ceil", [P.emit1("log", [u]) / math.log1p(-p)]) if p < 1 else P.full(1.0, self.shape, torch.float32)
    return P.convert(P.emit1("maximum", [k, P.full(1.0, self.shape, torch.float32)]), self.dtype)


@lower(aten.multinomial.default, random=True)
def multinomial(self: Sym, num_samples: int, replacement: bool = False, *, generator: Any = None, rng: Sym
                ) -> Sym:
    probs = P.convert(self if self.ndim == 2 else P.reshape(self, (1, -1)), torch.float32)
    rows, n = probs.shape
    zero = operand_checks.check_multinomial(probs, replacement, num_samples)
    if replacement:  # inverse CDF: count the categories whose cumulative mass is below u
        cdf = P.emit1("cumulative", [probs], kind="sum", dimension=1)
        total = P.slice_dim(cdf, 1, n - 1, n)
        u = P.emit1("rng", [rng], shape=(rows, num_samples), dtype="float32", distribution="uniform")
        u = u * P.broadcast_to(total, (rows, num_samples))
        below = P.compare("LE", P.broadcast_to(P.reshape(cdf, (rows, 1, n)), (rows, num_samples, n)),
                          P.broadcast_to(P.reshape(u, (rows, num_samples, 1)), (rows, num_samples, n)))
        idx = P.reduce(P.convert(below, torch.int64), "sum", (2,))
        idx = P.emit1("minimum", [idx, P.full(n - 1, idx.shape, torch.int64)])
    else:  # Gumbel top-k: sampling without replacement in proportion to the weights
        u = _uniform((rows, n), rng)
        keys = P.emit1("log", [probs]) - P.emit1("log", [-P.emit1("log", [u])])
        keys = P.where(P.compare("GT", probs, 0.0), keys, P.full(-math.inf, keys.shape, torch.float32))
        _, order = sort_dim(keys, 1, descending=True)
        idx = P.slice_dim(order, 1, 0, num_samples)
    idx = operand_checks.tie(idx, zero)
    return idx if self.ndim == 2 else P.reshape(idx, (num_samples,))


def _isin(elements: Sym, test: Sym, invert: bool, compute: torch.dtype | None = None) -> Sym:
    """The membership test in `compute` (default: the operands' result type, as isin_default_kernel_cpu)."""
    if compute is None:
        compute, _ = P.result_dtype(elements, test)
    e = P.convert(elements, compute)
    t = P.reshape(P.convert(test, compute), (-1,))
    m = t.shape[0]
    if m == 0:
        return P.full(invert, elements.shape, torch.bool)
    a = P.broadcast_to(P.reshape(e, (*e.shape, 1)), (*e.shape, m))
    b = P.broadcast_to(P.reshape(t, (1,) * e.ndim + (m,)), (*e.shape, m))
    hit = P.reduce(P.compare("EQ", a, b), "or", (e.ndim,))
    return P.emit1("not", [hit]) if invert else hit


def _isin_sorting(elements: Sym, test: Sym, invert: bool) -> Sym:
    """ATen's isin_sorting with assume_unique: both flattened and concatenated (cat's promoted dtype), sorted
    stably, and each value marked by whether the next in sorted order equals it (the last: `invert`). Elements that
    repeat (which assume_unique rules out) mark each other, as on CPU (fuzz seed 34: True for CPU's False)."""
    dtype = torch.promote_types(elements.dtype, test.dtype)
    n = math.prod(elements.shape)
    both = P.concat([P.reshape(P.convert(elements, dtype), (n,)),
                     P.reshape(P.convert(test, dtype), (math.prod(test.shape),))], 0)
    total = both.shape[0]
    last = P.full(invert, (1,), torch.bool)
    if total == 1:
        return P.reshape(last, elements.shape)
    values, order = P.emit("sort", [both], dimension=0, descending=False, stable=True)
    same = P.compare("NE" if invert else "EQ", P.slice_dim(values, 0, 1, total), P.slice_dim(values, 0, 0, total - 1))
    marks = P.concat([same, last], 0)
    _, inverse = P.emit("sort", [order], dimension=0, descending=False, stable=True)  # mask[order[k]] = marks[k]
    mask = P.emit1("gather_axis", [marks, inverse], dimension=0)
    return P.reshape(P.slice_dim(mask, 0, 0, n), elements.shape)


@lower(aten.isin.Tensor_Tensor)
def isin(elements: Sym, test_elements: Sym, *, assume_unique: bool = False, invert: bool = False) -> Sym:
    for operand in (elements, test_elements):  # each operand's own dtype, not the common one
        if operand.dtype == torch.bool or operand.dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {aten_type_name(operand.dtype)}")
    return _isin_paths(elements, test_elements, assume_unique, invert)


def _isin_paths(elements: Sym, test: Sym, assume_unique: bool, invert: bool) -> Sym:
    """ATen's heuristic (numpy's): the sorting algorithm for many test elements; without assume_unique it runs on
    unique values and equals the plain membership test, but in cat's dtype (promote_types: a 0-d operand or a
    wrapped Scalar, float64 for a Python float, counts in full; fuzz seed 52: isin(1e30, float32 tensor holding
    float32(1e30)) is False on CPU), where the default kernel compares in the result type."""
    n, m = math.prod(elements.shape), math.prod(test.shape)
    if not isin_sorts(n, m):
        return _isin(elements, test, invert)
    if assume_unique:
        return _isin_sorting(elements, test, invert)
    return _isin(elements, test, invert, torch.promote_types(elements.dtype, test.dtype))


def _check_isin_scalar(value: Any) -> None:
    """ATen's check_for_unsupported_isin_dtype on a Scalar's type (the tensor's dtype is refused by
    dtype_refusals): a bool or complex Scalar is refused (Bool / ComplexDouble)."""
    if isinstance(value, (bool, complex)):
        name = "Bool" if isinstance(value, bool) else "ComplexDouble"
        raise RuntimeError(f"Unsupported input type encountered for isin(): {name}")


@lower(aten.isin.Tensor_Scalar)
def isin_scalar(elements: Sym, test_element: Any, *, assume_unique: bool = False, invert: bool = False) -> Sym:
    _check_isin_scalar(test_element)
    _, dtype = P.result_dtype(elements, test_element)
    return _isin(elements, P.full(test_element, (1,), dtype), invert)


@lower(aten.isin.Scalar_Tensor)
def isin_scalar_tensor(element: Any, test_elements: Sym, *, assume_unique: bool = False, invert: bool = False
                       ) -> Sym:
    _check_isin_scalar(element)
    if math.prod(test_elements.shape) >= 10:  # the sorting path: the Scalar as a wrapped tensor of its own type
        wrapped = torch.float64 if isinstance(element, float) else torch.int64
        return _isin_paths(P.full(element, (), wrapped), test_elements, assume_unique, invert)
    _, dtype = P.result_dtype(test_elements, element)
    return _isin(P.full(element, (), dtype), test_elements, invert)


def _bins(x: Sym, bins: int, lo: Sym, hi: Sym, dtype: torch.dtype) -> Sym:
    """Counts (float) of x (flat, float32/float64) in `bins` equal bins of [lo, hi], as CPU's histogramdd linear
    kernel computes them in the input's `dtype` (float16/bfloat16 rounded after each operation): the edges are
    linspace(lo, hi, bins + 1), whose step (hi - lo) / bins in `dtype` makes every edge NaN where it overflows, so
    nothing is counted; else x in [lo, hi] lands in bin int64((x - lo) * bins / (hi - lo)), the last edge in the
    last bin, and an overflowing product (inf, whose int64 is INT64_MIN, clamped) in bin 0."""
    n = x.shape[0]
    if n == 0:
        return P.full(0, (bins,), x.dtype)
    narrow = dtype in (torch.float16, torch.bfloat16)
    r = (lambda v: P.convert(P.convert(v, dtype), x.dtype)) if narrow else (lambda v: v)  # noqa: E731
    lo, hi = r(lo), r(hi)
    width = r(hi - lo)
    step = r(width / float(bins))
    lo_b, hi_b = P.broadcast_to(lo, (n,)), P.broadcast_to(hi, (n,))
    finite_step = P.broadcast_to(P.compare("LT", P.emit1("abs", [step]), float("inf")), (n,))
    inside = P.emit1("and", [P.emit1("and", [P.compare("GE", x, lo_b), P.compare("LE", x, hi_b)]), finite_step])
    pos = r(r(r(x - lo_b) * float(bins)) / P.broadcast_to(width, (n,)))
    pos = P.where(P.compare("LT", pos, float("inf")), P.emit1("floor", [pos]), P.zeros_like(pos))  # pos >= 0 or NaN
    idx = P.convert(P.emit1("clamp", [P.full(0.0, (n,), x.dtype), pos, P.full(float(bins - 1), (n,), x.dtype)]),
                    torch.int64)
    w = P.where(inside, P.full(1.0, (n,), x.dtype), P.full(0.0, (n,), x.dtype))
    return P.emit1("index_add", [P.full(0.0, (bins,), x.dtype), idx, w], dimension=0)


def _range(x: Sym, lo: float, hi: float, next_value: bool = False) -> tuple[Sym, Sym]:
    """histc's outer edges: the given ones, else the data's range; one value v widened to v -+ 1 or, with
    `next_value` (a float32/float64 input: ATen's bins_edges_correction), to the farther of that and the type's
    next value (v = 1e8 in float32: 1e8 -+ 8, where v -+ 1 rounds back to v)."""
    if lo == hi:  # the data's own range (computed on the device)
        if x.shape[0] == 0:  # no data: [0, 1], as ATen
            return P.const(0.0, x.dtype), P.const(1.0, x.dtype)
        else:
            lo_s, hi_s = P.reduce(x, "min", (0,)), P.reduce(x, "max", (0,))
        same = P.compare("EQ", lo_s, hi_s)
        down, up = lo_s - 1.0, hi_s + 1.0
        if next_value:
            info = torch.finfo(x.dtype)
            down = P.emit1("minimum", [P.emit1("nextafter", [lo_s, P.const(info.min, x.dtype)]), down])
            up = P.emit1("maximum", [P.emit1("nextafter", [hi_s, P.const(info.max, x.dtype)]), up])
        return P.where(same, down, lo_s), P.where(same, up, hi_s)
    return P.const(float(lo), x.dtype), P.const(float(hi), x.dtype)


@lower(aten.histc.default, static=("min", "max"))
def histc(self: Sym, bins: int = 100, min: Any = 0, max: Any = 0) -> Sym:  # noqa: A002
    if bins <= 0:  # histogramdd_check_inputs, before the range (tpu's index_add raised IndexError)
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    min, max = _as_double(min), _as_double(max)  # noqa: A001
    operand_checks.check_histc_range(float(min), float(max))
    zero = operand_checks.check_histc_edges(self, float(min), float(max))
    x = P.reshape(P.convert(self, torch.float64 if self.dtype == torch.float64 else torch.float32), (-1,))
    lo, hi = _range(x, float(min), float(max), self.dtype in (torch.float32, torch.float64))
    if float(min) == float(max) and x.shape[0] and self.dtype.is_floating_point:
        zero = zero + _check_data_range(x, self.dtype)
    return operand_checks.tie(P.convert(_bins(x, bins, lo, hi, self.dtype), self.dtype), zero)


def _as_double(v: Any) -> float:
    """Scalar.to<double>(): a complex Scalar with an imaginary part is refused in c10's words."""
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError("value cannot be converted to type double without overflow")
        return v.real
    return float(v)


def _check_data_range(x: Sym, dtype: torch.dtype) -> Sym:
    """histc_select_outer_bin_edges on the data's own range (when the program runs): a NaN makes it [-nan, -nan]
    (CPU's words), an inf [-inf, inf] or one finite end (whose digits the IR cannot print: refused in our words,
    CPU's class); a bfloat16 single value beyond 2**53, which v -+ 1 in double leaves as it is, an empty range."""
    lo_s, hi_s = P.reduce(x, "min", (0,)), P.reduce(x, "max", (0,))
    nan = P.reduce(P.convert(P.compare("NE", x, x), torch.int64), "max", (0,))
    no_nan = P.compare("EQ", nan, 0)
    low_inf, high_inf = P.compare("EQ", lo_s, float("-inf")), P.compare("EQ", hi_s, float("inf"))
    both = P.emit1("and", [no_nan, P.emit1("and", [low_inf, high_inf])])
    one = P.emit1("and", [no_nan, P.emit1("and", [P.emit1("not", [both]), P.emit1("or", [low_inf, high_inf])])])
    has_nan = P.emit1("not", [no_nan])
    if x.shape[0] > 1 and dtype != torch.bfloat16:  # CPU's vectorized aminmax gives -nan (probed)
        zero = operand_checks.data_check(has_nan, "torch.histc: range of [-nan, -nan] is not finite")
    else:  # the data's NaN, printed with its sign (NaNs of both signs: refused in our words)
        isnan, sign = P.compare("NE", x, x), P.emit1("copysign", [P.full(1.0, x.shape, x.dtype), x])
        neg = P.reduce(P.convert(P.emit1("and", [isnan, P.compare("LT", sign, 0.0)]), torch.int64), "max", (0,))
        pos = P.reduce(P.convert(P.emit1("and", [isnan, P.compare("GT", sign, 0.0)]), torch.int64), "max", (0,))
        zero = operand_checks.data_check(P.compare("GT", neg - pos, 0),
                                         "torch.histc: range of [-nan, -nan] is not finite")
        zero = zero + operand_checks.data_check(P.compare("GT", pos - neg, 0),
                                                "torch.histc: range of [nan, nan] is not finite")
        zero = zero + operand_checks.data_check(P.compare("GT", pos + neg, 1),
                                                "torch.histc: range of the data is not finite (NaN)")
    zero = zero + operand_checks.data_check(both, "torch.histc: range of [-inf, inf] is not finite")
    zero = zero + operand_checks.data_check(one, "torch.histc: range of the data is not finite (an infinite value)")
    if dtype == torch.bfloat16:
        same = P.emit1("and", [P.compare("EQ", lo_s, hi_s), P.compare("GT", P.emit1("abs", [lo_s]), 2.0 ** 53)])
        zero = zero + operand_checks.data_check(same, "torch.histc: max must be larger than min")
    return zero


@lower(aten.histogram.bin_ct, static=("range",), prepare=cpu_raise_checks3.histogram_data_range(False))
def histogram(self: Sym, bins: int = 100, *, range: list[float] | None = None,  # noqa: A002
              weight: Sym | None = None, density: bool = False) -> tuple[Sym, Sym]:
    x = P.reshape(P.convert(self, torch.float64 if self.dtype == torch.float64 else torch.float32), (-1,))
    bounds = (0.0, 1.0) if range is None and x.shape[0] == 0 else range
    if bounds is not None and float(bounds[0]) == float(bounds[1]):  # an empty range: widened by 0.5 each side
        bounds = (float(bounds[0]) - 0.5, float(bounds[1]) + 0.5)
    if self.dtype in (torch.bfloat16, torch.float16) and bounds is not None:
        # ATen's edges are linspace in the input's type; each value's bin is found among those edges
        edges = factory._real_linspace(float(bounds[0]), float(bounds[1]), bins + 1, self.dtype)
        hist = P.convert(_dd_hist(P.reshape(x, (x.shape[0], 1)), [edges], weight, False, torch.float32),
                         self.dtype)
        if density:  # ATen's hist.div_(hist.sum().item()) then hist.div_(edges.diff()), in the input's type
            f32 = lambda v: P.convert(v, torch.float32)  # noqa: E731
            total = P.convert(P.reduce(f32(hist), "sum", (0,)), self.dtype)
            hist = P.convert(f32(hist) / P.broadcast_to(f32(total), (bins,)), self.dtype)
            widths = P.convert(f32(P.slice_dim(edges, 0, 1, bins + 1)) - f32(P.slice_dim(edges, 0, 0, bins)),
                               self.dtype)
            hist = P.convert(f32(hist) / f32(widths), self.dtype)
        return hist, edges
    # histogramdd of one column: the edges a linspace as CPU computes it, each value's bin found among them
    edges = _dd_edges(P.reshape(x, (x.shape[0], 1)), [bins], None if range is None else list(range), x.dtype)[0]
    hist = _dd_hist(P.reshape(x, (x.shape[0], 1)), [edges], weight, density, x.dtype)
    return P.convert(hist, self.dtype), P.convert(edges, self.dtype)


@lower(aten.histogram.bins_tensor)
def histogram_edges(self: Sym, bins: Sym, *, weight: Sym | None = None, density: bool = False
                    ) -> tuple[Sym, Sym]:
    """Counts in [e_i, e_i+1) for the given edges (the last bin includes its right edge), as histogramdd."""
    acc = torch.float64 if self.dtype == torch.float64 else torch.float32
    x = P.reshape(P.convert(self, acc), (-1,))
    e = P.convert(bins, acc)
    n, k = x.shape[0], e.shape[0] - 1
    if n == 0 or k <= 0:  # density of no data is 0/0
        return P.full(float("nan") if density else 0, (max(k, 0),), self.dtype), bins
    # ATen's histogram is histogramdd of one dim: counted in [edges[0], edges[-1]], the bin by std::upper_bound
    # over the edges in their given order (edges that do not increase give the C++ algorithm's answer)
    hist = _dd_hist(P.reshape(x, (n, 1)), [e], weight, density, acc)
    return P.convert(hist, self.dtype), bins


# --- histogramdd ---------------------------------------------------------------------------------------------------

def _upper_bound(seq: Sym, x: Sym) -> Sym:
    """std::upper_bound(seq, seq + n, x) - seq for each x (M,), step for step (the edges need not be sorted: ATen
    searches the given order, so the result is the C++ algorithm's, not a count)."""
    n, m = seq.shape[0], x.shape[0]
    first = P.full(0, (m,), torch.int64)
    count = P.full(n, (m,), torch.int64)
    for _ in range(max(n, 1).bit_length()):
        active = P.compare("GT", count, 0)
        step = P.emit1("shift_right_arithmetic", [count, P.full(1, (m,), torch.int64)])
        it = first + step
        probe = P.emit1("index_select", [seq, P.emit1("minimum", [it, P.full(n - 1, (m,), torch.int64)])],
                        dimension=0)
        right = P.emit1("and", [active, P.emit1("not", [P.compare("LT", x, probe)])])
        first = P.where(right, it + 1, first)
        count = P.where(active, P.where(right, count - step - 1, step), count)
    return first


def _dd_input(self: Sym) -> tuple[Sym, torch.dtype]:
    acc = torch.float64 if self.dtype == torch.float64 else torch.float32
    return P.reshape(P.convert(self, acc), (-1, self.shape[-1])), acc


def _fma(c: Sym, a: Sym, k: Sym) -> Sym:
    """c + a * k rounded once in float64 (all (n,) float64; k: integers below 2**26): factory._fma64 with tensor
    bounds and step (Veltkamp's split of a, Dekker's exact product, Knuth's TwoSum)."""
    big = a * 134217729.0
    a_hi = big - (big - a)
    p = k * a
    err = (k * a_hi - p) + k * (a - a_hi)
    s = p + c
    bb = s - c
    exact = s + (((c - (s - bb)) + (p - bb)) + err)
    return P.where(P.emit1("is_finite", [exact]), exact, s)


def _linspace(lo: Sym, hi: Sym, steps: int, dtype: torch.dtype) -> Sym:
    """ATen's linspace kernel (steps >= 2) between 0-d bounds of `dtype`: the step (end - start) / (steps - 1) in
    the type, then start + step * i below steps // 2 and end - step * (steps - 1 - i) from there, each a fused
    multiply-add rounded once (float32: exact in float64 and rounded to float32; the other types: each operation
    rounded in the type)."""
    step = (hi - lo) / float(steps - 1)
    i = P.iota((steps,), 0)
    rev = P.full(steps - 1, (steps,), torch.int64) - i
    b = lambda v: P.broadcast_to(P.convert(v, acc), (steps,))  # noqa: E731
    if dtype in (torch.float32, torch.float64):
        acc = torch.float64
        f = P.convert(i, acc), P.convert(rev, acc)
        if dtype == torch.float32:  # a float32 step times an integer below 2**29 is exact in float64
            up, down = b(lo) + b(step) * f[0], b(hi) - b(step) * f[1]
        else:
            up, down = _fma(b(lo), b(step), f[0]), _fma(b(hi), P.emit1("negate", [b(step)]), f[1])
    else:
        acc = dtype
        up, down = b(lo) + b(step) * P.convert(i, acc), b(hi) - b(step) * P.convert(rev, acc)
    return P.convert(P.where(P.compare("LT", i, P.full(steps // 2, (steps,), torch.int64)), up, down), dtype)


def _dd_edges(x: Sym, bins: list[int], rng: list[float] | None, dtype: torch.dtype) -> list[Sym]:
    """ATen's outer edges (select_outer_bin_edges: the range, or the data's min and max; an empty range widened by
    0.5 each side, in double) and a linspace in the input's dtype per dim."""
    m, n = x.shape
    out = []
    for d in range(n):
        if rng is not None:
            left, right = float(rng[2 * d]), float(rng[2 * d + 1])
            if left == right:
                left, right = left - 0.5, right + 0.5
            lo, hi = P.const(left, dtype), P.const(right, dtype)
        elif m > 0:  # the data's own bounds; widened exactly (a float32 bound minus 0.5 rounds once either way)
            col = P.reshape(P.slice_dim(x, 1, d, d + 1), (m,))
            lo, hi = P.convert(P.reduce(col, "min", (0,)), dtype), P.convert(P.reduce(col, "max", (0,)), dtype)
            same = P.compare("EQ", lo, hi)
            lo, hi = P.where(same, lo - 0.5, lo), P.where(same, hi + 0.5, hi)
        else:
            lo, hi = P.const(0.0, dtype), P.const(1.0, dtype)
        steps = bins[d] + 1
        out.append(P.reshape(lo, (1,)) if steps == 1 else _linspace(lo, hi, steps, dtype))
    return out


def _dd_hist(x: Sym, edges: list[Sym], weight: Sym | None, density: bool, acc: torch.dtype) -> Sym:
    m, n = x.shape
    nb = [e.shape[0] - 1 for e in edges]
    total = 1
    for k in nb:
        total *= max(k, 0)
    keep = P.full(True, (m,), torch.bool)
    flat = P.full(0, (m,), torch.int64)
    for d, e in enumerate(edges):
        ea = P.convert(e, acc)
        col = P.reshape(P.slice_dim(x, 1, d, d + 1), (m,))
        k = nb[d]
        lo = P.broadcast_to(P.slice_dim(ea, 0, 0, 1), (m,))
        hi = P.broadcast_to(P.slice_dim(ea, 0, k, k + 1), (m,))
        keep = P.emit1("and", [keep, P.emit1("and", [P.compare("GE", col, lo), P.compare("LE", col, hi)])])
        pos = _upper_bound(ea, col) - 1
        pos = P.where(P.compare("EQ", pos, k), pos - 1, pos)
        pos = P.emit1("clamp", [P.full(0, (m,), torch.int64), pos, P.full(max(k - 1, 0), (m,), torch.int64)])
        flat = flat * k + pos
    w = P.full(1.0, (m,), acc) if weight is None else P.convert(P.reshape(weight, (-1,)), acc)
    w = P.where(keep, w, P.zeros_like(w))
    flat = P.where(keep, flat, P.full(total, (m,), torch.int64))
    hist = P.emit1("index_add", [P.full(0.0, (total + 1,), acc), flat, w], dimension=0) if m else \
        P.full(0.0, (total + 1,), acc)
    hist = P.reshape(P.slice_dim(hist, 0, 0, total), tuple(nb))
    if density:
        hist = hist / P.broadcast_to(P.reduce(hist, "sum", tuple(range(n))), hist.shape)
        for d, e in enumerate(edges):
            ea = P.convert(e, acc)
            widths = P.slice_dim(ea, 0, 1, nb[d] + 1) - P.slice_dim(ea, 0, 0, nb[d])
            shape = [1] * n
            shape[d] = nb[d]
            hist = hist / P.broadcast_to(P.reshape(widths, shape), hist.shape)
    return hist


@lower(aten._histogramdd_bin_edges.default, static=("range",), prepare=cpu_raise_checks3.histogram_data_range(True))
def histogramdd_bin_edges(self: Sym, bins: list[int], *, range: list[float] | None = None,  # noqa: A002
                          weight: Sym | None = None, density: bool = False) -> list[Sym]:
    operand_checks.check_histogramdd_bin_edges(self, list(bins), range)
    x, _ = _dd_input(self)
    return _dd_edges(x, list(bins), range, self.dtype)


@lower(aten._histogramdd_from_bin_cts.default, static=("range",),
       prepare=cpu_raise_checks3.histogram_data_range(True))
def histogramdd_from_bin_cts(self: Sym, bins: list[int], *, range: list[float] | None = None,  # noqa: A002
                             weight: Sym | None = None, density: bool = False) -> Sym:
    operand_checks.check_histogramdd_bin_cts(self, list(bins), range, weight)
    x, acc = _dd_input(self)
    edges = _dd_edges(x, list(bins), range, self.dtype)
    return P.convert(_dd_hist(x, edges, weight, density, acc), self.dtype)


@lower(aten._histogramdd_from_bin_tensors.default)
def histogramdd_from_bin_tensors(self: Sym, bins: list[Sym], *, weight: Sym | None = None,
                                 density: bool = False) -> Sym:
    operand_checks.check_histogramdd_bin_tensors(self, list(bins), weight)
    x, acc = _dd_input(self)
    return P.convert(_dd_hist(x, list(bins), weight, density, acc), self.dtype)


def _bincount_size(self: Sym, *, minlength: int) -> Sym:
    top = P.reduce(self, "max", (0,)) + 1 if self.shape[0] else P.const(0, torch.int64)
    return P.emit1("maximum", [P.convert(top, torch.int64), P.const(minlength, torch.int64)])


def _bincount(self: Sym, weights: Sym | None, *, size: int) -> Sym:
    # ATen: int64 counts; float32 weights sum in float32, any other weights in float64
    dtype = torch.int64 if weights is None else (torch.float32 if weights.dtype == torch.float32 else torch.float64)
    ones = P.full(1, self.shape, dtype) if weights is None else P.convert(weights, dtype)
    out = P.full(0, (size,), dtype)
    if self.shape[0] == 0:
        return out
    return P.emit1("index_add", [out, P.convert(self, torch.int64), ones], dimension=0)


def bincount(self: torch.Tensor, weights: torch.Tensor | None = None, minlength: int = 0) -> torch.Tensor:
    # ATen's _bincount_cpu: dispatched over the integral types of self, then _bincount_cpu_template's checks in order
    if self.dtype.is_floating_point or self.dtype.is_complex or self.dtype == torch.bool:
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{aten_type_name(self.dtype)}\'')
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if self.ndim == 1 and self.numel() == 0:
        return torch.zeros(int(minlength), dtype=torch.int64, device=self.device)
    if self.ndim != 1 or bool((self < 0).any()):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != self.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    size = int(eager.run("aten::bincount.size", _bincount_size, (self,), {"minlength": int(minlength)}).item())
    return eager.run("aten::bincount", _bincount, (self, weights), {"size": size})


def _repeat_total(repeats: Sym) -> Sym:
    return P.reduce(P.convert(repeats, torch.int64), "sum", (0,)) if repeats.shape[0] else P.const(0, torch.int64)


def _repeat_index(repeats: Sym, *, size: int) -> Sym:
    n = repeats.shape[0]
    if size == 0 or n == 0:
        return P.full(0, (size,), repeats.dtype)
    ends = P.emit1("cumulative", [P.convert(repeats, torch.int64)], kind="sum", dimension=0)
    pos = P.iota((size, n), 0)
    idx = P.reduce(P.convert(P.compare("GE", pos, P.broadcast_to(P.reshape(ends, (1, n)), (size, n))),
                             torch.int64), "sum", (1,))
    return P.convert(idx, repeats.dtype)


def repeat_interleave(repeats: torch.Tensor, *, output_size: int | None = None) -> torch.Tensor:
    # ATen's repeat_interleave_cpu: dispatched over the index types, then repeat_interleave_common's checks
    if repeats.dtype not in (torch.int32, torch.int64):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{aten_type_name(repeats.dtype)}\'')
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if output_size is None:
        output_size = int(eager.run("aten::repeat_interleave.size", _repeat_total, (repeats,), {}).item())
        if repeats.numel() and bool((repeats < 0).any()):
            raise RuntimeError("repeats can not be negative")
    return eager.run("aten::repeat_interleave", _repeat_index, (repeats,), {"size": int(output_size)})


def register(kernel: Any) -> None:
    kernel(aten.bincount.default, bincount, data_dependent=True)
    kernel(aten.repeat_interleave.Tensor, repeat_interleave, data_dependent=True)
