"""Under torch.compile(backend="tpu"), Dynamo's fake-tensor trace makes CPU's argument checks
(torchtpu/compile/fake_checks.py): a call CPU refuses raises CPU's class and first line of words (wrapped by Dynamo:
found in the exception chain) where the meta kernel or upstream decomposition traced it (then computed it or failed
in another class), and a call CPU accepts still computes CPU's values. Cases from the fuzzer's compile-mode
error_class / cpu_raises findings (seed 4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401
from torchtpu.compile import fake_checks

aten = torch.ops.aten
i32, i64, u8 = torch.int32, torch.int64, torch.uint8

REFUSED: dict[str, Callable[[str], object]] = {
    # the meta kernel traced it; the lowering failed in another class (ValueError, IndexError, AssertionError)
    "clamp_out_no_bounds": lambda d: aten.clamp.out(ones(2, dtype=torch.bool, d=d),
                                                    out=ones(4, 1, 3, dtype=torch.bool, d=d)),
    "cummin_out_byte_indices": lambda d: aten.cummin.out(ones(0, 1, 5, 4, dtype=u8, d=d), 2,
                                                         values=ones(0, dtype=u8, d=d),
                                                         indices=ones(0, 1, 5, 4, dtype=u8, d=d)),
    # the upstream decomposition ran in fake mode (no meta kernel) and refused in its own class
    "nll_loss2d_backward_target_rank": lambda d: aten.nll_loss2d_backward.grad_input(
        *(ones(4, dtype=torch.bool, d=d),) * 4, 6, 6, ones(4, dtype=torch.bool, d=d),
        grad_input=ones(0, dtype=torch.bool, d=d)),
    # computed silently (cpu_raises)
    "nan_to_num_out_dtype": lambda d: aten.nan_to_num.out(ones(1, 4, dtype=i32, d=d), None, 0.5, 0.5,
                                                          out=ones(1, 4, dtype=i64, d=d)),
    # eager-only norm_checks, made under compile too
    "group_norm_weight_size": lambda d: aten.native_group_norm(ones(2, 4, 3, d=d), ones(5, d=d), None, 2, 4, 3, 2,
                                                               1e-5),
    "threshold_int_range": lambda d: aten.threshold(ones(4, dtype=torch.int8, d=d), 300, 1),
    "take_index_int32": lambda d: aten.take(ones(1, 4, 3, dtype=u8, d=d), ones(2, dtype=i32, d=d) * 0),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[name])


ACCEPTED: dict[str, Callable[[str], object]] = {
    "clamp_out": lambda d: aten.clamp.out(torch.arange(6.0, device=d), 1.5, None, out=torch.empty(6, device=d)),
    "cummin_out": lambda d: aten.cummin.out(torch.tensor([3.0, 1.0, 2.0], device=d), 0,
                                            values=torch.empty(3, device=d),
                                            indices=torch.empty(3, dtype=i64, device=d)),
    "nll_loss2d_forward": lambda d: aten.nll_loss2d_forward(
        torch.linspace(-1, 1, 2 * 3 * 2 * 2, device=d).reshape(2, 3, 2, 2), torch.tensor(
            [[[0, 1], [2, 0]], [[1, 1], [2, 2]]], device=d), None, 1, -100),
    "nan_to_num_out": lambda d: aten.nan_to_num.out(torch.tensor([1.0, float("nan"), float("inf")], device=d), 0.5,
                                                    2.0, -2.0, out=torch.empty(3, device=d)),
    "threshold": lambda d: aten.threshold(torch.tensor([-1.0, 0.5, 2.0], device=d), 0.5, 2),
    "take": lambda d: aten.take(torch.arange(12.0, device=d).reshape(3, 4), torch.tensor([11, 0, 5], device=d)),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_compiled_equals_cpu(name: str) -> None:
    case = ACCEPTED[name]
    torch._dynamo.reset()
    got = torch.compile(lambda: case("tpu"), backend="tpu")()
    want = case("cpu")
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,),
                    strict=True):
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0, equal_nan=True)


def test_checks_skip_symbolic_sizes_and_other_devices() -> None:
    """A dynamic-shape trace leaves the decision to the meta kernel (no concrete size logic on SymInts), and CPU
    tensors are not checked here."""
    torch._dynamo.reset()
    fn = torch.compile(lambda x: aten.threshold(x, 0.5, 2), backend="tpu", dynamic=True)
    for n in (3, 5):
        x = torch.linspace(-1, 1, n)
        torch.testing.assert_close(fn(x.to("tpu")).cpu(), aten.threshold(x, 0.5, 2))
    fake_checks.check(aten.threshold.default, (torch.ones(4, dtype=torch.int8), 300, 1), {})  # not a tpu fake


def test_registered_once() -> None:
    from torch._decomp import decomposition_table
    from torch._subclasses import fake_impls

    fake_checks.register()
    entries = [impl for _, impl in fake_impls.op_implementations_checks if impl is fake_checks._op_implementation]
    assert len(entries) == 1
    wrapped = decomposition_table[aten.nll_loss2d_backward.default]
    assert getattr(wrapped, "_torchtpu_fake_checks", False)
    assert getattr(wrapped.__wrapped__, "_torchtpu_fake_checks", False) is False  # wrapped once


def test_checks_leave_no_nodes_in_traced_graph() -> None:
    """What a check module computes itself (loss_checks' smooth_l1_loss_backward gradient) is not recorded by
    make_fx (AOTAutograd's tracer): the graph is the one the unchecked decomposition gives."""
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx

    op = aten.smooth_l1_loss_backward.default
    checked = decomposition_table[op]
    assert getattr(checked, "_torchtpu_fake_checks", False)
    args = [torch.ones(2, 3, device="tpu") for _ in range(3)]

    def trace(decomposition: Callable[..., object]) -> str:
        return make_fx(lambda g, x, t: op(g, x, t, 1, 1.0), tracing_mode="fake",
                       decomposition_table={op: decomposition})(*args).code

    assert trace(checked) == trace(checked.__wrapped__)
