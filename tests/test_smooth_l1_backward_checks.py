"""smooth_l1_loss_backward as CPU's TensorIterator kernel checks it: the operands' broadcast shape first, then the
common dtype's safe cast to the output, then the kernel's dispatch, which has no complex or bool loop (tpu raised
"gt_cpu" for complex, a bool-subtraction error for bool, and a ZeroDivisionError for an empty input with mean
reduction, where CPU's norm is 1. / 0 and no element is written); in every eager mode and compiled."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


REFUSED = {
    "complex": lambda d: aten.smooth_l1_loss_backward(
        _t(3, dtype=torch.complex64, d=d), _t(3, dtype=torch.complex64, d=d), _t(3, dtype=torch.complex64, d=d),
        1, 0.5),
    "complex_empty_zero_beta": lambda d: aten.smooth_l1_loss_backward(
        _t(0, 1, dtype=torch.complex64, d=d), _t(0, 1, dtype=torch.complex64, d=d),
        _t(0, 1, dtype=torch.complex64, d=d), 1, 0.0),
    "bool": lambda d: aten.smooth_l1_loss_backward(
        _t(3, dtype=torch.bool, d=d), _t(2, 1, dtype=torch.bool, d=d), _t(3, dtype=torch.bool, d=d), 2, 1.0),
    "broadcast_before_dtype": lambda d: aten.smooth_l1_loss_backward(
        _t(3, 1, dtype=torch.complex64, d=d), _t(3, 2, 3, dtype=torch.complex64, d=d),
        _t(2, 3, dtype=torch.complex64, d=d), 1, 0.9),
    "complex_out": lambda d: aten.smooth_l1_loss_backward.grad_input(
        _t(3, dtype=torch.complex64, d=d), _t(3, dtype=torch.complex64, d=d), _t(3, dtype=torch.complex64, d=d),
        1, 0.5, grad_input=torch.empty(3, dtype=torch.complex64, device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


@pytest.mark.parametrize("name", ["complex", "bool", "broadcast_before_dtype"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[name])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_an_empty_input_gives_an_empty_gradient(reduction: int, mode: str) -> None:
    assert_exactly_cpu(lambda d: [aten.smooth_l1_loss_backward(
        _t(0, 3, dtype=torch.float32, d=d), _t(0, 3, dtype=torch.float32, d=d), _t(0, 3, dtype=torch.float32, d=d),
        reduction, 0.5)], mode)


@pytest.mark.parametrize("mode", MODES)
def test_integer_operands_are_computed(mode: str) -> None:
    x = torch.tensor([1, 2, 3])
    assert_exactly_cpu(lambda d: [aten.smooth_l1_loss_backward(x.to(d), (x * 2).to(d), x.to(d), 2, 1.5)], mode)
