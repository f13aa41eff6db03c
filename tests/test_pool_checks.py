"""Max and average pooling check their arguments and shapes as ATen does: every invalid call raises CPU's error
class with CPU's message, and every valid one gives CPU's shape and values (torchtpu/ops/pool_checks.py)."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

_ARGS = [dict(kernel_size=1), dict(kernel_size=2, stride=1), dict(kernel_size=3, padding=1),
         dict(kernel_size=3, padding=2), dict(kernel_size=3), dict(kernel_size=[1] * 4), dict(kernel_size=1, stride=0),
         dict(kernel_size=1, padding=-1), dict(kernel_size=0), dict(kernel_size=2, stride=2, ceil_mode=True),
         dict(kernel_size=[2, 1, 1][:2], stride=[1, 1, 1])]
_MAX_ONLY = [dict(kernel_size=2, dilation=0), dict(kernel_size=2, dilation=2, padding=1),
             dict(kernel_size=2, dilation=[1, 1, 1, 1])]
_AVG_ONLY = [dict(kernel_size=1, divisor_override=0), dict(kernel_size=2, divisor_override=3, count_include_pad=False)]


def _shapes(nd: int) -> list[list[int]]:
    """A rank too small, a rank too large, zero-size batch, planes and spatial dims, and one valid batch."""
    return [[2] * nd, [2] * (nd + 3), [0] + [2] * nd, [1, 0] + [2] * (nd - 1), [1, 3] + [4] * nd]


def _outcome(fn, shape: list[int], kwargs: dict, device: str):  # noqa: ANN001, ANN202
    x = torch.arange(float(torch.Size(shape).numel())).reshape(shape).to(device)
    try:
        y = fn(x, **kwargs)
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e), str(e).split("\n")[0], None
    y = y[0] if isinstance(y, tuple) else y
    return None, "", y.cpu()


def _text(message: str) -> str:
    """A message without its leading function name (CPU names its kernel template, "tpu" the op)."""
    return re.sub(r"^\w+\(\): ", "", message)


@pytest.mark.parametrize("kind,nd", list(itertools.product(("max_pool", "avg_pool"), (1, 2, 3))))
def test_pooling_raises_and_computes_as_cpu(kind: str, nd: int):
    fn = getattr(F, f"{kind}{nd}d")
    extra = _MAX_ONLY if kind == "max_pool" else _AVG_ONLY
    checked = raised = 0
    for shape, kwargs in itertools.product(_shapes(nd), _ARGS + extra):
        if kind == "max_pool" and kwargs.get("stride") == 0 and nd == 1:
            continue  # max_pool1d's own CPU kernel: not dispatched to the device
        cpu_cls, cpu_msg, cpu_y = _outcome(fn, shape, kwargs, "cpu")
        tpu_cls, tpu_msg, tpu_y = _outcome(fn, shape, kwargs, "tpu")
        where = f"{kind}{nd}d{tuple(shape)} {kwargs}"
        assert tpu_cls is cpu_cls, f"{where}: cpu {cpu_cls} {cpu_msg!r}, tpu {tpu_cls} {tpu_msg!r}"
        if cpu_cls is None:
            torch.testing.assert_close(tpu_y, cpu_y, msg=where)
        else:
            raised += 1
            assert _text(tpu_msg) == _text(cpu_msg), f"{where}: cpu {cpu_msg!r}, tpu {tpu_msg!r}"
        checked += 1
    assert raised > checked // 3 and checked - raised >= 4  # both outcomes are exercised


@pytest.mark.parametrize("nd", (2, 3))
def test_pooling_backward_checks_the_forward_arguments(nd: int):
    x = torch.ones([1, 2] + [4] * nd, device="tpu")
    grad = torch.ones([1, 2] + [4] * nd, device="tpu")
    backward = getattr(torch.ops.aten, f"avg_pool{nd}d_backward")
    with pytest.raises(RuntimeError, match="pad must be non-negative"):
        backward(grad, x, [1] * nd, [1] * nd, [-1] * nd, False, True, None)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        backward(grad, x, [1] * nd, [1] * nd, [1] * nd, False, True, None)
