"""Direct calls of aten.convolution_backward with inconsistent arguments raise before any launch: upstream's shape
checks give CPU's class and message; what CPU's kernel refuses with a backend message (oneDNN's "could not create
a primitive descriptor", "itensor_view_from_dense") is a RuntimeError naming the expected grad_output shape or the
dtypes (torchtpu/ops/conv.py `_check_backward`); valid calls give CPU's gradients."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import torchtpu  # noqa: F401

aten = torch.ops.aten
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
MASK = [True, True, True]


def _t(*shape: int) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(sum(shape))) + 0.5


def _call(g: torch.Tensor, x: torch.Tensor, w: torch.Tensor, stride: list[int] = (1, 1),  # type: ignore[assignment]
          pad: list[int] = (0, 0), dil: list[int] = (1, 1), transposed: bool = False,  # type: ignore[assignment]
          out_pad: list[int] = (0, 0), groups: int = 2) -> tuple:  # type: ignore[assignment]
    return (g, x, w, [w.shape[1] * groups if transposed else w.shape[0]], list(stride), list(pad), list(dil),
            transposed, list(out_pad), groups, MASK)


X, W, G = _t(2, 4, 6, 6), _t(6, 2, 3, 3), _t(2, 6, 4, 4)
XT, GT = _t(2, 6, 4, 4), _t(2, 4, 6, 6)
CPU_SAME = {
    "ok": _call(G, X, W),
    "ok_transposed": _call(GT, XT, W, transposed=True),
    "grad_rank": _call(_t(2, 6, 4), X, W),
    "weight_in_channels": _call(G, X, _t(6, 3, 3, 3)),
    "groups_not_dividing": _call(G, X, W, groups=4),
    "groups_zero": _call(G, X, W, groups=0),
    "stride_length": _call(G, X, W, stride=[1, 1, 1]),
    "padding_length": _call(G, X, W, pad=[0, 0, 0]),
    "stride_zero": _call(G, X, W, stride=[0, 0]),
    "padding_negative": _call(G, X, W, pad=[-1, -1]),
    "input_rank": _call(G, _t(2, 4, 6), W),
    "kernel_too_big": _call(_t(2, 6, 1, 1), _t(2, 4, 2, 2), W),
    "transposed_output_padding": _call(GT, XT, W, transposed=True, out_pad=[1, 1]),
}
OURS = {
    "grad_spatial": (_call(_t(2, 6, 5, 5), X, W),
                     "expected grad_output of shape [2, 6, 4, 4] (the convolution's output for input [2, 4, 6, 6] and "
                     "weight [6, 2, 3, 3]), but got grad_output of shape [2, 6, 5, 5]"),
    "grad_channels": (_call(_t(2, 5, 4, 4), X, W), "but got grad_output of shape [2, 5, 4, 4]"),
    "grad_batch": (_call(_t(3, 6, 4, 4), X, W), "but got grad_output of shape [3, 6, 4, 4]"),
    "grad_transposed": (_call(_t(2, 4, 7, 7), XT, W, transposed=True), "expected grad_output of shape [2, 4, 6, 6]"),
    "dtypes": (_call(G.double(), X, W), "expected grad_output, input and weight of one dtype, but got Double, Float, "
               "Float"),
}


def _outcome(args: tuple, device: str, mode: str = "DEFER_NEVER") -> tuple[Any, str, Any]:
    moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    try:
        with torch.tpu.eager_mode(mode) if device == "tpu" else torch.no_grad():
            out = aten.convolution_backward(*moved)
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e), str(e).split("\n")[0], None
    return None, "", [o.cpu() for o in out]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CPU_SAME))
def test_raises_and_computes_as_cpu(name: str, mode: str) -> None:
    cpu_cls, cpu_msg, cpu_y = _outcome(CPU_SAME[name], "cpu")
    tpu_cls, tpu_msg, tpu_y = _outcome(CPU_SAME[name], "tpu", mode)
    assert (tpu_cls, tpu_msg) == (cpu_cls, cpu_msg)
    if cpu_y is not None:
        for a, b in zip(tpu_y, cpu_y):
            torch.testing.assert_close(a, b, atol=5e-2, rtol=1e-2)  # the MXU's default (bf16-pass) precision


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OURS))
def test_cpu_kernel_errors_named(name: str, mode: str) -> None:
    """CPU raises a RuntimeError from its backend library; the tpu raises one naming what is wrong."""
    args, words = OURS[name]
    assert _outcome(args, "cpu")[0] is RuntimeError
    cls, message, _ = _outcome(args, "tpu", mode)
    assert cls is RuntimeError and message.startswith("convolution_backward: ") and words in message, message
