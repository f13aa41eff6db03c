"""Silent mismatches and a CPU crash the schema fuzzer found with seeds 23, 24 and 27 (`--calls 3`), each now
CPU's result or CPU's refusal in every eager mode (and under torch.compile where noted).

- batch_norm_backward with update=True and no save_mean or save_var segfaults CPU (seeds 23 and 24 aborted), an
  input of no elements raises SIGFPE (seed 74): the fuzzer's CPU_CRASHES rule skips them, and leaves the calls CPU
  refuses first (a 1-D input) and those with their stats to the comparison.
- binary_cross_entropy_backward with grad_output or target of another shape than self: CPU's result has self's
  shape (its kernel iterates over squeezed views into a squeezed view of grad_input); tpu gave the broadcast shape.
- bincount of negative values: CPU refuses them (tpu counted them); float weights with integer input are computed.
- complex pow: CPU's exp(y * log(x)) for an exponent like -4 (tpu's repeated products overflowed to NaN).
- cummax / cummin of a 0-d tensor with a dim other than -1 or 0: CPU's IndexError (tpu computed).
- soft_margin_loss_backward with a complex grad_output into a real gradient: CPU's cast refusal (tpu computed).
"""

from __future__ import annotations

import pytest
import torch

from tests.refusal_cases import (
    MODES,
    assert_close_to_cpu,
    assert_exactly_cpu,
    assert_refused_as_cpu,
    assert_refused_as_cpu_compiled,
)
from torchtpu.fuzz.args import Call, TensorArg, make_call
from torchtpu.fuzz.overloads import cpu_crashes, registered
from torchtpu.fuzz.runner import call_rng

aten = torch.ops.aten


def _call(name: str, seed: int, index: int) -> Call:
    op = {str(o): o for o in registered()}[name]
    return make_call(op, call_rng(seed, name, index), seed)


@pytest.mark.parametrize(("seed", "index"), [(24, 0), (23, 2), (74, 0)])  # 74: float16[0, 4, 0], SIGFPE
def test_batch_norm_backward_without_saved_stats_is_skipped(seed: int, index: int) -> None:
    assert cpu_crashes(_call("aten.batch_norm_backward.default", seed, index)) is not None


def test_batch_norm_backward_rule_leaves_calls_cpu_refuses_or_computes() -> None:
    assert cpu_crashes(_call("aten.batch_norm_backward.default", 23, 0)) is None  # 1-D input: CPU's IndexError
    op = aten.batch_norm_backward.default

    def call(save_mean: bool, update: bool = True) -> Call:
        t = lambda *s: TensorArg(torch.ones(*s))  # noqa: E731
        return Call(op, [t(2, 4), t(2, 4), t(4), t(4), t(4), t(4) if save_mean else None, t(4), update, 1e-5,
                         [True, True, True], t(0)])

    assert cpu_crashes(call(save_mean=True)) is None
    assert cpu_crashes(call(save_mean=False)) is not None
    assert cpu_crashes(call(save_mean=False, update=False)) is None  # evaluation reads the running stats


def _bce_backward(d: str) -> list[torch.Tensor]:
    grad = torch.tensor([[2.0], [3.0], [4.0], [5.0]], device=d)
    x = torch.tensor([[0.1, 0.2, 0.3, 0.4]], device=d)
    target = torch.tensor([1.0, 0.0, 1.0, 0.0], device=d)
    weight = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, device=d)
    return [aten.binary_cross_entropy_backward(torch.ones(4, 1, device=d), torch.full((1, 1), 0.3, device=d),
                                               torch.ones(1, device=d), None, 1),
            aten.binary_cross_entropy_backward(grad, x, target, None, 1),
            aten.binary_cross_entropy_backward(grad, x, target, weight, 2)]


@pytest.mark.parametrize("mode", MODES)
def test_bce_backward_of_other_shapes_has_self_shape(mode: str) -> None:
    assert_close_to_cpu(_bce_backward, mode)
    assert [tuple(t.shape) for t in _bce_backward("tpu")] == [(1, 1), (1, 4), (1, 4)]


@pytest.mark.parametrize("mode", MODES)
def test_bce_backward_into_a_grad_input_of_the_broadcast_shape(mode: str) -> None:
    def calls(d: str) -> list[torch.Tensor]:  # fuzz seed 26: grad [4, 3], self [1, 3], target [4, 3]
        g = torch.Generator().manual_seed(0)
        grad, x, target = torch.rand(4, 3, generator=g), torch.rand(1, 3, generator=g), torch.rand(4, 3, generator=g)
        out = torch.empty(4, 3, device=d)
        aten.binary_cross_entropy_backward.grad_input(grad.to(d), x.to(d), target.to(d), None, 1, grad_input=out)
        return [out]

    assert_close_to_cpu(calls, mode)

    def smaller(d: str) -> list[torch.Tensor]:  # a contiguous grad_input of another shape: CPU's squeezed result
        out = torch.full((2, 3), 7.0, device=d)
        aten.binary_cross_entropy_backward.grad_input(
            torch.ones(4, 3, device=d), torch.full((1, 3), 0.5, device=d), torch.ones(4, 3, device=d),
            None, 1, grad_input=out)
        return [out]

    assert_close_to_cpu(smaller, mode)


def test_bce_backward_of_other_shapes_compiled() -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: _bce_backward("tpu"), backend="tpu")()
    for g, c in zip(got, _bce_backward("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c)


@pytest.mark.parametrize("mode", MODES)
def test_bincount_of_negative_values_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.bincount(torch.tensor([9, -7, 6, -8], device=d), minlength=5), mode)
    assert_refused_as_cpu(lambda d: aten.bincount(torch.tensor([1, 2], device=d), torch.ones(3, device=d)), mode)
    assert_refused_as_cpu(lambda d: aten.bincount(torch.tensor([True], device=d)), mode)


def test_bincount_of_negative_values_refused_compiled() -> None:
    assert_refused_as_cpu_compiled(lambda d: aten.bincount(torch.tensor([9, -7, 6, -8], device=d), minlength=5))


@pytest.mark.parametrize("mode", MODES)
def test_bincount_with_float_weights(mode: str) -> None:
    assert_exactly_cpu(lambda d: [aten.bincount(torch.tensor([1, 3, 1], device=d),
                                                torch.tensor([0.5, 1.0, 2.0], device=d)),
                                  aten.bincount(torch.tensor([], dtype=torch.int64, device=d),
                                                torch.tensor([], device=d), 3)], mode)


_BASES = [0j, 1e30 + 0.3363j, 1 + 1j, -2 + 0j, 3 - 4j, -0.5 - 2j, 1e-30 + 1e-30j]


def _complex_pow(d: str) -> list[torch.Tensor]:
    x = torch.tensor(_BASES, dtype=torch.complex64, device=d)
    out = [aten.pow.Tensor_Scalar(x, e) for e in (-4, -3, 4, 7, 1.5)]
    out += list(aten._foreach_pow.Scalar([x, x[:2]], -4))
    out.append(aten.pow.Tensor_Tensor(x, torch.full_like(x, -4)))
    return [torch.view_as_real(t) for t in out]


@pytest.mark.parametrize("mode", MODES)
def test_complex_pow_as_cpu(mode: str) -> None:
    assert_close_to_cpu(_complex_pow, mode)


def test_complex_pow_as_cpu_compiled() -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: _complex_pow("tpu"), backend="tpu")()
    for g, c in zip(got, _complex_pow("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", [aten.cummax.default, aten.cummin.default])
def test_cumextreme_of_scalar_dim_checked(mode: str, op: torch._ops.OpOverload) -> None:
    assert_refused_as_cpu(lambda d: op(torch.tensor(3.0, device=d), -2), mode)
    assert_refused_as_cpu(lambda d: op(torch.tensor(3.0, device=d), 1), mode)


def test_cumextreme_of_scalar_dim_checked_compiled() -> None:
    assert_refused_as_cpu_compiled(lambda d: aten.cummax.default(torch.tensor(3.0, device=d), -2))


@pytest.mark.parametrize("mode", MODES)
def test_soft_margin_backward_of_complex_grad_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.soft_margin_loss_backward(
        torch.ones(0, 0, 5, dtype=torch.complex64, device=d), torch.ones(0, 0, 5, device=d),
        torch.ones(1, dtype=torch.int32, device=d), 2), mode)
    assert_refused_as_cpu(lambda d: aten.soft_margin_loss_backward(
        torch.ones(3, dtype=torch.complex64, device=d), torch.ones(3, device=d), torch.ones(3, device=d), 1), mode)
