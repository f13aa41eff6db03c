"""Fuzz findings of brief fz53 (issue 17, seeds 53-57): silent results fixed.

- index_fill_ / masked_fill_ / index_put_ into an expanded `self` (seed 56: index_fill_.int_Scalar of a
  float32[2, 3] expanded along dim 1): ATen writes the value through every selected alias, so a memory location
  holds it when any of its aliases is selected; tpu wrote the logical result back, and an unselected alias put the
  old value back (the tensor came back unchanged). index_put_ with more than one value or accumulate=True writes each
  value in turn through its alias, as CPU's kernel (ops/expanded_fill.py; PyTorch's test_index_put_mem_overlap).
- batch norm in eval mode of an empty input (seed 53: _native_batch_norm_legit_no_training.out, running_var
  [0, 5]): CPU returns empty results before reading the vectors; tpu refused their rank or count (tpu_raises).
- soft_margin_loss with a reduction other than 0-2 of an empty input: CPU's result is uninitialized memory (seed
  57: CPU 0.0051, tpu -226): refused (fail closed), as known.json says.
- padding backward out= dtypes (seed 53, cpu_raises), nll_loss_forward's weight dtype (seed 56, cpu_raises), isin
  of a test_elements CPU cannot view flat (seed 57, cpu_raises), _weight_norm_interface_backward's NaN (seed 54),
  and two error_class orders (narrow_copy, smooth_l1_loss).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _expanded_write(write: Callable[[torch.Tensor], object]) -> Callable[[str], list[torch.Tensor]]:
    def calls(d: str) -> list[torch.Tensor]:
        base = torch.arange(6, dtype=torch.float32).reshape(3, 1, 2).to(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write(base.expand(3, 4, 2))
        return [base]

    return calls


def _t(values: list, d: str, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=d)


EXPANDED_WRITES = {
    "index_fill_expanded_dim": lambda x: x.index_fill_(1, _t([1], x.device.type), -5.0),
    "index_fill_two": lambda x: x.index_fill_(1, _t([0, 2], x.device.type), -5.0),
    "index_fill_other_dim": lambda x: x.index_fill_(2, _t([1], x.device.type), -5.0),
    "index_fill_tensor_value": lambda x: x.index_fill_(1, _t([0], x.device.type), _t(3.5, "cpu", torch.float32)),
    "masked_fill_row": lambda x: x.masked_fill_(_t([[False], [True], [False], [False]], x.device.type, torch.bool),
                                                -5.0),
    "masked_fill_one": lambda x: x.masked_fill_(_t([True, False], x.device.type, torch.bool).expand(3, 4, 2)
                                                .clone().index_fill_(1, _t([1, 2, 3], x.device.type), False), 9.0),
    "index_put_one_value": lambda x: x.index_put_((_t([0, 2], x.device.type), _t([1], x.device.type)),
                                                  _t(-5.0, x.device.type, torch.float32)),
    # several values, or accumulate=True: each write in turn through its alias (last value / every value added)
    "index_put_values_last_alias": lambda x: x.index_put_(
        (_t([0, 2, 1, 0, 2], x.device.type), _t([1, 3, 0, 2, 0], x.device.type)),
        torch.linspace(-3.3, 7.7, 10, device=x.device).reshape(5, 2)),
    "index_put_accumulate": lambda x: x.index_put_(
        (_t([0, 2, 1, 0, 2], x.device.type), _t([1, 3, 0, 2, 0], x.device.type)),
        torch.linspace(-3.3, 7.7, 10, device=x.device).reshape(5, 2), accumulate=True),
    "index_put_accumulate_one_value": lambda x: x.index_put_(
        (_t([1, 1, 2], x.device.type),), _t(0.1, x.device.type, torch.float32), accumulate=True),
    "index_put_none_index": lambda x: aten.index_put_(  # an unindexed dim as None (the aten op's index list)
        x, [None, _t([3, 0, 3], x.device.type)], torch.linspace(1.5, 9.0, 6, device=x.device).reshape(3, 1, 2)),
    "index_put_mask_values": lambda x: x.__setitem__(
        _t([[True, False]] * 4, x.device.type, torch.bool).unsqueeze(0).expand(3, 4, 2),
        torch.arange(12, dtype=torch.float32, device=x.device)),
    "index_put_mask": lambda x: x.__setitem__(_t([[True, False]] * 4, x.device.type, torch.bool).unsqueeze(0)
                                              .expand(3, 4, 2), 4.0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(EXPANDED_WRITES))
def test_fill_into_expanded_self(mode: str, case: str) -> None:
    assert_exactly_cpu(_expanded_write(EXPANDED_WRITES[case]), mode)


@pytest.mark.parametrize("mode", MODES)
def test_index_fill_seed56(mode: str) -> None:
    """seed 56 call 0: float32[2, 3] expanded along dim 1, index [1, 0, 0], -1.871: every element is filled."""
    def calls(d: str) -> list[torch.Tensor]:
        base = torch.tensor([[-0.0019233688], [0.0139935045]], device=d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base.expand(2, 3).index_fill_(1, _t([1, 0, 0], d), -1.871)
        return [base]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("case", sorted(c for c in EXPANDED_WRITES if c.startswith("index_put")))
def test_index_put_into_expanded_self_compiled_as_cpu(case: str) -> None:
    """Compiled, the write reaches the backend functionalized: tpu's graph gives what CPU's aot_eager gives."""
    def fn(base: torch.Tensor) -> torch.Tensor:
        EXPANDED_WRITES[case](base.expand(3, 4, 2))
        return base * 1

    def run(d: str, backend: str) -> torch.Tensor:
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.compile(fn, backend=backend)(torch.arange(6, dtype=torch.float32).reshape(3, 1, 2).to(d))

    torch.testing.assert_close(run("tpu", "tpu").cpu(), run("cpu", "aot_eager"), rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_expanded_fill_checks_first(mode: str) -> None:
    """An out-of-range index into an expanded self raises as CPU does (the checks run before any write)."""
    from refusal_cases import assert_refused_as_cpu

    def case(d: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.zeros(2, 1, device=d).expand(2, 3).index_fill_(1, _t([3], d), 1.0)

    assert_refused_as_cpu(case, mode)


BN_EMPTY_EVAL = {  # eval of an empty input: CPU returns empty results before reading any vector (seed 53)
    "no_training_2d_var": lambda d: aten._native_batch_norm_legit_no_training(
        _ones(0, 5, d=d), None, None, _ones(5, d=d), _ones(0, 5, d=d), 0.557, 1e-5),
    "no_training_count": lambda d: aten._native_batch_norm_legit_no_training(
        _ones(2, 5, 0, d=d), _ones(3, d=d), None, _ones(5, d=d), _ones(1, 5, d=d), 0.5, 1e-5),
    "legit_eval": lambda d: aten._native_batch_norm_legit(
        _ones(0, 5, d=d, dtype=torch.bfloat16), None, None, _ones(5, d=d, dtype=torch.bfloat16),
        _ones(3, d=d, dtype=torch.bfloat16), False, 0.5, 1e-5),
}


def _ones(*shape: int, d: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)



@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(BN_EMPTY_EVAL))
def test_batch_norm_eval_of_empty_input(mode: str, case: str) -> None:
    assert_exactly_cpu(lambda d: list(BN_EMPTY_EVAL[case](d)), mode)


@pytest.mark.parametrize("mode", MODES)
def test_batch_norm_no_training_out_seed53(mode: str) -> None:
    def calls(d: str) -> list[torch.Tensor]:
        outs = [torch.empty(0, device=d), torch.empty(0, 5, device=d), torch.empty(0, device=d)]
        aten._native_batch_norm_legit_no_training.out(_ones(5, 0, d=d).t(), None, None, _ones(5, d=d),
                                                      _ones(0, 5, d=d), 0.557, 1e-5, out0=outs[0], out1=outs[1],
                                                      out2=outs[2])
        return outs

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_soft_margin_loss_invalid_reduction_of_nothing_refused(mode: str) -> None:
    """seed 57: reduction -2 of an empty input: CPU's 0-d result is uninitialized memory (0.0051, 0.0, ...)."""
    x, t = torch.empty(5, 0, 1, 2, dtype=torch.float16), torch.empty(5, 0, 1, 2)
    aten.soft_margin_loss.out(x, t, -2, out=torch.empty(0, dtype=torch.float16))  # CPU computes (garbage)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="uninitialized"):
        aten.soft_margin_loss.out(x.to("tpu"), t.to("tpu"), -2, out=torch.empty(0, dtype=torch.float16,
                                                                                 device="tpu"))
        torch.tpu.synchronize()
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="uninitialized"):
        aten.soft_margin_loss(x.to("tpu"), t.to("tpu"), 5)
        torch.tpu.synchronize()


def _pad_backward_case(op: str, n: int, grad_dtype: torch.dtype, self_dtype: torch.dtype, out_dtype: torch.dtype
                       ) -> Callable[[str], object]:
    def case(d: str) -> object:
        shape = (1, 2) + (3,) * n
        out = torch.empty(0, dtype=out_dtype, device=d)
        return getattr(aten, op).grad_input(torch.ones(shape, dtype=grad_dtype, device=d),
                                            torch.ones(shape, dtype=self_dtype, device=d), [0] * (2 * n),
                                            grad_input=out)
    return case


# (op, padded dims, grad, self, out): the structured ops (1d, reflection 3d) want self's dtype of the out= (seed
# 53: reflection_pad1d_backward.grad_input, int32 self, float32 out: CPU refuses, tpu computed); the others compare
# grad_output's dtype with the out='s
PAD_REFUSED = [("reflection_pad1d_backward", 1, torch.float32, torch.int32, torch.float32),
               ("replication_pad1d_backward", 1, torch.float32, torch.float64, torch.float32),
               ("reflection_pad3d_backward", 3, torch.float32, torch.float32, torch.float64),
               ("reflection_pad2d_backward", 2, torch.float32, torch.float32, torch.float64),
               ("replication_pad3d_backward", 3, torch.float32, torch.float32, torch.int32)]
PAD_COMPUTED = [("reflection_pad2d_backward", 2, torch.float32, torch.int32, torch.float32),
                ("replication_pad2d_backward", 2, torch.float32, torch.float64, torch.float32),
                ("replication_pad3d_backward", 3, torch.float32, torch.int32, torch.float32)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", PAD_REFUSED, ids=lambda c: f"{c[0]}-{c[3]}-{c[4]}")
def test_pad_backward_out_dtype_refused(mode: str, case: tuple) -> None:
    from refusal_cases import assert_refused_as_cpu

    assert_refused_as_cpu(_pad_backward_case(*case), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", PAD_COMPUTED, ids=lambda c: f"{c[0]}-{c[3]}-{c[4]}")
def test_pad_backward_out_of_grad_dtype_computed(mode: str, case: tuple) -> None:
    """Not structured: self only gives the shape, a float32 out of a float32 grad computes for any self dtype."""
    assert_exactly_cpu(lambda d: [_pad_backward_case(*case)(d)], mode)


@pytest.mark.parametrize("mode", MODES)
def test_pad1d_backward_of_4d_input_refused(mode: str) -> None:
    """ATen's checks let a 4-d input through the 1d op; its kernel reads it as 3-d (CPU: [0, 0] for grad [0, 1])."""
    g = torch.arange(2.0).reshape(1, 1, 1, 2)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="4 dims"):
        aten.reflection_pad1d_backward(g.to("tpu"), g.to("tpu"), [0, 0])
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtypes", [(torch.float16, torch.int8), (torch.float32, torch.float16),
                                    (torch.float16, torch.float32), (torch.float64, torch.float32)])
@pytest.mark.parametrize("reduction", [0, 1, -2])
def test_nll_loss_forward_weight_of_another_dtype(mode: str, dtypes: tuple[torch.dtype, torch.dtype],
                                                  reduction: int) -> None:
    """seed 56: nll_loss_forward(float16 [3, 4], target, int8 weight, -2, 3): CPU's kernel reads the weight as
    self's type (expected scalar type Half but found Char); tpu cast it."""
    from refusal_cases import assert_refused_as_cpu

    x_dtype, w_dtype = dtypes
    x = torch.randn(3, 4).to(x_dtype)
    assert_refused_as_cpu(lambda d: aten.nll_loss_forward(x.to(d), torch.tensor([0, 1, 3], device=d),
                                                          torch.ones(4, dtype=w_dtype, device=d), reduction, 3),
                          mode)


ISIN_VIEW = {  # isin's default kernel views test_elements flat when the common dtype is its own (seeds 50, 57)
    "scalar_expanded": lambda d: aten.isin.Scalar_Tensor(-0.0, torch.ones(2, 1, device=d).expand(2, 3),
                                                         invert=True),
    "scalar_int_expanded": lambda d: aten.isin.Scalar_Tensor(1, torch.ones(2, 1, dtype=torch.int64, device=d)
                                                             .expand(2, 3)),
    "tensor_transposed": lambda d: aten.isin.Tensor_Tensor(torch.ones(4, device=d), torch.ones(3, 2, device=d).t(),
                                                           invert=True),
}
ISIN_COMPUTED = {  # a promoting copy, no elements, many test elements (isin_sorting reshapes)
    "promoted": lambda d: [aten.isin.Scalar_Tensor(1.0, torch.ones(2, 1, dtype=torch.int64, device=d).expand(2, 3))],
    "no_elements": lambda d: [aten.isin.Tensor_Tensor(torch.ones(0, device=d), torch.ones(3, 2, device=d).t())],
    "sorting": lambda d: [aten.isin.Scalar_Tensor(1.0, torch.arange(4.0, device=d).reshape(4, 1).expand(4, 3))],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(ISIN_VIEW))
def test_isin_view_of_test_elements_refused(mode: str, case: str) -> None:
    from refusal_cases import assert_refused_as_cpu

    assert_refused_as_cpu(ISIN_VIEW[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(ISIN_COMPUTED))
def test_isin_non_viewable_computed(mode: str, case: str) -> None:
    assert_exactly_cpu(ISIN_COMPUTED[case], mode)


@pytest.mark.parametrize("mode", MODES)
def test_weight_norm_backward_non_finite_order(mode: str) -> None:
    """seed 54: a norm of -0.0 with a grad of -1e30: CPU's a * grad_w - b * v is -inf + inf = NaN (tpu gave inf)."""
    from refusal_cases import assert_close_to_cpu

    gw = torch.tensor([-1e30, 0.38388929, -7.4450297, -0.37248355])
    v = torch.tensor([-0.77482587, 3.8694372, float("inf"), -0.49046248])
    g = torch.tensor([-0.67474902, -0.50525993, -0.73642039, 0.93738741])
    norms = torch.tensor([-0.0, 0.28285635, 0.50799912, -1.4282819])
    assert_close_to_cpu(lambda d: list(aten._weight_norm_interface_backward(gw.to(d), v.to(d), g.to(d),
                                                                            norms.to(d), 0)), mode)


NARROW_COPY = [(0, 6, -1), (1, 4, -2), (0, 1, -1), (5, 0, 1), (0, 2, 1)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", NARROW_COPY)
def test_narrow_copy_checks_in_cpu_order(mode: str, case: tuple[int, int, int]) -> None:
    """error_class, seeds 53 and 57: narrow_copy's functional runs narrow_copy_dense_cpu_out's checks (start's range
    before the length; a dim past the rank is its TORCH_CHECK's RuntimeError)."""
    from refusal_cases import assert_refused_as_cpu

    dim, start, length = case
    assert_refused_as_cpu(lambda d: aten.narrow_copy(torch.ones(2, 3, device=d), dim, start, length), mode)


SMOOTH_L1 = [(torch.int64, 0, -1.0), (torch.int64, 5, 1.0), (torch.int64, -2, 0.0), (torch.bool, 0, 1.0),
             (torch.bool, 1, 0.0), (torch.bool, 5, 1.0)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", SMOOTH_L1, ids=str)
def test_smooth_l1_loss_checks_before_dtype(mode: str, case: tuple[torch.dtype, int, float]) -> None:
    """error_class, seeds 53-57: beta, then the reduction (CPU's internal assert, a RuntimeError), then the kernel's
    dtype dispatch (Bool before the lowering's bool subtraction)."""
    dtype, reduction, beta = case

    def call(d: str) -> object:
        return aten.smooth_l1_loss(torch.ones(3, dtype=dtype, device=d), torch.zeros(3, dtype=dtype, device=d),
                                   reduction, beta)

    with pytest.raises(Exception) as cpu:
        call("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(type(cpu.value)) as tpu:
        call("tpu")
        torch.tpu.synchronize()
    if "INTERNAL ASSERT" in str(cpu.value):  # tpu names the reduction in its own words
        assert "Reduction::Mean || reduction == Reduction::Sum" in str(tpu.value)
    else:
        assert str(cpu.value).split("\n")[0] in str(tpu.value)


@pytest.mark.parametrize("mode", MODES)
def test_smooth_l1_loss_broadcast_before_bool(mode: str) -> None:
    """seed 53 (after the check above): shapes that do not broadcast are refused before the Bool dispatch."""
    from refusal_cases import assert_refused_as_cpu

    assert_refused_as_cpu(lambda d: aten.smooth_l1_loss.out(
        torch.ones(4, 4, 1, dtype=torch.bool, device=d), torch.ones(3, 5, dtype=torch.bool, device=d), 0,
        out=torch.empty(3, 5, dtype=torch.bool, device=d)), mode)
