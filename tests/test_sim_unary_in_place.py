"""The sim's logistic and rsqrt computed step by step in place in one new array (drivers/sim/kernels.py
`IN_PLACE`) give the old path's bits (a new array per step): float32 and float64, odd sizes, 0-d, transposed,
strided, reversed and broadcast (stride-0) operands, every special value (NaN payloads, +-inf, +-0, subnormals,
exp's overflow and underflow edges) and random bit patterns; through the kernels on every float dtype, through
eager ops against CPU PyTorch, and in a compiled training step against DEFER_NEVER with the flag on and off."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import kernels
from torchtpu.drivers.sim.fast import specialize

import torchtpu

_BITS = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-39, -1e-39, 3e38, -3e38, 88.72, -88.72,
             -103.97, 103.97, 87.0, -87.0, 709.78, -709.78, -745.2, 16.6355, -16.6355, 36.7, 1.0, -1.0]

_NANS = {np.dtype(np.float32): [0x7FC00001, 0xFFC00123, 0x7F800001, 0xFFBFFFFF],
         np.dtype(np.float64): [0x7FF8000000000001, 0xFFF8000000012345, 0x7FF0000000000001, 0xFFF7FFFFFFFFFFFF]}


def _values(shape: tuple[int, ...], dtype: type, seed: int) -> np.ndarray:
    """Random bit patterns (NaNs with payloads and both signs, subnormals, infinities), normal values over exp's
    whole range, and the special values at the front."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    bits = _BITS[np.dtype(dtype)]
    raw = rng.integers(0, np.iinfo(bits).max, size=n, dtype=bits, endpoint=True).view(dtype)
    normal = (rng.standard_normal(n) * 30).astype(dtype)
    x = np.where(rng.random(n) < 0.3, raw, normal)
    x[: min(n, len(_SPECIALS))] = np.array(_SPECIALS[:n], dtype)
    payloads = np.array(_NANS[np.dtype(dtype)], bits).view(dtype)  # quiet and signalling, both signs
    x[len(_SPECIALS):len(_SPECIALS) + len(payloads)] = payloads[: max(0, n - len(_SPECIALS))]
    return x.reshape(shape)


def _operands(dtype: type) -> list[np.ndarray]:
    odd = _values((3, 37, 41), dtype, 1)
    big = _values((2, 67, 1031), dtype, 2)
    return [odd, big, _values((), dtype, 3), _values((1,), dtype, 4), _values((4097,), dtype, 5),
            odd.transpose(2, 0, 1), big[:, ::3, 1::2], big[..., ::-1], odd.reshape(-1)[1:],
            np.broadcast_to(_values((1, 41), dtype, 6), (37, 41)), np.broadcast_to(_values((), dtype, 7), (5, 9))]


def _run(fn, x: np.ndarray, in_place: bool, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    monkeypatch.setattr(kernels, "IN_PLACE", in_place)
    with np.errstate(all="ignore"):
        return np.asarray(fn(x))


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    bits = _BITS[a.dtype]
    assert np.array_equal(np.ascontiguousarray(a).view(bits), np.ascontiguousarray(b).view(bits))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["logistic", "rsqrt"])
def test_in_place_gives_the_old_bits(name: str, dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    fn = kernels._UNARY_FLOAT[name]
    for x in _operands(dtype):
        before = x.copy()
        new, old = _run(fn, x, True, monkeypatch), _run(fn, x, False, monkeypatch)
        _same(new, old)
        assert new.strides == old.strides  # the layout `-x` / `np.sqrt(x)` gives (x's axis order)
        _same(x, before)  # the operand is untouched
        assert not np.shares_memory(new, x)


def test_the_old_bits_are_the_formula() -> None:
    """The old path (flag off) is the formula numpy evaluates with a new array per step: the comparison above
    checks against the sim's definition of logistic and rsqrt, not against itself."""
    x = _values((5, 999), np.float32, 9)
    with np.errstate(all="ignore"):
        _same(kernels._logistic(x), np.float32(1) / (np.float32(1) + np.exp(-x)))
        _same(kernels._rsqrt(x), np.float32(1) / np.sqrt(x))


def _op(name: str, dtype: str, shape: tuple[int, ...]):
    b = Builder()
    (x,) = [b.input(shape, dtype)]
    return b.finish(b.emit(name, [x])).ops[-1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("name", ["logistic", "rsqrt"])
def test_kernels_and_fast_steps(name: str, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic kernel (narrow floats widened, the result rounded to storage) and the compiled plan's fast
    step give the same bits with the flag on and off."""
    shape = (7, 129)
    op = _op(name, dtype, shape)
    with np.errstate(all="ignore"):
        x = kernels.store(_values(shape, np.float32, 11), dtype)
    fast = specialize(op)
    runs = {}
    for flag in (True, False):
        monkeypatch.setattr(kernels, "IN_PLACE", flag)
        with np.errstate(all="ignore"):
            runs[flag] = [kernels.KERNELS[name](op, [x])[0], *([fast(x)] if fast is not None else [])]
    assert (fast is not None) == (dtype in ("float32", "float64"))
    for a, b in zip(runs[True], runs[False]):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_eager_sigmoid_and_rsqrt_against_cpu(tpu, dtype: torch.dtype) -> None:
    x = torch.randn(3, 37, 41, generator=torch.Generator().manual_seed(0)).to(dtype) * 6
    x.view(-1)[:6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 100.0]).to(dtype)
    tol = {torch.float32: 2e-6, torch.float64: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    for fn in (torch.sigmoid, torch.nn.functional.silu, lambda t: torch.rsqrt(t.abs())):
        torch.testing.assert_close(fn(x.to(tpu)).cpu(), fn(x), rtol=tol, atol=tol, equal_nan=True)


class _Block(torch.nn.Module):
    """RMSNorm (rsqrt) and a SiLU-gated MLP (logistic), Llama's element-wise ops."""

    def __init__(self, d: int, f: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(d))
        self.gate, self.up, self.down = (torch.nn.Linear(d, f), torch.nn.Linear(d, f), torch.nn.Linear(f, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def _train(tpu, compiled: bool, in_place: bool, monkeypatch: pytest.MonkeyPatch) -> list[torch.Tensor]:
    monkeypatch.setattr(kernels, "IN_PLACE", in_place)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Block(48, 97).to(tpu)
    x = torch.randn(2, 37, 48, generator=torch.Generator().manual_seed(1)).to(tpu)

    def step() -> torch.Tensor:
        loss = model(x).square().mean()
        loss.backward()
        return loss

    fn = torch.compile(step, backend="tpu") if compiled else step
    out = []
    with torchtpu.eager_mode("DEFER_NEVER"):
        for _ in range(2):
            for p in model.parameters():
                p.grad = None
            out.append(fn().detach().cpu())
            out += [p.grad.cpu() for p in model.parameters()]
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
    return out + [p.detach().cpu() for p in model.parameters()]


def test_compiled_training_equals_defer_never_either_way(tpu, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _train(tpu, False, False, monkeypatch)
    for compiled, in_place in ((False, True), (True, True), (True, False)):
        got = _train(tpu, compiled, in_place, monkeypatch)
        assert all(torch.equal(a, b) for a, b in zip(got, reference)), (compiled, in_place)
