"""Silent wrong values, shapes and NaNs of fuzz seeds 15, 19 and 20, each now CPU's in every eager mode (and under
torch.compile where the op reaches the backend): _adaptive_avg_pool2d_backward with a grad of fewer planes than self
(self's shape, the rest 0; more planes, or any other count in 3d, are undefined on CPU and refused), linear
upsampling's unchanged sizes (a copy whatever the scale) and its zero-weight taps (0 * inf is NaN on CPU),
special_xlog1py's Python scalar rounded to a float16/bfloat16 tensor's dtype (2**40 is inf there); _fft_c2r of an
input whose last transformed dim CPU reads with the wrong size (garbage or heap corruption there) refused, and
skipped by the fuzzer's CPU_CRASHES. Refusals CPU makes and tpu skipped: _embedding_bag's index and weight dtypes
(_weight_norm_interface_backward's dim: tests/test_fuzz_silent_s14.py)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_close_to_cpu, assert_exactly_cpu, assert_refused_as_cpu

from torchtpu.fuzz.args import Call, TensorArg, make_call
from torchtpu.fuzz.overloads import cpu_crashes
from torchtpu.fuzz.runner import call_rng

A = torch.ops.aten
INF = float("inf")
F16, F64 = torch.float16, torch.float64


def _t(values: list, dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=d)


def _ramp(*shape: int) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) - 3).reshape(shape)  # sums exact in any order


CASES = {
    "adaptive_avg2d_backward_fewer_planes": lambda d: [A._adaptive_avg_pool2d_backward(
        _ramp(2, 2, 4).to(d), torch.ones(4, 1, 1, device=d))],
    "adaptive_avg2d_backward_fewer_planes_4d": lambda d: [A._adaptive_avg_pool2d_backward(
        _ramp(1, 2, 2, 2).to(d), torch.ones(1, 3, 2, 2, device=d))],
    "adaptive_avg2d_backward_out_fewer_planes": lambda d: [A._adaptive_avg_pool2d_backward.out(
        _ramp(3, 4, 4).to(d)[..., ::2], torch.ones(5, 2, 3, device=d), out=torch.ones(5, 2, 3, device=d))],
    "upsample_linear1d_same_size_scale": lambda d: [A.upsample_linear1d(_t([[[1.0, 2.0, 4.0]]], torch.float32, d),
                                                                        [3], False, 3.0)],
    "upsample_linear1d_same_size_inf_f16": lambda d: [A.upsample_linear1d(
        _t([[[-INF, 2.0], [0.5, INF]]], F16, d), [2], False, 3.0)],
    "upsample_linear1d_zero_weight_tap": lambda d: [A.upsample_linear1d(_t([[[1.0, -INF, 4.0]]], torch.float32, d),
                                                                        [6], False, None)],
    "upsample_linear1d_fused_index": lambda d: [A.upsample_linear1d(_t([[[INF]]], torch.float32, d), [5], False, 3.0),
                                                A.upsample_linear1d(_t([[[INF]]], F64, d), [5], False, 3.0),
                                                A.upsample_linear1d(_t([[[-INF, 2.0, 4.0]]], F64, d), [8], False,
                                                                    3.0)],
    "upsample_linear1d_align_last": lambda d: [A.upsample_linear1d(_t([[[1.0, 2.0, INF]]], torch.float32, d), [6],
                                                                   True, None)],
    "upsample_bilinear2d_inf": lambda d: [A.upsample_bilinear2d(
        _t([[[[1.0, -INF, 4.0], [2.0, 3.0, INF]]]], torch.float32, d), [3, 5], False, 3.0, 3.0)],
    "upsample_bilinear2d_same_size_u8": lambda d: [A.upsample_bilinear2d(
        torch.arange(6, dtype=torch.uint8).reshape(1, 1, 2, 3).to(d) * 40, [2, 3], False, 3.0, 3.0)],
    "xlog1py_scalar_overflows_f16": lambda d: [A.special_xlog1py.other_scalar(
        _t([-0.5, 0.0, 2.0, float("nan")], F16, d), 2.0 ** 40), A.special_xlog1py.other_scalar(
        _t([-0.5, 0.0, 2.0], torch.bfloat16, d), 1e39),
        A.special_xlog1py.self_scalar(2.0 ** 40, _t([0.0, 1.0], F16, d)),
        A.special_xlog1py.other_scalar(_t([-0.5, 2.0], F16, d), 1e-8)],
    "xlog1py_scalar_out_f16": lambda d: [A.special_xlog1py.other_scalar_out(
        _t([-0.5, 0.0, 2.0], F16, d), 1e5, out=torch.empty(3, dtype=F16, device=d))],
    "upsample_linear1d_backward_same_size": lambda d: [A.upsample_linear1d_backward(
        _ramp(1, 1, 3).to(d), [3], [1, 1, 3], False, 0.5)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_shape_and_nan_as_cpu(name: str, mode: str) -> None:
    def shapes_too(d: str) -> list[torch.Tensor]:
        got = CASES[name](d)
        assert [(t.dtype, t.shape) for t in got] == [(t.dtype, t.shape) for t in CASES[name]("cpu")]
        return got

    assert_exactly_cpu(shapes_too, mode)


def test_xlog1py_scalar_compiled_as_cpu() -> None:
    x = torch.tensor([-0.5, 0.0, 2.0], dtype=F16)
    torch._dynamo.reset()
    got = torch.compile(lambda t: torch.special.xlog1py(t, 2.0 ** 40), backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), torch.special.xlog1py(x, 2.0 ** 40), rtol=0, atol=0, equal_nan=True)


def test_upsample_linear_compiled_as_cpu() -> None:
    x = torch.tensor([[[1.0, -INF, 4.0, 2.0]]])
    want = [A.upsample_linear1d(x, [4], False, 3.0), A.upsample_linear1d(x, [7], False, None)]
    torch._dynamo.reset()
    got = torch.compile(lambda t: [A.upsample_linear1d(t, [4], False, 3.0), A.upsample_linear1d(t, [7], False, None)],
                        backend="tpu")(x.to("tpu"))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("op", "grad", "self"), [(A._adaptive_avg_pool2d_backward, (3, 2, 2), (2, 2, 3)),
                                                  (A._adaptive_avg_pool3d_backward, (2, 1, 2, 2), (3, 1, 2, 2)),
                                                  (A._adaptive_avg_pool3d_backward, (3, 1, 2, 2), (2, 1, 2, 2))])
def test_adaptive_avg_backward_refuses_undefined_plane_counts(op: object, grad: tuple, self: tuple,
                                                              mode: str) -> None:
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="planes but self has"):
        op(torch.ones(grad, device="tpu"), torch.ones(self, device="tpu"))
        torch.tpu.synchronize()


def test_adaptive_avg_backward_more_planes_is_a_cpu_crash_rule() -> None:
    op = A._adaptive_avg_pool2d_backward.default
    assert cpu_crashes(Call(op, [TensorArg(torch.ones(3, 2, 2)), TensorArg(torch.ones(2, 2, 3))]))
    fewer = Call(op, [TensorArg(torch.ones(2, 2, 2)), TensorArg(torch.ones(3, 2, 2))])
    assert not cpu_crashes(fewer)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "dims", "size"), [((4, 3, 1), [0, 2, 1], 2), ((3,), [0], 2), ((4,), [0], 3)])
def test_fft_c2r_refuses_an_input_size_cpu_reads_wrongly(shape: tuple, dims: list, size: int, mode: str) -> None:
    x = torch.ones(shape, dtype=torch.complex64, device="tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="last transformed dim has"):
        A._fft_c2r(x, dims, 2, size)
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
def test_fft_c2r_sizes_cpu_defines_and_irfft_as_cpu(mode: str) -> None:
    x = torch.linspace(-1, 2, 24).reshape(4, 6).to(torch.complex64) * (1 + 0.5j)
    assert_close_to_cpu(lambda d: [A._fft_c2r(x.to(d)[:, :3], [0, 1], 2, 4), A._fft_c2r(x.to(d)[:, :3], [1], 0, 3),
                                   A._fft_c2r(x.to(d)[:3, :3], [1, 0], 1, 3),
                                   torch.fft.irfft(x.to(d), 3), torch.fft.hfft(x.to(d), 9)], mode)


def test_fft_c2r_seed19_call_is_a_cpu_crash_rule() -> None:
    op = A._fft_c2r.default
    name = str(op)
    assert cpu_crashes(make_call(op, call_rng(19, name, 1), 19))
    assert not cpu_crashes(Call(op, [TensorArg(torch.ones(4, 2, dtype=torch.complex64)), [0, 1], 2, 2]))


REFUSALS = {
    "embedding_bag_int8_weight": lambda d: A._embedding_bag(torch.ones(3, 2, dtype=torch.int8, device=d),
                                                            torch.tensor([0, 1], device=d),
                                                            torch.tensor([0], device=d), False, 0),
    "embedding_bag_forward_only_u8_weight": lambda d: A._embedding_bag_forward_only(
        torch.ones(2, 2, dtype=torch.uint8, device=d), torch.tensor([1], device=d), torch.tensor([0], device=d)),
    "embedding_bag_float_indices": lambda d: A._embedding_bag(torch.ones(3, 2, dtype=torch.int8, device=d),
                                                              torch.tensor([0.0, 1.0], device=d),
                                                              torch.tensor([0], device=d), False, 0),
    "embedding_bag_float_offsets": lambda d: A._embedding_bag(torch.ones(3, 2, device=d),
                                                              torch.tensor([0, 1], device=d),
                                                              torch.tensor([0.0], device=d), False, 0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSALS[name], mode)


def test_adaptive_avg3d_backward_fewer_planes_is_skipped_as_undefined() -> None:
    op = A._adaptive_avg_pool3d_backward.default
    assert cpu_crashes(Call(op, [TensorArg(torch.ones(2, 1, 2, 2)), TensorArg(torch.ones(3, 1, 2, 2))]))
    assert not cpu_crashes(Call(op, [TensorArg(torch.ones(3, 1, 2, 2)), TensorArg(torch.ones(3, 1, 2, 2))]))
