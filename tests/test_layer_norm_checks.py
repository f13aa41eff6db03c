"""Direct calls of aten.native_layer_norm / native_layer_norm_backward with CPU's dtype checks (class and words):
integral, bool and complex inputs refused by the kernel's dispatch, CPU's mixed-type rule (float32 parameters
with a float16/bfloat16 input, whose mean and rstd are then float32), parameters or statistics of another dtype;
in every eager mode, and the mixed-type forward compiled equal to eager."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

# (input dtype, weight dtype or None, bias dtype or None)
FORWARD = [(torch.int64, None, None), (torch.bool, None, None), (torch.complex64, None, None), (F32, F64, None),
           (F64, F32, None), (F16, F32, F32), (BF16, F32, None), (F16, F32, F16), (F16, F16, F32), (F64, F16, None),
           (F32, None, F64), (F32, torch.int64, None), (F32, F32, F64), (F32, F32, F32)]
# (grad dtype, input dtype, mean/rstd dtype, weight dtype, bias dtype)
BACKWARD = [(torch.int64, torch.int64, F32, torch.int64, torch.int64), (torch.int64, torch.int64, F32, F32, F32),
            (F32, F32, F32, F64, F32), (F16, F16, F16, F16, F16), (F16, F16, F32, F16, F16),
            (F32, F64, F32, F32, F32), (torch.complex64, torch.complex64, F32, F32, F32), (F16, F16, F32, F32, F32),
            (F64, F32, F32, F32, F32)]


def _tensor(shape: tuple[int, ...], dtype: torch.dtype | None, device: str) -> torch.Tensor | None:
    if dtype is None:
        return None
    gen = torch.Generator().manual_seed(sum(shape))
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 3).to(dtype).to(device)


def _outcome(fn, device: str) -> tuple[str, object]:
    try:
        return "ok", [None if t is None else t.cpu() for t in fn(device)]
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


def _same_as_cpu(mode: str, fn) -> None:
    want = _outcome(fn, "cpu")
    with torch.tpu.eager_mode(mode):
        got = _outcome(fn, "tpu")
    assert got[0] == want[0], (got, want)
    if want[0] != "ok":
        assert got[1] == want[1]
        return
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            assert g.dtype == w.dtype
            torch.testing.assert_close(g.float(), w.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtypes", FORWARD, ids=str)
def test_layer_norm_forward_dtypes_as_cpu(mode: str, dtypes: tuple) -> None:
    x, w, b = dtypes
    _same_as_cpu(mode, lambda d: torch.ops.aten.native_layer_norm(
        _tensor((2, 3), x, d), [3], _tensor((3,), w, d), _tensor((3,), b, d), 1e-5))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtypes", BACKWARD, ids=str)
def test_layer_norm_backward_dtypes_as_cpu(mode: str, dtypes: tuple) -> None:
    g, x, stats, w, b = dtypes
    _same_as_cpu(mode, lambda d: torch.ops.aten.native_layer_norm_backward(
        _tensor((2, 3), g, d), _tensor((2, 3), x, d), [3], _tensor((2, 1), stats, d), _tensor((2, 1), stats, d),
        _tensor((3,), w, d), _tensor((3,), b, d), [True, True, True]))


def test_mixed_type_layer_norm_compiled_equals_eager() -> None:
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(8).to("tpu")
    x = torch.randn(4, 8, dtype=torch.bfloat16).to("tpu").requires_grad_()
    eager = norm(x)
    eager.float().sum().backward()
    eager_grad, x.grad = x.grad.cpu(), None
    compiled = torch.compile(lambda t: norm(t), backend="tpu")(x)
    compiled.float().sum().backward()
    assert compiled.dtype == torch.bfloat16
    assert torch.equal(compiled.cpu(), eager.cpu()) and torch.equal(x.grad.cpu(), eager_grad)
    stats = torch.ops.aten.native_layer_norm(x.detach(), [8], norm.weight, norm.bias, 1e-5)
    assert [t.dtype for t in stats] == [torch.bfloat16, torch.float32, torch.float32]
