"""Silent mismatches of fuzz seeds 14 and 13, each now CPU's in every eager mode (and under torch.compile where the
finding was there): masked_fill with a value tensor that overflows self's dtype (c10's checked conversion, when the
program runs), smooth_l1_loss with a NaN beta, std/var out= of a real input into a complex out, the fused weight
norm kernels' dim/dtype checks, an FFT's normalization of an infinite element (inf+0j, was inf+nanj),
segment_reduce given both offsets and lengths (the offsets), `_foreach_add_` of a complex scalar into an integer
tensor under compile, _embedding_bag's 2-D weight check, gelu_backward's oneDNN refusals; and the fuzzer's
comparison of a complex element with an infinite part (by parts)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

from torchtpu.fuzz import outcome

A = torch.ops.aten
U8, F64 = torch.uint8, torch.float64


def _masked(value: torch.Tensor, dtype: torch.dtype = U8):
    def case(d: str) -> torch.Tensor:
        x = torch.zeros(3, dtype=dtype, device=d)
        return A.masked_fill.Tensor(x, torch.tensor([True, False, True], device=d), value.to(d))
    return case


def _weight_norm_backward(dtypes: tuple[torch.dtype, ...], dim: int, shape: tuple[int, ...] = (2, 3),
                          g_shape: tuple[int, ...] = (2, 1)):
    def case(d: str) -> object:
        gw, v, g, n = (torch.ones(s, dtype=t, device=d) for s, t in zip((shape, shape, g_shape, g_shape), dtypes))
        return A._weight_norm_interface_backward(gw, v, g, n, dim)
    return case


def _segments(offsets: list[int], lengths: list[int], out: bool = False):
    def case(d: str) -> torch.Tensor:
        data = torch.arange(12.0, device=d).reshape(4, 3)
        long = lambda v: torch.tensor(v, dtype=torch.long, device=d)  # noqa: E731
        if out:
            return A.segment_reduce.out(data, "sum", lengths=long(lengths), offsets=long(offsets),
                                        out=torch.empty(4, device=d))
        return A.segment_reduce(data, "sum", lengths=long(lengths), offsets=long(offsets))
    return case


def _std_out(dtype: torch.dtype, out: torch.dtype, dim: list[int] | None, op=A.std.correction_out):
    def case(d: str) -> torch.Tensor:
        x = torch.tensor([[1.0, 2, 4], [3, 5, 9]], device=d).to(dtype)
        return op(x, dim, correction=1, out=torch.empty(0, dtype=out, device=d))
    return case


REFUSED = {
    "masked_fill_float_over_uint8": _masked(torch.tensor(300.5)),
    "masked_fill_negative_float_uint8": _masked(torch.tensor(-0.5)),
    "masked_fill_int_over_uint8": _masked(torch.tensor(300)),
    "masked_fill_nan_int8": _masked(torch.tensor(float("nan")), torch.int8),
    "masked_fill_complex_float": _masked(torch.tensor(1 + 1j), torch.float32),
    "masked_fill_double_over_half": _masked(torch.tensor(1e300, dtype=F64), torch.float16),
    "smooth_l1_nan_beta": lambda d: A.smooth_l1_loss(torch.ones(3, device=d), torch.zeros(3, device=d), 1,
                                                      float("nan")),
    "smooth_l1_out_nan_beta": lambda d: A.smooth_l1_loss.out(torch.ones(4, 1, 4, device=d),
                                                              torch.zeros(4, 1, 4, dtype=torch.long, device=d), 1,
                                                              float("nan"), out=torch.empty(4, 1, 4, device=d)),
    "std_bf16_all_into_complex": _std_out(torch.bfloat16, torch.complex64, [0, 1]),
    "var_f16_all_into_complex": _std_out(torch.float16, torch.complex64, None, A.var.correction_out),
    "std_f32_dim_into_complex": _std_out(torch.float32, torch.complex64, [1]),
    "var_bf16_dim_into_complex": _std_out(torch.bfloat16, torch.complex128, [1], A.var.correction_out),
    "weight_norm_backward_int": _weight_norm_backward((torch.int32,) * 4, 0),
    "weight_norm_backward_norms_f32": _weight_norm_backward((F64, F64, F64, torch.float32), 1, (2, 3), (1, 3)),
    "weight_norm_backward_grad_dtype": _weight_norm_backward((torch.float16, torch.float32, torch.bfloat16,
                                                              torch.float32), 1, (2, 3), (1, 3)),
    "weight_norm_forward_g_dtype": lambda d: A._weight_norm_interface(torch.ones(2, 3, device=d),
                                                                      torch.ones(2, 1, dtype=F64, device=d), 0),
    "embedding_bag_3d_weight": lambda d: A._embedding_bag(torch.ones(3, 2, 1, device=d), torch.tensor([0, 0], device=d),
                                                          torch.tensor([0], device=d)),
    "embedding_bag_1d_weight_int8_indices": lambda d: A._embedding_bag_forward_only(
        torch.ones(3, device=d), torch.tensor([0, 1], dtype=torch.int8, device=d), torch.tensor([0], device=d)),
    "gelu_backward_0d_grad_onednn": lambda d: A.gelu_backward(torch.ones((), device=d),
                                                              torch.ones(3, 3, dtype=torch.float16, device=d)),
    "gelu_backward_double_grad_onednn": lambda d: A.gelu_backward(torch.ones(4, dtype=F64, device=d)[::2],
                                                                  torch.ones(2, device=d)),
    "gelu_backward_double_out_onednn": lambda d: A.gelu_backward.grad_input(
        torch.ones(5, device=d), torch.ones(5, device=d), grad_input=torch.empty(0, dtype=F64, device=d)),
    "segment_reduce_offsets_over_lengths": _segments([0, 2, 1, 3], []),
    "segment_reduce_out_offsets_over_lengths": _segments([0, 2, 1, 3], [], out=True),
}


# CPU fails its kernel's internal assert (its first line names the build's source path): the class, the condition
# and the reason are compared
ASSERTS = {
    "weight_norm_backward_int_dim_minus_1": _weight_norm_backward((torch.int16, torch.int32, torch.int32,
                                                                   torch.int32), -1, (1,), (1,)),
    "weight_norm_backward_middle_dim": _weight_norm_backward((torch.float32,) * 4, 1, (2, 3, 4), (1, 3, 1)),
    "weight_norm_forward_dim_minus_1": lambda d: A._weight_norm_interface(torch.ones(2, 3, device=d),
                                                                          torch.ones(1, 1, device=d), -1),
}


def _fft_input() -> torch.Tensor:
    g = torch.Generator().manual_seed(14)
    x = torch.randn(3, 3, 3, 3, generator=g)
    x[0, 0, 0, 0] = float("inf")
    x[2, 1, 0, 2] = float("-inf")
    return x


# valid calls next to the refused ones above (pass without the fixes too: the new checks must not refuse them)
# and segment_reduce's offsets taken over its lengths
VALUES = {
    "masked_fill_in_range": lambda d: [_masked(torch.tensor(-255))(d), _masked(torch.tensor(255.0))(d),
                                       _masked(torch.tensor(1 + 1j), torch.bool)(d),
                                       _masked(torch.tensor(3 + 0j), torch.int8)(d),
                                       _masked(torch.tensor(float("inf")), torch.float16)(d)],
    "std_f32_all_into_complex": lambda d: [_std_out(torch.float32, torch.complex64, [0, 1])(d)],
    "gelu_backward_off_onednn": lambda d: [A.gelu_backward(torch.ones((), device=d),
                                                           torch.ones(3, 3, device=d).t()),
                                           A.gelu_backward(torch.ones((), device=d), torch.ones(3, 3, device=d),
                                                           approximate="tanh"),
                                           A.gelu_backward(torch.ones((), dtype=F64, device=d),
                                                           torch.ones(1, 1, device=d))],
    "segment_reduce_offsets_over_lengths": lambda d: [_segments([0, 1, 1, 3], [4])(d)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ASSERTS))
def test_internal_assert_as_cpu(name: str, mode: str) -> None:
    with pytest.raises(RuntimeError) as cpu:
        ASSERTS[name]("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError) as tpu:
        ASSERTS[name]("tpu")
        torch.tpu.synchronize()
    condition, reason = str(cpu.value).split(" at ")[0], str(cpu.value).split("\n")[0].split(". ")[-1]
    assert condition in str(tpu.value) and reason.strip() in str(tpu.value), (cpu.value, tpu.value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_as_cpu(name: str, mode: str) -> None:
    def dtypes_too(d: str) -> list[torch.Tensor]:
        got = VALUES[name](d)
        assert [(t.dtype, t.shape) for t in got] == [(t.dtype, t.shape) for t in VALUES[name]("cpu")]
        return got

    assert_exactly_cpu(dtypes_too, mode)


def _foreach_complex_into_int(d: str) -> torch.Tensor:
    x = [torch.ones(5, 2, 1, dtype=torch.int16, device=d)]
    A._foreach_add_.Scalar(x, 1.5370867968952908 + 1j)
    return x[0]


# FFTs: CPU's (MKL's) rounding differs in the last bits; where an element is infinite its other part must be CPU's
# (inf+0j, never inf+nanj)
FFTS = {
    "fft_r2c_inf_normalized": lambda d: [A._fft_r2c(_fft_input().to(d), dims, n, True)
                                         for n in (1, 2) for dims in ([3], [1, 3])],
    "fft_c2c_inf_normalized": lambda d: [A._fft_c2c(torch.complex(_fft_input(), torch.zeros(3, 3, 3, 3)).to(d), [2],
                                                    n, True) for n in (1, 2)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FFTS))
def test_fft_infinite_elements_as_cpu(name: str, mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        got = [t.cpu() for t in FFTS[name]("tpu")]
    for g, c in zip(got, FFTS[name]("cpu"), strict=True):
        assert torch.equal(g.real.isnan(), c.real.isnan()) and torch.equal(g.imag.isnan(), c.imag.isnan())
        torch.testing.assert_close(torch.view_as_real(g), torch.view_as_real(c), equal_nan=True)


def test_foreach_complex_scalar_into_int_compiled() -> None:
    assert_refused_as_cpu_compiled(_foreach_complex_into_int)


def test_masked_fill_overflow_compiled() -> None:
    assert_refused_as_cpu_compiled(_masked(torch.tensor(300.5)))


def test_gelu_backward_onednn_compiled() -> None:
    assert_refused_as_cpu_compiled(REFUSED["gelu_backward_double_out_onednn"])


def test_weight_norm_backward_compiled() -> None:
    assert_refused_as_cpu_compiled(_weight_norm_backward((torch.float32,) * 4, -1, (1,), (1,)), words=False)


def test_fuzz_compares_complex_parts_of_infinite_elements() -> None:
    """An element with an inf real part passes where its finite imaginary part is close; NaN for inf does not."""
    e = torch.tensor([complex(float("inf"), -0.0015656139), 1 + 1j], dtype=torch.complex64)
    a = torch.tensor([complex(float("inf"), -0.0015656141), 1 + 1j], dtype=torch.complex64)
    ok, _ = outcome._elementwise_ok(a, e, None)
    assert bool(ok.all())
    a = torch.tensor([complex(float("inf"), float("nan")), 1 + 1j], dtype=torch.complex64)
    ok, special = outcome._elementwise_ok(a, e, None)
    assert ok.tolist() == [False, True] and special
