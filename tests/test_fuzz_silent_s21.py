"""Silent results of fuzzer seeds 21 and 22, now CPU's in every eager mode and compiled:

- threshold / threshold_ of an integer tensor with a float threshold: ATen's kernel converts the threshold to
  self's dtype (toward zero) and compares with that (-4 <= -4.4 was false on tpu; CPU's -4 <= -4 is true).
- cumprod of a complex tensor: ATen's scan starts from 1, so its first element is 1 * x[0] in c10::complex's
  product (an infinite part times 0 is NaN: inf+1j gives inf+nanj), not x[0] copied.
- linalg_lstsq with A's batch broadcast to b's: rank and singular values keep A's own batch shape (tpu gave b's).
- mse_loss_backward.grad_input: computed in the inputs' common dtype and cast to grad_input's (a float64
  grad_input got the float16 functional's inf; an int self with a float grad_input was refused).

And refused in CPU's class and words where tpu computed: hardshrink / hardshrink_backward with a lambd that
overflows the tensor's dtype (the kernel's checked conversion; tpu gave 0), mean.dtype_out with dtype= given and
an out= of another dtype (exact, as mean.out's), multilabel_margin_loss with a target value below -1 or past the
first -1 out of range (tpu took every negative value for the terminator)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

INF = float("inf")


def _ints(d: str, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor([[-4, -5, 3], [0, -1, 7]], dtype=dtype, device=d)


def _half(d: str) -> torch.Tensor:
    return torch.ones(2, dtype=torch.float16, device=d)


def _complexes(d: str) -> torch.Tensor:
    return torch.tensor([[complex(INF, 1), 2 + 3j, 0.5 - 1j], [complex(1, INF), 1 + 0j, -2j]], device=d)


def _lstsq(d: str, a_batch: tuple[int, ...], driver: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(22)
    a, b = torch.randn(*a_batch, 5, 2, generator=g), torch.randn(5, 2, 5, 3, generator=g)
    _, _, rank, sv = torch.linalg.lstsq(a.to(d), b.to(d), driver=driver)
    return [rank, sv.round(decimals=4)]


def _mse_backward(d: str, out: torch.dtype, grad: torch.dtype = torch.float64,
                  x: torch.dtype = torch.float16) -> torch.Tensor:
    g, t = torch.tensor(3.0, dtype=grad, device=d), torch.tensor(-20000, device=d)
    return torch.ops.aten.mse_loss_backward.grad_input(g, torch.tensor(60000.0, dtype=x, device=d), t, 0,
                                                       grad_input=torch.empty(0, dtype=out, device=d))


CASES = {
    "threshold_int_float_threshold": lambda d: [torch.threshold(_ints(d), -4.4, -2),
                                                torch.threshold(_ints(d), 2.9, 5.7),
                                                torch.threshold(_ints(d, torch.int8), -0.5, 1)],
    "threshold_inplace_int8": lambda d: [torch.threshold_(_ints(d, torch.int8), -1.25, 1)],
    "threshold_out_uint8": lambda d: [torch.ops.aten.threshold.out(_ints(d, torch.uint8).abs(), 3.99, 9,
                                                                   out=torch.empty(2, 3, dtype=torch.uint8, device=d))],
    "lstsq_rank_of_a_broadcast_a": lambda d: [*_lstsq(d, (1, 1), "gelsd"), *_lstsq(d, (5, 1), "gelss"),
                                              *_lstsq(d, (1, 2), "gelsy")[:1], *_lstsq(d, (5, 2), "gelsd")],
    "mse_backward_grad_input_dtype": lambda d: [_mse_backward(d, torch.float64),
                                                _mse_backward(d, torch.float32, torch.bfloat16, torch.int32),
                                                torch.ops.aten.mse_loss_backward(
                                                    torch.tensor(3.0, dtype=torch.float64, device=d),
                                                    torch.tensor(60000.0, dtype=torch.float16, device=d),
                                                    torch.tensor(-20000, device=d), 0)],
    "threshold_float_unchanged": lambda d: [torch.threshold(_ints(d).float() / 3, -1.3, 0.25)],
    "cumprod_complex_infinite": lambda d: [torch.cumprod(_complexes(d), 1), torch.cumprod(_complexes(d), 0),
                                           torch.cumprod(_complexes(d)[:, :1], 1),
                                           torch.cumprod(_complexes(d)[0, 0], 0)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(CASES[case], mode)


@pytest.mark.parametrize("case", ["threshold_int_float_threshold", "cumprod_complex_infinite"])
def test_as_cpu_compiled(case: str) -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: CASES[case]("tpu"), backend="tpu")()
    for g, c in zip(got, CASES[case]("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)


REFUSED = {
    "lstsq_batches_that_do_not_broadcast": lambda d: torch.linalg.lstsq(torch.ones(2, 1, 5, 2, device=d),
                                                                        torch.ones(5, 2, 5, 2, device=d)),
    "mse_backward_grad_input_int_out": lambda d: _mse_backward(d, torch.int32),
    "multilabel_target_below_minus_one": lambda d: torch.nn.functional.multilabel_margin_loss(
        torch.ones(3, 5, device=d), torch.tensor([[-4, 3, 3, 4, 2]] * 3, device=d)),
    "multilabel_target_past_the_terminator": lambda d: torch.ops.aten.multilabel_margin_loss_forward.output(
        torch.ones(3, 5, dtype=torch.float16, device=d), torch.tensor([[3, -1, 9, 0, 0]] * 3, device=d), 0,
        output=torch.empty(0, dtype=torch.float16, device=d), is_target=torch.empty(0, dtype=torch.float16, device=d)),
    "hardshrink_half_lambd": lambda d: torch.ops.aten.hardshrink.out(_half(d), 1e30, out=torch.empty_like(_half(d))),
    "hardshrink_float_lambd": lambda d: torch.nn.functional.hardshrink(_half(d).float(), 1e300),
    "hardshrink_complex_lambd": lambda d: torch.nn.functional.hardshrink(_half(d).bfloat16(), 1 + 1j),
    "hardshrink_backward_half_lambd": lambda d: torch.ops.aten.hardshrink_backward(_half(d), _half(d), 1e30),
    "mean_dtype_out_given": lambda d: torch.ops.aten.mean.dtype_out(_half(d).float(), dtype=torch.float16,
                                                                    out=torch.empty((), device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)
