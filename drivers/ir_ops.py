"""The IR op set: one record per op (`ir.IROp`), its shape/dtype rule, cost rule (`C.*`, drivers/ir_costs.py) and
padding rule (`P.*`, drivers/ir_padding.py) side by side in one `define`. Drivers register their kernels and
emitters against these names (`ir.implements`); tests/test_ir_registry.py checks every op x every driver."""

from __future__ import annotations

from torchtpu.drivers import ir_costs as C
from torchtpu.drivers import ir_lowerings as L
from torchtpu.drivers import ir_padding as P
from torchtpu.drivers import ir_ragged_attention as RA
from torchtpu.drivers import ir_ragged_dot as RD
from torchtpu.drivers.ir import DTYPES, OPS, Region, TensorType, define

UNARY = (
    "abs", "negate", "exponential", "exponential_minus_one", "log", "log_plus_one", "sqrt", "rsqrt", "cbrt",
    "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil", "round_nearest_even", "sign", "not",
    "erf", "erfinv", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh",
    "reciprocal", "square", "trunc", "exp2", "log2", "log10", "erfc", "round_nearest_afz",
)
BINARY = (
    "add", "subtract", "multiply", "divide", "remainder", "fmod", "power", "maximum", "minimum", "atan2",
    "and", "or", "xor", "shift_left", "shift_right_arithmetic", "floor_divide", "nextafter", "hypot",
    "copysign", "xlogy",
)
UNARY_VPU = frozenset({"abs", "negate", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign", "not",
                       "square", "trunc"})
BINARY_EUP = frozenset({"divide", "power", "atan2"})  # these and the rest of UNARY use the transcendental unit
COMPARE_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
REDUCE_KINDS = ("sum", "prod", "max", "min", "and", "or")
SCATTER_REDUCE = ("replace", "add", "multiply", "amax", "amin")
# a combining scatter in a narrow float: "once" combines in float32 and rounds at the end (CPU's scatter_reduce),
# "each" rounds every combine to the dtype, the updates to one element in index order (CPU's index_reduce)
SCATTER_ROUNDING = ("once", "each")
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def _same(x: TensorType, **_: object) -> list[TensorType]:
    return [x]


def _binary(a: TensorType, b: TensorType, **_: object) -> list[TensorType]:
    if a != b:
        raise TypeError(f"binary IR ops need equal types, got {a} and {b}")
    return [a]


for _name in UNARY:
    define(_name, 1, "elementwise", cost=C.VPU if _name in UNARY_VPU else C.EUP, padding=P.ELEMENTWISE)(_same)
for _name in BINARY:
    define(_name, 2, "elementwise", cost=C.EUP if _name in BINARY_EUP else C.VPU, padding=P.ELEMENTWISE)(_binary)
LOWERED_UNARY = {"digamma": L.digamma, "lgamma": L.lgamma}  # written once over the ops above (ir_lowerings.py)
for _name, _lowering in LOWERED_UNARY.items():
    define(_name, 1, "elementwise", lowering=_lowering)(_same)


@define("is_finite", 1, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _is_finite(x: TensorType) -> list[TensorType]:
    return [TensorType(x.shape, "bool")]


@define("compare", 2, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _compare(a: TensorType, b: TensorType, direction: str) -> list[TensorType]:
    if direction not in COMPARE_DIRECTIONS:
        raise ValueError(f"compare direction {direction!r}; valid: {COMPARE_DIRECTIONS}")
    _binary(a, b)
    return [TensorType(a.shape, "bool")]


@define("select", 3, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _select(pred: TensorType, a: TensorType, b: TensorType) -> list[TensorType]:
    if pred.dtype != "bool" or pred.shape != a.shape:
        raise TypeError(f"select needs a bool predicate of shape {a.shape}, got {pred}")
    return _binary(a, b)


@define("clamp", 3, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _clamp(lo: TensorType, x: TensorType, hi: TensorType) -> list[TensorType]:
    _binary(lo, x)
    return _binary(x, hi)


@define("convert", 1, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _convert(x: TensorType, dtype: str) -> list[TensorType]:
    if dtype not in DTYPES:
        raise ValueError(f"convert to unknown dtype {dtype!r}; valid: {DTYPES}")
    return [TensorType(x.shape, dtype)]


@define("constant", 0, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _constant(value: object, shape: tuple[int, ...], dtype: str) -> list[TensorType]:
    """A scalar broadcast to `shape`, or a dense constant: a tuple of all values in row-major order."""
    if isinstance(value, tuple):
        n = 1
        for d in shape:
            n *= d
        if len(value) != n:
            raise ValueError(f"dense constant of shape {tuple(shape)} needs {n} values, got {len(value)}")
    return [TensorType(tuple(shape), dtype)]


@define("iota", 0, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _iota(shape: tuple[int, ...], dtype: str, dimension: int) -> list[TensorType]:
    return [TensorType(tuple(shape), dtype)]


@define("rng", 1, "elementwise", cost=C.EUP, padding=P.UNSAFE)
def _rng(state: TensorType, shape: tuple[int, ...], dtype: str, distribution: str) -> list[TensorType]:
    if distribution not in ("uniform", "normal"):
        raise ValueError(f"rng distribution {distribution!r}; valid: uniform, normal")
    if state.shape != (2,) or state.dtype != "int64":
        raise TypeError(f"rng state must be int64[2] (seed, offset), got {state}")
    return [TensorType(tuple(shape), dtype)]


@define("broadcast_in_dim", 1, "movement", cost=C.MOVEMENT, padding=P.BROADCAST_IN_DIM)
def _broadcast(x: TensorType, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]) -> list[TensorType]:
    if len(broadcast_dimensions) != len(x.shape):
        raise ValueError(f"broadcast_in_dim: {len(x.shape)} dims but dimensions {broadcast_dimensions}")
    for d, od in zip(x.shape, broadcast_dimensions):
        if d != 1 and d != shape[od]:
            raise ValueError(f"cannot broadcast {x.shape} to {shape} along {broadcast_dimensions}")
    return [TensorType(tuple(shape), x.dtype)]


@define("reshape", 1, "movement", cost=C.MOVEMENT, padding=P.RESHAPE)
def _reshape(x: TensorType, shape: tuple[int, ...]) -> list[TensorType]:
    out = TensorType(tuple(shape), x.dtype)
    if out.numel != x.numel:
        raise ValueError(f"reshape {x.shape} -> {shape} changes the element count")
    return [out]


@define("transpose", 1, "movement", cost=C.MOVEMENT, padding=P.TRANSPOSE)
def _transpose(x: TensorType, permutation: tuple[int, ...]) -> list[TensorType]:
    if sorted(permutation) != list(range(len(x.shape))):
        raise ValueError(f"transpose permutation {permutation} for rank {len(x.shape)}")
    return [TensorType(tuple(x.shape[p] for p in permutation), x.dtype)]


@define("slice", 1, "movement", cost=C.MOVEMENT, padding=P.SLICE)
def _slice(x: TensorType, start: tuple[int, ...], limit: tuple[int, ...], strides: tuple[int, ...]
           ) -> list[TensorType]:
    shape = tuple(max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides))
    return [TensorType(shape, x.dtype)]


@define("reverse", 1, "movement", cost=C.MOVEMENT, padding=P.UNSAFE)
def _reverse(x: TensorType, dimensions: tuple[int, ...]) -> list[TensorType]:
    return [x]


@define("concatenate", None, "movement", cost=C.MOVEMENT, padding=P.CONCATENATE)
def _concatenate(*xs: TensorType, dimension: int) -> list[TensorType]:
    first = xs[0]
    total = 0
    for x in xs:
        if x.dtype != first.dtype or len(x.shape) != len(first.shape) or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dimension):
            raise TypeError(f"concatenate along {dimension}: mismatched {first} and {x}")
        total += x.shape[dimension]
    shape = list(first.shape)
    shape[dimension] = total
    return [TensorType(tuple(shape), first.dtype)]


@define("pad", 1, "movement", cost=C.MOVEMENT, padding=P.PAD)
def _pad(x: TensorType, value: float, low: tuple[int, ...], high: tuple[int, ...], interior: tuple[int, ...]
         ) -> list[TensorType]:
    shape = tuple(lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in zip(x.shape, low, high, interior))
    return [TensorType(shape, x.dtype)]


def _reduced(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in dims)


@define("reduce", 1, "reduction", cost=C.REDUCTION, padding=P.REDUCE)
def _reduce(x: TensorType, kind: str, dimensions: tuple[int, ...], acc_dtype: str | None = None
            ) -> list[TensorType]:
    if kind not in REDUCE_KINDS:
        raise ValueError(f"reduce kind {kind!r}; valid: {REDUCE_KINDS}")
    return [TensorType(_reduced(x.shape, dimensions), x.dtype)]


@define("argreduce", 1, "reduction", cost=C.REDUCTION, padding=P.ARGREDUCE)
def _argreduce(x: TensorType, kind: str, dimension: int) -> list[TensorType]:
    if kind not in ("max", "min"):
        raise ValueError(f"argreduce kind {kind!r}; valid: max, min")
    return [TensorType(_reduced(x.shape, (dimension,)), "int64")]


@define("cumulative", 1, "reduction", cost=C.REDUCTION, padding=P.CUMULATIVE)
def _cumulative(x: TensorType, kind: str, dimension: int) -> list[TensorType]:
    if kind not in ("sum", "prod", "max", "min"):
        raise ValueError(f"cumulative kind {kind!r}; valid: sum, prod, max, min")
    return [x]


@define("sort", 1, "other", cost=C.SORT, padding=P.ALONG_UNPADDED)
def _sort(x: TensorType, dimension: int, descending: bool, stable: bool) -> list[TensorType]:
    return [x, TensorType(x.shape, "int64")]


@define("dot_general", 2, "matmul", cost=C.DOT_GENERAL, padding=P.DOT_GENERAL)
def _dot_general(lhs: TensorType, rhs: TensorType, lhs_batch: tuple[int, ...], rhs_batch: tuple[int, ...],
                 lhs_contract: tuple[int, ...], rhs_contract: tuple[int, ...], precision: str,
                 out_dtype: str) -> list[TensorType]:
    if precision not in PRECISIONS:
        raise ValueError(f"dot_general precision {precision!r}; valid: {PRECISIONS}")
    for a, b in zip(lhs_batch, rhs_batch):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general batch dims differ: {lhs} vs {rhs}")
    for a, b in zip(lhs_contract, rhs_contract):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general contracting dims differ: {lhs.shape} vs {rhs.shape}")
    batch = tuple(lhs.shape[d] for d in lhs_batch)
    lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lhs_batch and i not in lhs_contract)
    rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rhs_batch and i not in rhs_contract)
    return [TensorType(batch + lfree + rfree, out_dtype)]


@define("gather_axis", 2, "movement", cost=C.MOVEMENT, padding=P.GATHER_AXIS)
def _gather_axis(x: TensorType, index: TensorType, dimension: int) -> list[TensorType]:
    if index.dtype not in ("int64", "int32") or len(index.shape) != len(x.shape):
        raise TypeError(f"gather_axis needs an integer index of rank {len(x.shape)}, got {index}")
    return [TensorType(index.shape, x.dtype)]


@define("index_select", 2, "movement", cost=C.MOVEMENT, padding=P.INDEX_SELECT)
def _index_select(x: TensorType, index: TensorType, dimension: int) -> list[TensorType]:
    if index.dtype not in ("int64", "int32") or len(index.shape) != 1:
        raise TypeError(f"index_select needs a 1-D integer index, got {index}")
    shape = list(x.shape)
    shape[dimension] = index.shape[0]
    return [TensorType(tuple(shape), x.dtype)]


@define("scatter_axis", 3, "movement", cost=C.MOVEMENT, padding=P.UNSAFE)
def _scatter_axis(x: TensorType, index: TensorType, src: TensorType, dimension: int, reduce: str,
                  rounding: str = "once") -> list[TensorType]:
    if reduce not in SCATTER_REDUCE:
        raise ValueError(f"scatter reduce {reduce!r}; valid: {SCATTER_REDUCE}")
    if rounding not in SCATTER_ROUNDING or (rounding == "each" and reduce not in ("add", "multiply")):
        raise ValueError(f"scatter rounding {rounding!r} with reduce {reduce!r}; valid: {SCATTER_ROUNDING} "
                         "('each' only with add or multiply)")
    if src.dtype != x.dtype or index.shape != src.shape:
        raise TypeError(f"scatter_axis: src {src} must match index {index} in shape and {x.dtype}")
    return [x]


@define("index_add", 3, "movement", cost=C.MOVEMENT, padding=P.UNSAFE)
def _index_add(x: TensorType, index: TensorType, src: TensorType, dimension: int) -> list[TensorType]:
    if len(index.shape) != 1 or src.dtype != x.dtype:
        raise TypeError(f"index_add: index must be 1-D and src dtype {x.dtype}, got {index}, {src}")
    return [x]


CHECK_ERRORS = ("IndexError", "RuntimeError")


@define("check_index", 1, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _check_index(index: TensorType, size: int, low: int, error: str, message: str, ignore: int | None = None
                 ) -> list[TensorType]:
    """The index unchanged, checked when it runs: a value outside [low, size) (other than `ignore`) raises
    `error` with `message` ("{}" is the first bad value). The front end's index rules (ATen's) live here."""
    if index.dtype not in ("int64", "int32", "int16", "int8", "uint8") or error not in CHECK_ERRORS:
        raise TypeError(f"check_index needs an integer index and an error in {CHECK_ERRORS}, got {index}, {error}")
    return [index]


@define("convolution", 2, "matmul", cost=C.CONVOLUTION, padding=P.CONVOLUTION)
def _convolution(lhs: TensorType, rhs: TensorType, window_strides: tuple[int, ...],
                 padding: tuple[tuple[int, int], ...], lhs_dilation: tuple[int, ...],
                 rhs_dilation: tuple[int, ...], feature_group_count: int, precision: str, out_dtype: str
                 ) -> list[TensorType]:
    n, c = lhs.shape[:2]
    o, ci = rhs.shape[:2]
    if ci * feature_group_count != c:
        raise ValueError(f"convolution: input has {c} channels, weight expects {ci}x{feature_group_count}")
    spatial = []
    for i, (size, k) in enumerate(zip(lhs.shape[2:], rhs.shape[2:])):
        dilated_in = (size - 1) * lhs_dilation[i] + 1 + padding[i][0] + padding[i][1]
        dilated_k = (k - 1) * rhs_dilation[i] + 1
        spatial.append(max(0, (dilated_in - dilated_k) // window_strides[i] + 1))
    return [TensorType((n, o, *spatial), out_dtype)]


@define("reduce_window", 1, "reduction", cost=C.REDUCTION, padding=P.UNSAFE)
def _reduce_window(x: TensorType, kind: str, window: tuple[int, ...], strides: tuple[int, ...],
                   padding: tuple[tuple[int, int], ...], init: float) -> list[TensorType]:
    shape = tuple((d + lo + hi - w) // s + 1 for d, w, s, (lo, hi) in zip(x.shape, window, strides, padding))
    return [TensorType(shape, x.dtype)]


COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}  # a complex dtype -> its parts' dtype
COMPLEX_OF = {part: whole for whole, part in COMPLEX_PARTS.items()}
FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


@define("real", 1, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _real(x: TensorType) -> list[TensorType]:
    if x.dtype not in COMPLEX_PARTS:
        raise TypeError(f"real needs a complex operand, got {x}")
    return [TensorType(x.shape, COMPLEX_PARTS[x.dtype])]


define("imag", 1, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)(_real)


@define("complex", 2, "elementwise", cost=C.VPU, padding=P.ELEMENTWISE)
def _complex(re: TensorType, im: TensorType) -> list[TensorType]:
    _binary(re, im)
    if re.dtype not in COMPLEX_OF:
        raise TypeError(f"complex needs float32 or float64 parts, got {re}")
    return [TensorType(re.shape, COMPLEX_OF[re.dtype])]


@define("fft", 1, "other", cost=C.FFT, padding=P.UNSAFE)
def _fft(x: TensorType, fft_type: str, fft_length: tuple[int, ...]) -> list[TensorType]:
    """stablehlo.fft over the innermost len(fft_length) dims; IFFT and IRFFT include the 1/n factor."""
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft_type {fft_type!r}; valid: {FFT_TYPES}")
    k = len(fft_length)
    if not 1 <= k <= 3 or k > len(x.shape):
        raise ValueError(f"fft over {k} dims of a rank-{len(x.shape)} operand")
    lead = x.shape[:len(x.shape) - k]
    if fft_type == "RFFT":
        if x.dtype not in COMPLEX_OF or tuple(x.shape[-k:]) != tuple(fft_length):
            raise TypeError(f"RFFT needs float32 or float64 of trailing shape {fft_length}, got {x}")
        return [TensorType((*lead, *fft_length[:-1], fft_length[-1] // 2 + 1), COMPLEX_OF[x.dtype])]
    if x.dtype not in COMPLEX_PARTS:
        raise TypeError(f"{fft_type} needs complex64 or complex128, got {x}")
    if fft_type == "IRFFT":
        return [TensorType((*lead, *fft_length), COMPLEX_PARTS[x.dtype])]
    return [x]


# Linear algebra on the trailing two dims of a batch of matrices. stablehlo has cholesky and triangular_solve;
# lu, qr, svd and eigh are lowerings over primitives (drivers/ir_lowerings_linalg.py); eig is run by LAPACK (the
# sim's numpy, jaxlib's CPU custom call in pjrt, which refuses it on other platforms: XLA has no TPU eig either).
LINALG_FLOAT = ("float32", "float64", "complex64", "complex128")


def _square(x: TensorType, name: str) -> int:
    if len(x.shape) < 2 or x.shape[-1] != x.shape[-2] or x.dtype not in LINALG_FLOAT:
        raise TypeError(f"{name} needs a batch of square float matrices, got {x}")
    return x.shape[-1]


@define("cholesky", 1, "other", cost=C.linalg(1 / 3), padding=P.UNSAFE)
def _cholesky(x: TensorType, lower: bool) -> list[TensorType]:
    _square(x, "cholesky")
    return [x]


@define("triangular_solve", 2, "other", cost=C.TRIANGULAR_SOLVE, padding=P.UNSAFE)
def _triangular_solve(a: TensorType, b: TensorType, left_side: bool, lower: bool, unit_diagonal: bool,
                      transpose_a: str) -> list[TensorType]:
    n = _square(a, "triangular_solve")
    if transpose_a not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise ValueError(f"transpose_a {transpose_a!r}; valid: NO_TRANSPOSE, TRANSPOSE, ADJOINT")
    if a.shape[:-2] != b.shape[:-2] or (b.shape[-2] if left_side else b.shape[-1]) != n or a.dtype != b.dtype:
        raise TypeError(f"triangular_solve: {a} and {b} do not fit (left_side={left_side})")
    return [b]


def _lower_linalg(name: str):  # noqa: ANN202
    def lowering(b: object, x: object, **attrs: object) -> list:
        from torchtpu.drivers import ir_lowerings_linalg

        return getattr(ir_lowerings_linalg, name)(b, x, **attrs)

    lowering.__name__ = name
    return lowering


@define("lu", 1, "other", lowering=_lower_linalg("lu"))
def _lu(x: TensorType) -> list[TensorType]:
    """Partial-pivoting LU of each (m, n) matrix: packed LU, 1-based int32 pivots (min(m, n),), int32 info."""
    if len(x.shape) < 2 or x.dtype not in LINALG_FLOAT:
        raise TypeError(f"lu needs a batch of float matrices, got {x}")
    k = min(x.shape[-2:])
    return [x, TensorType((*x.shape[:-2], k), "int32"), TensorType(x.shape[:-2], "int32")]


@define("qr", 1, "other", lowering=_lower_linalg("qr"))
def _qr(x: TensorType, full_matrices: bool) -> list[TensorType]:
    if len(x.shape) < 2 or x.dtype not in LINALG_FLOAT:
        raise TypeError(f"qr needs a batch of float matrices, got {x}")
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    return [TensorType((*x.shape[:-2], m, k), x.dtype), TensorType((*x.shape[:-2], k, n), x.dtype)]


@define("svd", 1, "other", lowering=_lower_linalg("svd"))
def _svd(x: TensorType, full_matrices: bool) -> list[TensorType]:
    if len(x.shape) < 2 or x.dtype not in LINALG_FLOAT:
        raise TypeError(f"svd needs a batch of float matrices, got {x}")
    m, n = x.shape[-2:]
    k = min(m, n)
    real = COMPLEX_PARTS.get(x.dtype, x.dtype)
    u = (m, m) if full_matrices else (m, k)
    v = (n, n) if full_matrices else (k, n)
    batch = x.shape[:-2]
    return [TensorType((*batch, *u), x.dtype), TensorType((*batch, k), real), TensorType((*batch, *v), x.dtype)]


@define("eigh", 1, "other", lowering=_lower_linalg("eigh"))
def _eigh(x: TensorType, lower: bool) -> list[TensorType]:
    n = _square(x, "eigh")
    real = COMPLEX_PARTS.get(x.dtype, x.dtype)
    return [TensorType((*x.shape[:-2], n), real), x]


@define("eig", 1, "other", cost=C.linalg(25.0), padding=P.UNSAFE)
def _eig(x: TensorType) -> list[TensorType]:
    n = _square(x, "eig")
    whole = COMPLEX_OF.get(x.dtype, x.dtype)  # complex eigenpairs of a real matrix, of its width
    return [TensorType((*x.shape[:-2], n), whole), TensorType(x.shape, whole)]


SPECIAL_UNARY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "bessel_i0", "bessel_i0e", "bessel_i1",
                 "bessel_i1e", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "airy_ai",
                 "spherical_bessel_j0", "erfcx", "ndtri")
SPECIAL_BINARY = ("zeta", "polygamma", "igamma", "igammac", "chebyshev_t", "chebyshev_u", "chebyshev_v",
                  "chebyshev_w", "shifted_chebyshev_t", "shifted_chebyshev_u", "shifted_chebyshev_v",
                  "shifted_chebyshev_w", "hermite_h", "hermite_he", "laguerre_l", "legendre_p")


def _lower_special_unary(b: object, x: object, function: str) -> list:
    from torchtpu.drivers import ir_lowerings_bessel, ir_lowerings_gamma

    if function in ir_lowerings_gamma.UNARY:
        return ir_lowerings_gamma.lower_unary(b, x, function)  # type: ignore[arg-type]
    return ir_lowerings_bessel.lower(b, x, function)  # type: ignore[arg-type]


def _lower_special_binary(b: object, x: object, y: object, function: str) -> list:
    from torchtpu.drivers import ir_lowerings_gamma, ir_lowerings_polynomials

    if function in ir_lowerings_gamma.BINARY:
        return ir_lowerings_gamma.lower_binary(b, x, y, function)  # type: ignore[arg-type]
    return ir_lowerings_polynomials.lower(b, x, y, function)  # type: ignore[arg-type]


@define("special_unary", 1, "elementwise", lowering=_lower_special_unary)
def _special_unary(x: TensorType, function: str) -> list[TensorType]:
    """A special function of one float operand, written once as a lowering (drivers/ir_lowerings_bessel.py,
    ir_lowerings_gamma.py)."""
    if function not in SPECIAL_UNARY:
        raise ValueError(f"special_unary function {function!r}; valid: {SPECIAL_UNARY}")
    return [x]


@define("special_binary", 2, "elementwise", lowering=_lower_special_binary)
def _special_binary(a: TensorType, b: TensorType, function: str) -> list[TensorType]:
    """zeta(x, q), polygamma(n, x), igamma(c)(a, x) and the orthogonal polynomials p(x, n), written once as
    lowerings (drivers/ir_lowerings_gamma.py, ir_lowerings_polynomials.py)."""
    if function not in SPECIAL_BINARY:
        raise ValueError(f"special_binary function {function!r}; valid: {SPECIAL_BINARY}")
    return _binary(a, b)


REGION_EXCLUDED = frozenset({"rng", "iota", "check_index"})


def _check_region(region: object, ins: list[str], outs: list[str] | None, what: str) -> None:
    if not isinstance(region, Region):
        raise TypeError(f"while: {what} must be an ir.Region, got {type(region).__name__}")
    p = region.program
    if [(v.shape, v.dtype) for v in p.inputs] != [((), d) for d in ins]:
        raise TypeError(f"while: {what} takes {[str(v.type) for v in p.inputs]}, the state is 0-d {ins}")
    if outs is not None and [(v.shape, v.dtype) for v in p.outputs] != [((), d) for d in outs]:
        raise TypeError(f"while: {what} gives {[str(v.type) for v in p.outputs]}, needs 0-d {outs}")
    for op in p.ops:
        if OPS[op.name].kind != "elementwise" or op.name in REGION_EXCLUDED or isinstance(op.attr("value"), tuple):
            raise TypeError(f"while: {what} holds {op.name}; a region is element-wise ops and scalar constants")


@define("while", None, "other", cost=C.WHILE, padding=P.ELEMENTWISE)
def _while(*state: TensorType, cond: Region, body: Region, limit: int) -> list[TensorType]:
    """An element-wise bounded loop (StableHLO `while`, applied per element): each element's state runs
    `s = body(s)` while `cond(s)` holds, at most `limit` times; the regions are programs over 0-d values. Every
    operand has one shape. Padded elements iterate on their own values and never reach a real one."""
    if not state or any(s.shape != state[0].shape for s in state):
        raise TypeError(f"while needs operands of one shape, got {[str(s) for s in state]}")
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"while: limit must be an int >= 1, got {limit!r}")
    dtypes = [s.dtype for s in state]
    _check_region(cond, dtypes, ["bool"], "cond")
    _check_region(body, dtypes, dtypes, "body")
    return list(state)


ARRAY_REGION_EXCLUDED = frozenset({"rng", "check_index"})  # a region has no RNG state and raises nothing


def _check_array_region(region: object, state: tuple[TensorType, ...], outs: list[TensorType], what: str) -> None:
    if not isinstance(region, Region):
        raise TypeError(f"while_array: {what} must be an ir.Region, got {type(region).__name__}")
    p = region.program
    if [v.type for v in p.inputs] != list(state):
        raise TypeError(f"while_array: {what} takes {[str(v.type) for v in p.inputs]}, the state is "
                        f"{[str(s) for s in state]}")
    if [v.type for v in p.outputs] != outs:
        raise TypeError(f"while_array: {what} gives {[str(v.type) for v in p.outputs]}, needs {[str(t) for t in outs]}")
    for op in p.ops:
        if op.name in ARRAY_REGION_EXCLUDED:
            raise TypeError(f"while_array: {what} holds {op.name}; a region holds any ops but "
                            f"{sorted(ARRAY_REGION_EXCLUDED)}")


@define("while_array", None, "other", cost=C.WHILE_ARRAY, padding=P.UNSAFE)
def _while_array(*state: TensorType, cond: Region, body: Region, limit: int) -> list[TensorType]:
    """A bounded loop over whole arrays (StableHLO `while`): `state = body(state)` while `cond(state)`, a 0-d
    bool, holds, at most `limit` times. The regions are programs over the state's types, of any primitive ops
    (the iterative linear algebra, drivers/ir_lowerings_linalg.py)."""
    if not state:
        raise TypeError("while_array needs at least one operand")
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"while_array: limit must be an int >= 1, got {limit!r}")
    _check_array_region(cond, state, [TensorType((), "bool")], "cond")
    _check_array_region(body, state, list(state), "body")
    return list(state)


@define(RA.NAME, 3, "other", cost=RA.cost, padding=P.UNSAFE)
def _ragged_paged_attention(q: TensorType, kv: TensorType, pages: TensorType, q_lens: tuple[int, ...],
                            ctx_lens: tuple[int, ...], page_tokens: int, scale: float, precision: str,
                            sliding_window: int = 0, soft_cap: float = 0.0) -> list[TensorType]:
    """The real chip's ragged paged attention kernel (drivers/ir_ragged_attention.py): each request's queries
    against its own KV pages; the per-request lengths are static attributes its cost rule needs."""
    RA.check(q, kv, pages, q_lens, ctx_lens, page_tokens, sliding_window, precision)
    return [q]


@define(RD.NAME, 3, "matmul", cost=RD.cost, padding=P.UNSAFE)
def _ragged_dot(lhs: TensorType, rhs: TensorType, ends: TensorType, mode: str, precision: str, out_dtype: str
                ) -> list[TensorType]:
    """Grouped matmul over runtime group ends (drivers/ir_ragged_dot.py): MoE experts' rows, or a contraction
    split by group (their weight gradients)."""
    if precision not in PRECISIONS:
        raise ValueError(f"{RD.NAME} precision {precision!r}; valid: {PRECISIONS}")
    if out_dtype not in RD.DTYPES:
        raise TypeError(f"{RD.NAME}: out_dtype {out_dtype!r}; valid: {RD.DTYPES}")
    return [TensorType(RD.result_shape(lhs, rhs, ends, mode), out_dtype)]
