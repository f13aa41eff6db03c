"""CPU's dtype checks that tpu skipped (issue 17, known.json's "a dtype check CPU makes and tpu skips"): each call
CPU refuses must raise on tpu in CPU's class and words in every eager mode and under torch.compile, and the
neighbouring calls CPU computes must still give CPU's result.

- masked_fill / masked_fill_: a mask of another dtype than bool (uint8 included) is refused (was: converted).
- searchsorted / bucketize: the kernel's dispatch has no bool or complex (was: compared anyway); an input of no
  elements returns before it.
- logit_backward: the kernel's dispatch has floating types only, even for no elements, behind the out= cast check
  (was: computed in float; ops/cpu_raise_checks3.py).
- clamp_max (Scalar bound) of a complex tensor, and the foreach forms built on it: "clamp is not supported for
  complex types" as clamp_min's (was: the Tensor overload's "minimum_cpu" words; ops/dtype_refusals.json).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from tests.refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

A = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu", value: float = 0.5) -> torch.Tensor:
    return torch.full(shape, value, dtype=dtype, device=d)


REFUSED: dict[str, Callable[[str], object]] = {
    "masked_fill_float_mask": lambda d: A.masked_fill_.Tensor(_t(3, d=d), _t(3, d=d), _t(d=d)),
    "masked_fill_uint8_mask": lambda d: A.masked_fill.Scalar(_t(2, 3, d=d), _t(3, dtype=torch.uint8, d=d), 1.0),
    "masked_fill_long_mask_inplace": lambda d: A.masked_fill_.Scalar(_t(2, d=d), _t(2, 2, dtype=torch.int64, d=d),
                                                                     1.0),
    "masked_fill_empty_bf16_mask": lambda d: A.masked_fill.Tensor(_t(0, d=d), _t(0, dtype=torch.bfloat16, d=d),
                                                                  _t(d=d)),
    "searchsorted_complex": lambda d: A.searchsorted.Tensor(_t(3, dtype=torch.complex64, d=d),
                                                            _t(2, dtype=torch.complex64, d=d)),
    "searchsorted_bool": lambda d: A.searchsorted.Tensor(_t(3, dtype=torch.bool, d=d), _t(2, dtype=torch.bool, d=d)),
    "searchsorted_empty_complex_boundaries": lambda d: A.searchsorted.Tensor(_t(0, dtype=torch.complex128, d=d),
                                                                             _t(2, dtype=torch.complex128, d=d)),
    "searchsorted_scalar_bool": lambda d: A.searchsorted.Scalar(_t(3, dtype=torch.bool, d=d), True),
    "searchsorted_scalar_complex": lambda d: A.searchsorted.Scalar(_t(3, d=d), 1j),
    "searchsorted_out_complex": lambda d: A.searchsorted.Tensor_out(
        _t(3, dtype=torch.complex64, d=d), _t(2, dtype=torch.complex64, d=d),
        out=torch.empty(2, dtype=torch.int64, device=d)),
    "bucketize_complex": lambda d: A.bucketize.Tensor(_t(2, dtype=torch.complex64, d=d),
                                                      _t(3, dtype=torch.complex64, d=d)),
    "logit_backward_int": lambda d: A.logit_backward.default(_t(3, dtype=torch.int32, d=d),
                                                             _t(3, dtype=torch.int32, d=d)),
    "logit_backward_empty_int": lambda d: A.logit_backward.default(_t(0, dtype=torch.int32, d=d),
                                                                   _t(0, dtype=torch.int32, d=d)),
    "logit_backward_bool_int8_eps": lambda d: A.logit_backward.default(_t(2, dtype=torch.bool, d=d),
                                                                       _t(2, dtype=torch.int8, d=d), 0.1),
    "logit_backward_out_cast_first": lambda d: A.logit_backward.grad_input(  # fuzz seed 0 call 0
        _t(5, dtype=torch.int32, d=d), _t(5, dtype=torch.complex64, d=d), grad_input=_t(5, dtype=torch.float16, d=d)),
    "clamp_max_complex": lambda d: A.clamp_max.default(_t(3, dtype=torch.complex64, d=d), 1.0),
    "clamp_max_out_complex": lambda d: A.clamp_max.out(_t(3, dtype=torch.complex128, d=d), 1.0,
                                                       out=_t(3, dtype=torch.complex128, d=d)),
    "foreach_clamp_max_complex": lambda d: A._foreach_clamp_max_.Scalar([_t(3, dtype=torch.complex64, d=d)], 1.0),
    "logit_backward_complex_out": lambda d: A.logit_backward.grad_input(
        _t(3, dtype=torch.complex64, d=d), _t(3, dtype=torch.complex64, d=d), None,
        grad_input=_t(3, dtype=torch.complex64, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


@pytest.mark.parametrize("name", ["masked_fill_uint8_mask", "searchsorted_complex", "logit_backward_int"])
def test_refused_as_cpu_compiled(name: str) -> None:
    # PyTorch's own meta of masked_fill refuses a non-bool mask first, in its words
    assert_refused_as_cpu_compiled(REFUSED[name], words=not name.startswith("masked_fill"))


def _computed(d: str) -> list[torch.Tensor]:
    """The neighbours CPU computes: a bool mask, searchsorted of an empty complex input or of promoted dtypes,
    logit_backward of a bool grad with a float input."""
    x = torch.tensor([0.25, 0.5, 2.0], device=d)
    mask = torch.tensor([True, False, True], device=d)
    seq = torch.tensor([0.0, 0.5, 1.0], device=d)
    return [
        A.masked_fill.Scalar(x, mask, -1.0),
        A.searchsorted.Tensor(_t(3, dtype=torch.complex64, d=d), _t(0, dtype=torch.complex64, d=d)),
        A.searchsorted.Tensor(torch.tensor([False, True, True], device=d), x),
        A.searchsorted.Scalar(torch.tensor([False, True, True], device=d), 1),
        A.searchsorted.Tensor(seq.half(), x.bfloat16()),
        A.logit_backward.default(_t(3, dtype=torch.bool, d=d, value=1), x),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_computed_as_cpu(mode: str) -> None:
    assert_exactly_cpu(_computed, mode)


def test_weight_norm_of_no_elements_is_a_cpu_crash() -> None:
    """fuzz/overloads.py CPU_CRASHES: CPU's _weight_norm_interface gets SIGFPE on v and g float32[0, 1] over dim 0
    (fuzz seed 2 call 27), so the fuzzer skips it; a v with elements is still compared."""
    from torchtpu.fuzz.args import make_call
    from torchtpu.fuzz.overloads import cpu_crashes
    from torchtpu.fuzz.runner import call_rng

    op = A._weight_norm_interface.default
    assert cpu_crashes(make_call(op, call_rng(2, str(op), 27), 2)) is not None
    assert cpu_crashes(make_call(op, call_rng(2, str(op), 39), 2)) is None  # float32[1] and float32[1]
