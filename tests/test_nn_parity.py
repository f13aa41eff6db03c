"""torch.nn.functional on tpu against CPU, for the causes PyTorch's test_nn.py (TestNNDeviceType) found: values in
every eager mode (bit-identical across modes) and under torch.compile(backend="tpu"); errors with CPU's class."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _uint8(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(1))


# (input shape, output size, mode, antialias, align_corners): uint8 bilinear/bicubic, down and up, with and without
# antialiasing (ATen's int16 fixed-point passes: it gave zeros before)
UINT8_RESIZE = [((1, 3, 40, 40), (32, 32), "bilinear", False, False),
                ((1, 3, 40, 40), (32, 32), "bilinear", True, True),
                ((2, 1, 7, 9), (7, 4), "bicubic", False, False), ((1, 2, 5, 5), (13, 3), "bicubic", True, False),
                ((1, 5, 20, 20), (60, 60), "bilinear", False, True), ((1, 3, 12, 10), (12, 30), "bicubic", False, True)]


def _resize(case: tuple[Any, ...], device: str) -> torch.Tensor:
    shape, size, mode, antialias, align = case
    return F.interpolate(_uint8(shape).to(device), size=size, mode=mode, antialias=antialias, align_corners=align)


@pytest.mark.parametrize("case", UINT8_RESIZE, ids=lambda c: f"{c[2]}_{c[0][2]}to{c[1][0]}_aa{int(c[3])}_al{int(c[4])}")
def test_uint8_interpolate_matches_cpu_in_every_mode(tpu, case):
    want = _resize(case, "cpu")
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = _resize(case, "tpu").cpu()
    first = got["DEFER_NEVER"]
    assert first.dtype == torch.uint8 and first.shape == want.shape
    diff = (first.int() - want.int()).abs()
    # CPU computes its float weights in double before the int16 rounding: a tie may round the other way
    assert diff.max() <= 1 and (diff > 0).sum() <= max(2, want.numel() // 1000)
    for mode in MODES[1:]:
        assert torch.equal(got[mode], first), mode


def test_uint8_interpolate_compiled_matches_eager(tpu):
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(9, 5), mode="bilinear", antialias=True)

    x = _uint8((1, 3, 14, 12)).to("tpu")
    assert torch.equal(torch.compile(fn, backend="tpu")(x).cpu(), fn(x).cpu())


def _outcome(fn: Callable[[str], Any], device: str) -> Any:
    try:
        return fn(device).cpu()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return type(e)


def _inplace_backward(forward: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[str], torch.Tensor]:
    def run(device: str) -> torch.Tensor:
        a = torch.tensor([-1.0, 1.0], device=device, requires_grad=True)
        forward(a.clone()).backward(torch.ones(2, device=device))
        return a.grad

    return run


REFUSED: dict[str, Callable[[str], Any]] = {
    # an in-place activation with a negative slope saves a result whose sign no longer tells the input's: CPU
    # refuses its backward (tpu returned [1, 1], a wrong gradient)
    "elu_neg_alpha": _inplace_backward(lambda x: F.elu_(x, alpha=-2)),
    "celu_neg_alpha": _inplace_backward(lambda x: F.celu_(x, alpha=-2)),
    "leaky_relu_neg_slope": _inplace_backward(lambda x: F.leaky_relu_(x, -2)),
    "rrelu_neg_slope": _inplace_backward(lambda x: F.rrelu_(x, -5.0, 1.0)),
    # padding: only a batched input's batch dim may be 0
    "reflection_pad1d_empty_channels": lambda d: torch.nn.ReflectionPad1d(2)(torch.ones(3, 0, 10, device=d)),
    "reflection_pad2d_empty_channels": lambda d: torch.nn.ReflectionPad2d(2)(torch.ones(3, 0, 10, 10, device=d)),
    "replication_pad3d_empty_channels": lambda d: torch.nn.ReplicationPad3d(1)(torch.ones(1, 0, 2, 2, 2, device=d)),
    # margin losses: ATen's shape checks (were reshape ValueErrors, or a NaN for an empty input)
    "multi_margin_empty": lambda d: F.multi_margin_loss(torch.ones(0, device=d), torch.ones(0, device=d).long()),
    "multi_margin_empty_classes": lambda d: F.multi_margin_loss(torch.ones(2, 0, device=d),
                                                                torch.zeros(2, device=d).long()),
    "multi_margin_target_size": lambda d: F.multi_margin_loss(torch.ones(5, device=d), torch.zeros(3, device=d)),
    "multi_margin_target_2d": lambda d: F.multi_margin_loss(torch.ones(2, 5, device=d),
                                                            torch.zeros(2, 1, device=d).long()),
    "multi_margin_weight_size": lambda d: F.multi_margin_loss(torch.ones(2, 5, device=d),
                                                              torch.zeros(2, device=d).long(),
                                                              weight=torch.ones(4, device=d)),
    "multilabel_margin_empty": lambda d: F.multilabel_margin_loss(torch.ones(0, device=d),
                                                                  torch.ones(0, device=d).long()),
    "multilabel_margin_target_size": lambda d: F.multilabel_margin_loss(torch.ones(2, 5, device=d),
                                                                        torch.zeros(2, 4, device=d).long()),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_as_cpu_in_every_mode(tpu, name):
    want = _outcome(REFUSED[name], "cpu")
    assert isinstance(want, type) and issubclass(want, Exception)
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            assert _outcome(REFUSED[name], "tpu") is want, mode


def _nll_byte(device: str, reduction: str) -> torch.Tensor:
    x = torch.linspace(-3, 2, 40, device=device).reshape(10, 4).log_softmax(-1)
    t = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 3, 1], dtype=torch.uint8, device=device)
    return F.nll_loss(x, t, reduction=reduction)


def _multi_margin_0d_target_grad(device: str) -> torch.Tensor:
    x = torch.tensor([[0.2, -0.1, 0.4]], device=device, requires_grad=True)
    loss = F.multi_margin_loss(x, torch.tensor(1, device=device), reduction="none")
    assert loss.shape == ()
    loss.backward(torch.tensor(2.0, device=device))
    return x.grad


VALUES: dict[str, Callable[[str], torch.Tensor]] = {
    "elu_inplace_pos_alpha": _inplace_backward(lambda x: F.elu_(x, alpha=0.5)),
    "leaky_relu_inplace_zero_slope": _inplace_backward(lambda x: F.leaky_relu_(x, 0.0)),
    "leaky_relu_out_of_place_neg_slope": _inplace_backward(lambda x: F.leaky_relu(x, -2)),
    "reflection_pad1d_empty_batch": lambda d: torch.nn.ReflectionPad1d(2)(torch.ones(0, 3, 10, device=d)),
    # a Byte target is read as int64 (was a gather TypeError)
    **{f"nll_loss_byte_target_{r}": functools.partial(_nll_byte, reduction=r) for r in ("none", "mean", "sum")},
    # a 0-d target gives a 0-d loss without reduction whatever the input's rank (a (1, C) input gave shape (1,))
    "multi_margin_2d_input_0d_target": lambda d: F.multi_margin_loss(torch.tensor([[0.2, -0.1, 0.4]], device=d),
                                                                     torch.tensor(1, device=d), reduction="none"),
    "multi_margin_1x1_input_0d_target": lambda d: F.multi_margin_loss(torch.ones(1, 1, device=d),
                                                                      torch.tensor(0, device=d), reduction="none"),
    "multi_margin_2d_input_0d_target_backward": _multi_margin_0d_target_grad,
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_cpu_in_every_mode(tpu, name):
    want = VALUES[name]("cpu")
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = VALUES[name]("tpu").cpu()
    assert got["DEFER_NEVER"].dtype == want.dtype
    torch.testing.assert_close(got["DEFER_NEVER"], want, rtol=1e-6, atol=1e-6)
    for mode in MODES[1:]:
        assert torch.equal(got[mode], got["DEFER_NEVER"]), mode



@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("target_shape", [(), (1,)])
def test_multi_margin_compiled_forward_and_backward_match_cpu(tpu, reduction, target_shape):
    """Compiled, the op is lowered as in eager (compile/native_autograd.py): upstream's Autograd-key decomposition
    gave a (1, C) input with a 0-d target a loss of shape (1,)."""
    x = torch.tensor([[0.2, -0.1, 0.4]])
    t = torch.ones(target_shape, dtype=torch.long)
    want_x = x.clone().requires_grad_()
    want = F.multi_margin_loss(want_x, t, reduction=reduction)
    want.backward(torch.full_like(want, 2.0))
    got_x = x.to("tpu").requires_grad_()
    fn = torch.compile(lambda a, b: F.multi_margin_loss(a, b, reduction=reduction), backend="tpu", dynamic=False)
    got = fn(got_x, t.to("tpu"))
    got.backward(torch.full_like(got, 2.0))
    assert got.shape == want.shape
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got_x.grad.cpu(), want_x.grad, rtol=1e-6, atol=1e-6)
