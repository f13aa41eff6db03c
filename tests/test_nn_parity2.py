"""torch.nn.functional on tpu against CPU, for the causes PyTorch's test_nn.py (TestNNDeviceType) found after
tests/test_nn_parity.py: float64 bicubic/bilinear weights (ATen's opmath is double for double), threshold_ on an
expanded tensor (ATen waives the overlap check: threshold is idempotent), and channels_last / channels_last_3d
carried through interpolate and its gradient. Values in every eager mode (bit-identical across modes) and under
torch.compile(backend="tpu")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _in_modes(fn: Callable[[], Any]) -> dict[str, Any]:
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = fn()
    return got


def _double(shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


# (scale factor, mode, align_corners, antialias): float64 resampling; the weights were float32 (bicubic of ones was
# 1.5e-6 off 1, where CPU's double weights give 1 within 3e-15)
DOUBLE_RESIZE = [(1.5, "bicubic", False, False), (0.5, "bicubic", True, False), (2.0, "bicubic", False, False),
                 (1.5, "bilinear", False, False), (1.5, "bilinear", True, False), (0.5, "bilinear", False, True)]


def _interp(x: torch.Tensor, case: tuple[Any, ...]) -> torch.Tensor:
    sf, mode, align, aa = case
    return F.interpolate(x, scale_factor=sf, mode=mode, align_corners=align, antialias=aa)


@pytest.mark.parametrize("case", DOUBLE_RESIZE, ids=lambda c: f"{c[1]}_x{c[0]}_al{int(c[2])}_aa{int(c[3])}")
def test_float64_interpolate_matches_cpu_in_every_mode(tpu, case):
    x = _double((2, 3, 8, 8))
    ones = torch.ones(2, 3, 8, 8, dtype=torch.float64)
    for inp in (x, ones):
        want = _interp(inp, case)
        got = _in_modes(lambda inp=inp: _interp(inp.to("tpu"), case).cpu())
        first = got["DEFER_NEVER"]
        assert first.dtype == torch.float64
        torch.testing.assert_close(first, want, atol=1e-13, rtol=0)
        for mode in MODES[1:]:
            assert torch.equal(got[mode], first), mode


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_float64_interpolate_backward_matches_cpu_in_every_mode(tpu, mode):
    x = _double((1, 2, 5, 6), seed=1)
    g = _double((1, 2, 7, 9), seed=2)

    def grad(device: str) -> torch.Tensor:
        a = x.to(device).detach().requires_grad_()
        F.interpolate(a, size=(7, 9), mode=mode, align_corners=False).backward(g.to(device))
        return a.grad.cpu()

    want = grad("cpu")
    got = _in_modes(lambda: grad("tpu"))
    torch.testing.assert_close(got["DEFER_NEVER"], want, atol=1e-13, rtol=0)
    for m in MODES[1:]:
        assert torch.equal(got[m], got["DEFER_NEVER"]), m


def test_float64_bicubic_compiled_matches_eager(tpu):
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(11, 13), mode="bicubic", align_corners=True)

    x = _double((2, 3, 8, 8)).to("tpu")
    got = torch.compile(fn, backend="tpu", dynamic=False)(x).cpu()
    assert torch.equal(got, fn(x).cpu())
    torch.testing.assert_close(got, fn(x.cpu()), atol=1e-13, rtol=0)


def _threshold_expanded(device: str) -> torch.Tensor:
    x = _double((1, 6), seed=3).to(device).expand(6, 6)
    F.threshold(x, 0.5, 0.5, inplace=True)
    F.threshold_(x, 0.25, -1.0)
    return x.cpu()


def test_threshold_inplace_on_expanded_matches_cpu_in_every_mode(tpu):
    want = _threshold_expanded("cpu")
    got = _in_modes(lambda: _threshold_expanded("tpu"))
    for mode in MODES:
        assert torch.equal(got[mode], want), mode


def test_threshold_inplace_keeps_refusing_what_cpu_refuses(tpu):
    # the waiver is threshold's own: another in-place op on an expanded view still raises as on CPU
    for device in ("cpu", "tpu"):
        x = torch.ones(1, 6, device=device).expand(6, 6)
        with pytest.raises(RuntimeError, match="single memory location"):
            x.add_(1)


def test_threshold_inplace_compiled_matches_cpu(tpu):
    def fn(x: torch.Tensor) -> torch.Tensor:
        F.threshold_(x, 0.0, 3.0)
        return x * 2

    base = _double((4, 5), seed=4)
    want_x = base.clone()
    want = fn(want_x)
    x = base.to("tpu")
    got = torch.compile(fn, backend="tpu", dynamic=False)(x)
    assert torch.equal(got.cpu(), want) and torch.equal(x.cpu(), want_x)


# (input shape, memory format, interpolate arguments): the output and the input's gradient take the input's
# memory format in every mode (out_layout.py), as on CPU
MEMORY_FORMAT = [((1, 2, 2, 1), torch.channels_last, dict(size=(4, 2), mode="nearest")),
                 ((2, 3, 8, 8), torch.channels_last, dict(scale_factor=1.5, mode="bicubic")),
                 ((2, 3, 8, 8), torch.channels_last, dict(scale_factor=0.5, mode="bilinear", antialias=True)),
                 ((1, 2, 4, 4), torch.channels_last, dict(size=3, mode="nearest-exact")),
                 ((2, 3, 4, 5, 6), torch.channels_last_3d, dict(scale_factor=2, mode="trilinear")),
                 ((1, 2, 3, 3, 2), torch.channels_last_3d, dict(size=(4, 5, 3), mode="nearest"))]


def _strided_interp(device: str, shape: tuple[int, ...], fmt: torch.memory_format, kw: dict[str, Any]
                    ) -> tuple[tuple[int, ...], tuple[int, ...], torch.Tensor, torch.Tensor]:
    x = _double(shape, seed=5).float().to(device).contiguous(memory_format=fmt).detach().requires_grad_()
    out = F.interpolate(x, **kw)
    out.backward(torch.ones(out.shape, device=device))
    return out.stride(), x.grad.stride(), out.detach().cpu(), x.grad.cpu()


@pytest.mark.parametrize("case", MEMORY_FORMAT, ids=lambda c: f"{c[2]['mode']}_{len(c[0]) - 2}d")
def test_interpolate_memory_format_in_every_mode(tpu, case):
    want = _strided_interp("cpu", *case)
    got = _in_modes(lambda: _strided_interp("tpu", *case))
    for mode in MODES:
        assert got[mode][:2] == want[:2], mode
        torch.testing.assert_close(got[mode][2], want[2], atol=2e-6, rtol=1e-6)
        torch.testing.assert_close(got[mode][3], want[3], atol=2e-5, rtol=1e-6)
        assert torch.equal(got[mode][2], got["DEFER_NEVER"][2]) and torch.equal(got[mode][3], got["DEFER_NEVER"][3])


def test_interpolate_memory_format_compiled(tpu):
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(6, 4, 8), mode="trilinear")

    x = _double((1, 3, 4, 5, 6)).float().to("tpu").contiguous(memory_format=torch.channels_last_3d)
    got = torch.compile(fn, backend="tpu", dynamic=False)(x)
    assert got.stride() == fn(x.cpu()).stride()
    assert torch.equal(got.cpu(), fn(x).cpu())


# compiled upsampling: upstream's Python decompositions (py_impl at the Autograd and CompositeImplicitAutograd keys)
# replaced the upsample node by gather arithmetic in another rounding; compile/native_autograd.py keeps the node
COMPILED = [dict(size=(11, 13), mode="bicubic", align_corners=True), dict(scale_factor=1.5, mode="bilinear"),
            dict(size=(5, 3), mode="bilinear", antialias=True), dict(scale_factor=2, mode="nearest"),
            dict(size=(7, 9), mode="nearest-exact")]


@pytest.mark.parametrize("kw", COMPILED, ids=lambda kw: kw["mode"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_interpolate_compiled_forward_and_backward_equal_eager(tpu, kw, dtype):
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **kw)

    base = _double((2, 3, 8, 8), seed=6).to(dtype)
    g = _double((2, 3, *fn(base).shape[2:]), seed=7).to(dtype).to("tpu")
    results = []
    for run in (torch.compile(fn, backend="tpu", dynamic=False), fn):
        x = base.to("tpu").requires_grad_()
        out = run(x)
        out.backward(g)
        results.append((out.detach().cpu(), x.grad.cpu()))
    (c_out, c_grad), (e_out, e_grad) = results
    assert torch.equal(c_out, e_out) and torch.equal(c_grad, e_grad)
