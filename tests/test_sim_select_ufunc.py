"""The sim's fast select step (drivers/sim/fast.py: kernels.SELECT, a branch-free numba ufunc) gives np.where's
bits, dtype and shape: every value dtype it serves, random bit patterns (NaN payloads, signalling NaNs, -0.0,
infinities, subnormals), odd sizes, 0-d and empty operands, structured and random predicates, transposed, strided
and broadcast (stride-0) operands, operands of two dtypes (np.where's result type), `out=` over an operand (as
direct_outputs.py may pass it); other dtypes keep np.where, and buffers of a dtype without a loop are widened
exactly or refused; a compiled training step with selects equals DEFER_NEVER."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import fast, kernels

import torchtpu

_DTYPES = {"float32": np.uint32, "float64": np.uint64, "int64": np.int64, "int32": np.int32, "int16": np.int16,
           "int8": np.int8, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
           "bool": np.bool_}


def _values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    bits = _DTYPES[dtype]
    info = np.iinfo(bits)
    x = rng.integers(info.min, info.max, size=n, dtype=bits, endpoint=True).view(np.dtype(dtype))
    if dtype in ("float32", "float64"):
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-310, 1e-40], dtype)
        snan = {"float32": 0x7F800001, "float64": 0x7FF0000000000001}[dtype]
        x[: min(n, 8)] = specials[: min(n, 8)]
        x[8:9] = np.array([snan], bits).view(dtype)[: max(0, n - 8)]  # a signalling NaN: copied, never quieted
    return x.reshape(shape)


def _select(dtype: str, shape: tuple[int, ...] = (3, 5)):
    b = Builder()
    ins = [b.input(shape, "bool"), b.input(shape, dtype), b.input(shape, dtype)]
    return b.finish(b.emit("select", ins)).ops[-1]


def _cases(dtype: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    big = (2, 4, 37, 65)
    a, b = _values(big, dtype, 1), _values(big, dtype, 2)
    random = _values(big, "bool", 3)
    half = np.broadcast_to(np.arange(65) >= 32, big)
    col = _values((2, 4, 37, 1), dtype, 4)
    return [
        (random, a, b),
        (half, a, b),  # a structured, stride-0 predicate (RoPE's masks)
        (random.copy(), a.transpose(0, 1, 3, 2).copy().transpose(0, 1, 3, 2), b[..., ::-1]),
        (random[:, :, ::2], a[:, :, ::2], b[:, :, ::-2]),  # strided and reversed
        (random, a, col),  # a broadcast operand
        (random, np.broadcast_to(_values((), dtype, 5), big), b),
        (np.array(True), _values((), dtype, 6), _values((), dtype, 7)),
        (_values((1,), "bool", 8), _values((1,), dtype, 9), _values((1,), dtype, 10)),
        (_values((0, 3), "bool", 8), _values((0, 3), dtype, 9), _values((0, 3), dtype, 10)),
    ]


def _same(x: np.ndarray, y: np.ndarray) -> None:
    assert x.dtype == y.dtype and x.shape == y.shape
    assert np.array_equal(np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(y).view(np.uint8))


@pytest.mark.parametrize("dtype", list(_DTYPES))
def test_fast_select_gives_np_where_bits(dtype: str) -> None:
    step = fast.specialize(_select(dtype)) if dtype in kernels.NP_DTYPES else kernels.SELECT
    assert step is kernels.SELECT and isinstance(step, np.ufunc)
    for pred, a, b in _cases(dtype):
        _same(np.asarray(step(pred, a, b)), np.where(pred, a, b))
        if dtype in kernels.NP_DTYPES:
            generic = kernels.KERNELS["select"](_select(dtype, a.shape), [pred, a, b])[0]
            _same(np.asarray(step(pred, a, b)), generic)


def test_two_dtypes_take_np_where_result_type() -> None:
    """Operands of two dtypes (a buffer of another dtype than the step was built for: fusion.py's fallback runs
    the steps so) take the loop np.where's result type names; the values are np.where's."""
    pred = _values((5, 7), "bool", 1)
    names = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "float32", "float64"]
    for x in names:
        for y in names:
            a, b = _values((5, 7), x, 2), _values((1, 7), y, 3)
            want = np.where(pred, a, b)
            assert want.dtype == np.result_type(a, b)
            got = kernels.SELECT(pred, a, b)
            assert got.dtype == want.dtype, (x, y)
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (x, y)


def test_dtypes_without_a_loop() -> None:
    """Buffers of a dtype with no loop (the fast step is never built for one: they can only be buffers of another
    dtype than the step's) take the first loop they cast to safely, float16 and bfloat16 the float32 one (exact
    widening, the same values), or are refused (complex: a TypeError), never cast unsafely."""
    pred = _values((3, 4), "bool", 1)
    for dtype in (np.float16, kernels.NP_DTYPES["bfloat16"]):
        a, b = (np.arange(12, dtype=np.float32).reshape(3, 4) * s - 5.5 for s in (1, -1))
        a, b = a.astype(dtype), b.astype(dtype)
        got = kernels.SELECT(pred, a, b)
        assert got.dtype == np.float32
        _same(got, np.where(pred, a, b).astype(np.float32))
    c = np.ones(3, np.complex64)
    with pytest.raises(TypeError, match="not supported for the input types"):
        kernels.SELECT(np.ones(3, bool), c, c)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_out_over_an_operand(dtype: str) -> None:
    """direct_outputs.py may hand a ufunc `out=` that is an operand's memory (or overlaps it): numpy's ufunc
    machinery copies where needed, so the values are those of a fresh result."""
    step = kernels.SELECT
    pred, a, b = _cases(dtype)[0]
    want = np.where(pred, a, b)
    for target in ("a", "b", "shifted"):
        x, y = a.copy(), b.copy()
        if target == "shifted":  # out overlaps a one element off
            flat = np.concatenate([x.reshape(-1), x.reshape(-1)[:1]])
            x, out = flat[1:].reshape(a.shape), flat[:-1].reshape(a.shape)
            x[...] = a
        else:
            out = x if target == "a" else y
        got = step(pred, x, y, out=out)
        assert got is out
        _same(out, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "complex64", "float8_e4m3fn"])
def test_other_dtypes_keep_np_where(dtype: str) -> None:
    assert fast.specialize(_select(dtype)) is np.where


def test_flag_off_is_np_where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "SELECT_UFUNC", False)
    assert fast.specialize(_select("float32")) is np.where


def test_compiled_training_with_selects_equals_defer_never(tpu) -> None:
    """torch.where, relu's backward and masked_fill (selects over float32 and over a broadcast mask) in a
    compiled forward and backward, against DEFER_NEVER."""

    def step(w: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x @ w)
        h = torch.where(h > 0.3, h * 2, -h).masked_fill(mask, float("-inf"))
        loss = torch.softmax(h, dim=-1).nan_to_num().square().sum()
        loss.backward()
        return loss

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 37, 48, generator=gen)
    w0 = torch.randn(48, 65, generator=gen)
    mask = torch.rand(37, 65, generator=gen) < 0.3
    results = []
    for compiled in (False, True):
        torch._dynamo.reset()
        w = w0.clone().to(tpu).requires_grad_()
        fn = torch.compile(step, backend="tpu") if compiled else step
        with torchtpu.eager_mode("DEFER_NEVER"):
            loss = fn(w, x.to(tpu), mask.to(tpu))
            results.append((loss.detach().cpu(), w.grad.cpu()))
    (loss_e, grad_e), (loss_c, grad_c) = results
    assert torch.equal(loss_e, loss_c) and torch.equal(grad_e, grad_c)
    # against CPU: the sim's DEFAULT-precision product rounds its operands to bfloat16 (the MXU), so CPU's gets
    # them rounded too (the gradient's own products round differently: checked bit for bit above, not here)
    w = w0.bfloat16().float().requires_grad_()
    loss_cpu = step(w, x.bfloat16().float(), mask)
    torch.testing.assert_close(loss_e, loss_cpu.detach(), rtol=1e-4, atol=1e-4)
