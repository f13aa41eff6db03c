"""Issue 17 (fuzzer seeds 3-5, cpu_raises): out= overloads tpu runs through an upstream decomposition, whose
out_wrapper casts into any castable out tensor, wrote a result where CPU refuses the dtype ("Expected out tensor
to have dtype float, but got c10::BFloat16 instead": a structured kernel's set_output, torchgen's `copy_arg`).
out_checks.exact_out checks them as ops/out_rules.py's rule says, in every eager mode; out tensors of the result's
dtype are written as CPU writes them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled

import torchtpu  # noqa: F401

aten = torch.ops.aten
I8, I64, F16, F32, F64, BF16, C64 = (torch.int8, torch.int64, torch.float16, torch.float32, torch.float64,
                                     torch.bfloat16, torch.complex64)


def _t(*shape: int, dtype: torch.dtype = F32, d: str = "cpu") -> torch.Tensor:
    return (torch.arange(max(1, torch.Size(shape).numel()), dtype=F32) % 5 - 1).to(dtype)[
        :torch.Size(shape).numel()].reshape(shape).to(d)


# name -> fn(device, out dtype): CPU refuses it with the first dtype, computes it with the second.
CASES: dict[str, tuple[Callable[[str, torch.dtype], object], torch.dtype, torch.dtype]] = {
    "hardswish_backward": (lambda d, o: aten.hardswish_backward.out(_t(4, 3, d=d), _t(4, 3, dtype=BF16, d=d),
                                                                    out=_t(0, dtype=o, d=d)), BF16, F32),
    "nansum_dtype": (lambda d, o: aten.nansum.out(_t(2, 4, d=d), dtype=I64, out=_t(0, dtype=o, d=d)), F32, I64),
    "trace_int8": (lambda d, o: aten.trace.out(_t(3, 3, dtype=I8, d=d), out=_t(0, dtype=o, d=d)), F16, I64),
    "triu": (lambda d, o: aten.triu.out(_t(2, 3, dtype=I8, d=d), out=_t(2, 3, dtype=o, d=d)), F32, I8),
    "tril": (lambda d, o: aten.tril.out(_t(3, 3, d=d), 1, out=_t(0, dtype=o, d=d)), F16, F32),
    "std_mean_complex": (lambda d, o: aten.std_mean.correction_out(
        _t(5, dtype=C64, d=d), out0=_t(5, dtype=o, d=d), out1=_t(5, dtype=C64, d=d)), C64, F32),
    "zero": (lambda d, o: aten.zero.out(_t(3, dtype=I8, d=d), out=_t(3, dtype=o, d=d)), I64, I8),
    "repeat": (lambda d, o: aten.repeat.out(_t(3, d=d), [2], out=_t(6, dtype=o, d=d)), F64, F32),
    "rot90": (lambda d, o: aten.rot90.out(_t(2, 3, d=d), out=_t(3, 2, dtype=o, d=d)), F64, F32),
    "unfold_copy": (lambda d, o: aten.unfold_copy.out(_t(4, d=d), 0, 2, 2, out=_t(2, 2, dtype=o, d=d)), F64, F32),
    "norm_scalar": (lambda d, o: aten.norm.Scalar_out(_t(3, d=d), 2, out=_t(0, dtype=o, d=d)), F64, F32),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_dtype_refused(name: str, mode: str) -> None:
    fn, bad, _ = CASES[name]
    assert_refused_as_cpu(lambda d: fn(d, bad), mode)


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_dtype_of_result_written(name: str) -> None:
    fn, _, good = CASES[name]
    want, got = fn("cpu", good), fn("tpu", good)
    for w, g in zip(*(r if isinstance(r, tuple) else (r,) for r in (want, got))):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g.cpu(), w, rtol=1e-6, atol=1e-6)


def test_uniform_out_dtype_refused() -> None:  # random values: the refusal alone
    def case(d: str) -> None:
        aten.uniform.out(_t(3, dtype=BF16, d=d), out=_t(3, d=d))
    for mode in MODES:
        assert_refused_as_cpu(case, mode)
    out = _t(3, dtype=BF16, d="tpu")
    aten.uniform.out(_t(3, dtype=BF16, d="tpu"), out=out)
    assert out.dtype == BF16 and bool(((out >= 0) & (out <= 1)).all())


# CPU's functional refuses before the generated out= kernel's copy_arg checks the out dtype (fuzzer seed 2), and
# hardswish_backward's kernel dispatches floating dtypes only (tpu computed integers and bools).
ORDER_CASES: dict[str, Callable[[str], object]] = {
    "hardswish_backward_long_then_out": lambda d: aten.hardswish_backward.out(
        _t(4, 3, dtype=I8, d=d), _t(4, 3, dtype=I64, d=d), out=_t(4, 3, dtype=I8, d=d)),
    "hardswish_backward_bool": lambda d: aten.hardswish_backward.default(_t(3, dtype=torch.bool, d=d),
                                                                         _t(3, dtype=torch.bool, d=d)),
    "hardswish_backward_complex": lambda d: aten.hardswish_backward.default(_t(3, dtype=C64, d=d), _t(3, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ORDER_CASES))
def test_functional_refusal_first(name: str, mode: str) -> None:
    assert_refused_as_cpu(ORDER_CASES[name], mode)


def test_hardswish_backward_integer_refused_compiled() -> None:
    assert_refused_as_cpu_compiled(lambda d: aten.hardswish_backward.default(_t(3, dtype=I64, d=d),
                                                                             _t(3, dtype=I64, d=d)))
