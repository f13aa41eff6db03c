"""complex32 (ComplexHalf) on the tpu device: held as two float16 (real part first, c10::complex<Half>), with CPU
torch's ComplexHalf op set. Every op is compared with CPU bit for bit (NaN where CPU's NaN is) on random data with
infinities and NaNs, in DEFER_NEVER, DEFER_AND_FUSE and under torch.compile; the ops CPU refuses raise CPU's class
and words; the storage is the float16 pairs view_as_real shows."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import pytest
import torch
from refusal_cases import assert_refused_as_cpu_compiled

from torchtpu import dtypes

C32 = torch.complex32
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
INF, NAN = float("inf"), float("nan")


def _data(seed: int, *shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    parts = torch.randn(*shape, 2, generator=g) * 4
    flat = parts.view(-1)
    flat[3], flat[8], flat[13] = INF, NAN, -INF
    flat[5] = -0.0
    return torch.view_as_complex(parts).to(C32)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """`t`'s values as comparable integers: float parts by their bits with every NaN alike."""
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype.is_floating_point:
        bits = t.view(torch.int16) if t.element_size() == 2 else t.view(torch.int32) if t.element_size() == 4 \
            else t.view(torch.int64)
        return torch.where(t.isnan(), torch.full_like(bits, -1), bits)
    return t


def _same(got: object, want: object) -> None:
    if isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if not isinstance(want, torch.Tensor):
        assert got == want or (got != got and want != want), (got, want)
        return
    assert got.device.type == "cpu" and got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert torch.equal(_bits(got), _bits(want)), (got, want)


def _cpu(x: object) -> object:
    if isinstance(x, list | tuple):
        return [_cpu(v) for v in x]
    return x.cpu() if isinstance(x, torch.Tensor) else x


def _check(fn: Callable[..., object], *args: torch.Tensor) -> None:
    """fn on CPU equals fn on tpu (its tensor arguments moved there) in every mode and compiled."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(*args)
        for mode in MODES:
            with torch.tpu.eager_mode(mode):
                got = _cpu(fn(*(a.to("tpu") for a in args)))
            _same(got, want)
        torch._dynamo.reset()
        got = _cpu(torch.compile(fn, backend="tpu")(*(a.to("tpu") for a in args)))
        _same(got, want)


X, Y = _data(0, 4, 6), _data(1, 4, 6)
H = torch.randn(4, 6, generator=torch.Generator().manual_seed(2)).half()
MASK = torch.rand(4, 6, generator=torch.Generator().manual_seed(3)) > 0.5
IDX = torch.tensor([2, 0, 3, 3])

ELEMENTWISE: dict[str, Callable[..., object]] = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "add_alpha": lambda x, y: torch.add(x, y, alpha=0.3), "sub_alpha": lambda x, y: torch.sub(x, y, alpha=2),
    "mul_scalar": lambda x, y: x * 0.1, "add_complex_scalar": lambda x, y: x + (0.1 - 3j), "rsub": lambda x, y: 2 - x,
    "neg": lambda x, y: -x, "abs": lambda x, y: x.abs(), "sgn": lambda x, y: x.sgn(), "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != x, "isnan": lambda x, y: x.isnan(), "isfinite": lambda x, y: x.isfinite(),
    "addcmul": lambda x, y: torch.addcmul(x, x, y, value=0.7), "where": lambda x, y: torch.where(x.real > 0, x, y),
    "add_": lambda x, y: x.clone().add_(y), "mul_": lambda x, y: x.clone().mul_(y),
    "conj_resolve": lambda x, y: x.conj().resolve_conj(), "conj_physical": lambda x, y: x.conj_physical(),
    "real_imag": lambda x, y: (x.real.clone(), x.imag.clone()), "allclose": lambda x, y: torch.allclose(x, x),
}
MOVEMENT: dict[str, Callable[..., object]] = {
    "clone": lambda x, y: x.clone(), "contiguous": lambda x, y: x.t().contiguous(),
    "cat": lambda x, y: torch.cat([x, y], 1), "stack": lambda x, y: torch.stack([x, y]),
    "index_select": lambda x, y: x.index_select(0, IDX.to(x.device)), "getitem": lambda x, y: x[1:, ::2][0],
    "getitem_index": lambda x, y: x[IDX.to(x.device)], "masked_select": lambda x, y: x.masked_select(MASK.to(x.device)),
    "masked_fill": lambda x, y: x.masked_fill(MASK.to(x.device), 1.5 - 2j), "nonzero": lambda x, y: x.nonzero(),
    "triu": lambda x, y: x.triu(), "tril": lambda x, y: x.tril(-1), "roll": lambda x, y: x.roll(2, 1),
    "repeat": lambda x, y: x.repeat(2, 1), "narrow_copy": lambda x, y: x.narrow_copy(1, 1, 3),
    "fill_": lambda x, y: x.clone().fill_(0.1 + 2j), "zero_": lambda x, y: x.clone().zero_(),
    "setitem": lambda x, y: _setitem(x, y), "index_put_": lambda x, y: x.clone().index_put_((IDX.to(x.device),), y[0]),
    "to_complex64": lambda x, y: x.to(torch.complex64), "to_float16": lambda x, y: x.to(torch.float16),
    "from_complex64": lambda x, y: (x.to(torch.complex64) * 1.001).to(C32),
    "from_int": lambda x, y: x.real.nan_to_num().int().to(C32),
    "view_as_real": lambda x, y: torch.view_as_real(x.clone()) * 1,
    "complex": lambda x, y: torch.complex(x.real.clone(), x.imag.clone()),
    "isinf": lambda x, y: x.isinf(), "index_fill": lambda x, y: x.index_fill(0, IDX[:2].to(x.device), 1 - 2j),
    "any_all": lambda x, y: (x.any(), x[:, :2].all(1)), "count_nonzero": lambda x, y: x.count_nonzero(1),
    "diag": lambda x, y: (torch.diag(x[0]), torch.diag(x, 1)), "diag_embed": lambda x, y: torch.diag_embed(x),
    "index_put_accumulate": lambda x, y: x.clone().index_put_((IDX.to(x.device),), y[0], accumulate=True),
    "index_put_accumulate_2d": lambda x, y: x.clone().index_put_((IDX.to(x.device), IDX.to(x.device)), y[0, :4],
                                                                 accumulate=True),
    "index_put_accumulate_mask": lambda x, y: x.clone().index_put_((MASK.to(x.device),), y[MASK.to(x.device)],
                                                                   accumulate=True),
    "index_add": lambda x, y: x.index_add(0, IDX.to(x.device), y),
    "index_add_last": lambda x, y: x.index_add(1, IDX.to(x.device), y[:, :4]),
    "index_add_alpha": lambda x, y: x.index_add(0, IDX.to(x.device), y, alpha=2),
    "index_add_complex_alpha": lambda x, y: x.index_add(1, IDX.to(x.device), y[:, :4], alpha=0.5 - 1j),
    "index_add_int32": lambda x, y: x.index_add(1, IDX.int().to(x.device), y[:, :4]),
    "index_add_1d": lambda x, y: x[0].index_add(0, IDX.to(x.device), y[1, :4]),
    "index_add_3d": lambda x, y: x.reshape(2, 3, 4).index_add(1, IDX[:3].to(x.device) % 3, y.reshape(2, 3, 4)),
    "flip_rows": lambda x, y: x.flip(0), "flipud": lambda x, y: x.flipud(),
    "flip_3d": lambda x, y: x.reshape(2, 2, 6).flip(0, 1), "flip_transposed": lambda x, y: x.t().flip(1),
}


def _setitem(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[0] = y[1]
    x[1, 2] = 3 - 1j
    x[MASK.to(x.device)] = 0.5j
    return x


@pytest.mark.parametrize("name", list(ELEMENTWISE) + list(MOVEMENT))
def test_op_as_cpu(name: str) -> None:
    _check({**ELEMENTWISE, **MOVEMENT}[name], X, Y)


def test_float16_with_complex_scalar_is_complex32_as_cpu() -> None:
    _check(lambda h: h * (0.1 + 1j), H)
    _check(lambda h, x: h + x, H, X)
    _check(lambda x, f: x + f, X, torch.ones(6))  # float32 with complex32: complex64


def test_creation_item_and_tolist(tpu) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda d: torch.zeros(3, dtype=C32, device=d), lambda d: torch.ones(2, 3, dtype=C32, device=d),
                     lambda d: torch.full((2,), 1.5 - 0.25j, dtype=C32, device=d),
                     lambda d: torch.tensor([1 + 2j, -3j], dtype=C32, device=d),
                     lambda d: torch.empty_like(torch.ones(3, dtype=C32, device=d)).fill_(2)):
            _same(make("tpu").cpu(), make("cpu"))
        x = X.to(tpu)
        assert x[0, 1].item() == X[0, 1].item() and x.tolist()[1:] == X.tolist()[1:]
        for sample in (torch.randn(100, dtype=C32, device=tpu), torch.rand(100, dtype=C32, device=tpu)):
            assert sample.dtype == C32 and sample.isfinite().all() and (sample.imag != 0).any()


def test_view_as_real_is_the_same_storage(tpu) -> None:
    x = X.to(tpu)
    parts = torch.view_as_real(x)
    assert parts.dtype == torch.float16 and parts.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    parts[0, 0, 1] = 7
    assert x[0, 0].item() == complex(X[0, 0].real.item(), 7)
    back = torch.view_as_complex(parts)
    assert back.dtype == C32 and back.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x.element_size() == 4


def test_copy_from_every_dtype_and_back(tpu) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8,
                      torch.uint8, torch.bool, torch.complex64, torch.complex128):
            src = (X.to(torch.complex64) * 3).to(dtype) if dtype.is_complex or dtype.is_floating_point \
                else torch.arange(24).reshape(4, 6).to(dtype)
            dst = torch.empty(4, 6, dtype=C32)
            got = torch.empty(4, 6, dtype=C32, device=tpu)
            got.copy_(src.to(tpu))
            _same(got.cpu(), dst.copy_(src))
            _same(X.to(tpu).to(dtype).cpu(), X.to(dtype))


def test_the_experimental_warning_as_cpu(tpu) -> None:
    torch.set_warn_always(True)  # CPU's TORCH_WARN_ONCE, as PyTorch's test sees it (assertWarnsOnceRegex)
    try:
        with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
            torch.randn(2, dtype=C32, device=tpu)
    finally:
        torch.set_warn_always(False)


REFUSED: dict[str, Callable[[torch.Tensor], object]] = {
    "div": lambda x: x / x, "sum": lambda x: x.sum(), "mean": lambda x: x.mean(), "prod": lambda x: x.prod(),
    "cumsum": lambda x: x.cumsum(0), "exp": lambda x: x.exp(), "sqrt": lambda x: x.sqrt(), "pow": lambda x: x ** 2,
    "gather": lambda x: x.gather(0, torch.zeros_like(x, dtype=torch.long)), "take": lambda x: x.take(x.real.long() * 0),
    "mm": lambda x: x @ x.T, "dot": lambda x: x[0].dot(x[0]), "sigmoid": lambda x: x.sigmoid(),
    "tanh": lambda x: x.tanh(), "reciprocal": lambda x: x.reciprocal(), "lerp": lambda x: x.lerp(x, 0.5),
    "sort": lambda x: x.sort(), "flip": lambda x: x.flip(1), "unique": lambda x: torch.unique(x),
    "arange": lambda x: torch.arange(3, dtype=C32, device=x.device),
    "linspace": lambda x: torch.linspace(0, 1, 3, dtype=C32, device=x.device),
    "eye": lambda x: torch.eye(3, dtype=C32, device=x.device),
    "scatter": lambda x: x.scatter(0, torch.zeros_like(x, dtype=torch.long), x),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    fn = REFUSED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as cpu:
            fn(X)
        with torch.tpu.eager_mode(mode), pytest.raises(type(cpu.value)) as tpu:
            fn(X.to("tpu"))
            torch.tpu.synchronize()
    assert str(cpu.value).split("\n")[0].strip() in str(tpu.value)


@pytest.mark.parametrize("name", ["div", "sum", "exp", "mm", "take"])
def test_refused_as_cpu_compiled(name: str) -> None:
    fn = REFUSED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_refused_as_cpu_compiled(lambda d: fn(X.to(d)))


def test_an_op_outside_both_sets_names_the_supported_ops(tpu) -> None:
    with pytest.raises(NotImplementedError, match=r"complex32 tensors take only CPU's ComplexHalf ops: .*addcmul"):
        torch.ops.aten.logaddexp(X.to(tpu), X.to(tpu))  # CPU: "logaddexp_cpu" not implemented for ComplexHalf
    assert dtypes.COMPLEX32_OPS.isdisjoint(dtypes.COMPLEX32_REFUSED)


def test_the_ir_moves_complex32_only() -> None:
    from torchtpu.drivers.ir import Builder

    b = Builder()
    x = b.input((3,), "complex32")
    with pytest.raises(NotImplementedError, match="IR op add does not take complex32"):
        b.emit("add", [x, x])
    assert b.emit("reshape", [x], shape=(1, 3))[0].dtype == "complex32"


Z = _data(5, 3, 40)
REDUCTIONS: dict[str, Callable[[torch.Tensor], object]] = {
    "var": lambda x: x.var(), "std": lambda x: x.std(), "var_dim": lambda x: x.var(1),
    "std_keepdim": lambda x: x.std(0, keepdim=True), "var_correction0": lambda x: x.var(1, correction=0),
    "std_correction5": lambda x: x.std(1, correction=5), "var_mean": lambda x: torch.var_mean(x, 1),
    "std_mean": lambda x: torch.std_mean(x, 0), "var_mean_all": lambda x: torch.var_mean(x),
    "var_finite_rows": lambda x: x[1:].var(1), "std_mean_finite_rows": lambda x: torch.std_mean(x[2:], 1),
    "isclose_equal_nan": lambda x: torch.isclose(x, x.flip(0), equal_nan=True),
    "isclose_equal_nan_tol": lambda x: torch.isclose(x, x * 1.01, rtol=0.5, atol=1.0, equal_nan=True),
}


@pytest.mark.parametrize("data", ["X", "Z"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_as_cpu(name: str, data: str) -> None:
    """std/var (and their _mean forms) as CPU's std_var_out of a complex tensor: each part's in float16, their
    float16 sum and root; the mean's parts each a float16 mean."""
    _check(REDUCTIONS[name], {"X": X, "Z": Z}[data])


W = _data(6, 3, 40)
NORMS: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "norm": lambda x, y: x.norm(), "norm_1": lambda x, y: x.norm(1), "norm_inf": lambda x, y: x.norm(float("inf")),
    "norm_dim": lambda x, y: x.norm(dim=1), "norm_3": lambda x, y: x.norm(3, dim=1), "norm_0": lambda x, y: x.norm(0),
    "norm_neg_inf": lambda x, y: x.norm(float("-inf")), "vector_norm": lambda x, y: torch.linalg.vector_norm(x, 2, 0),
    "vector_norm_neg1": lambda x, y: torch.linalg.vector_norm(x, -1, 1),
    "vector_norm_half": lambda x, y: torch.linalg.vector_norm(x, 0.5, 1, keepdim=True),
    "linalg_norm": lambda x, y: torch.linalg.norm(x), "fro": lambda x, y: torch.norm(x, "fro"),
    "matrix_norm": lambda x, y: torch.linalg.matrix_norm(x), "dist": lambda x, y: torch.dist(x, y),
    "dist_1": lambda x, y: torch.dist(x, y, 1), "dist_inf": lambda x, y: torch.dist(x, y, float("inf")),
    "norm_finite_rows": lambda x, y: x[1:].norm(dim=1),
}


@pytest.mark.parametrize("data", ["XY", "ZW"])
@pytest.mark.parametrize("name", list(NORMS))
def test_norm_as_cpu(name: str, data: str) -> None:
    """norm / dist / vector_norm as CPU's ComplexHalf norm: complex64's, rounded to float16 once."""
    _check(NORMS[name], *({"XY": (X, Y), "ZW": (Z, W)}[data]))


def test_nuclear_norm_refused_as_cpu(tpu) -> None:
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got ComplexHalf"):
        torch.norm(X, "nuc")
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got ComplexHalf"):
        torch.norm(X.to(tpu), "nuc")


def _flip_layouts() -> dict[str, torch.Tensor]:
    base = _data(4, 2, 3, 4, 5)
    return {"contiguous": base, "transposed": base.transpose(1, 3), "permuted": base.permute(3, 1, 0, 2),
            "strided": base[:, :, ::2], "strided_last": base[..., ::2], "expanded": base[:, :1].expand(2, 3, 4, 5),
            "size1_last": base[..., :1], "unsqueezed": base.reshape(6, 4, 5)[:, None]}


@pytest.mark.parametrize("layout", list(_flip_layouts()))
def test_flip_computes_where_cpu_copies_bytes(layout: str) -> None:
    """CPU flips complex32 only where its kernel copies bytes (the innermost dim not flipped and contiguous),
    else raises "flip_cpu" not implemented: the tpu device computes and refuses the same layouts and dims."""
    x = _flip_layouts()[layout]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(x.ndim + 1):
            for dims in itertools.combinations(range(x.ndim), r):
                try:
                    want: object = x.flip(dims)
                except NotImplementedError as exc:
                    want = exc
                try:
                    got: object = _same_layout(x).flip(dims).cpu()
                except NotImplementedError as exc:
                    got = exc
                if isinstance(want, Exception):
                    assert isinstance(got, NotImplementedError) and str(want) in str(got), (layout, dims, got)
                else:
                    _same(got, want)


def _same_layout(x: torch.Tensor) -> torch.Tensor:
    """`x` on the tpu device with x's sizes and strides (a view of a copy of its whole storage)."""
    n = x.untyped_storage().nbytes() // x.element_size()
    whole = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage(), 0, (n,), (1,))
    return whole.to("tpu").as_strided(x.shape, x.stride(), x.storage_offset())
