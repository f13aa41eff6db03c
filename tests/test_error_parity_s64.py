"""Issue 17, the fuzzer's findings left open on seeds 53-63 and found on seeds 64-66, each compared with CPU in
every eager mode and under torch.compile: max/min.unary_out's fill_ conversion of the result into a narrower out=
(checked where the program runs), and the refusals below."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import (
    MODES,
    assert_exactly_cpu,
    assert_refused_as_cpu,
    assert_refused_as_cpu_compiled,
    results_in_every_mode,
)

aten = torch.ops.aten
F16, F32, F64, BF16, C64 = torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.complex64
U8, I8, I16, I32, I64 = torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64

# max_unary_out is `out.fill_(self.max())`: the Scalar's checked conversion refuses a value the out dtype cannot
# hold (float32 and complex64 from a finite double, the integer types; uint8 also takes -255..-1), float16 and
# bfloat16 are filled unchecked (fuzz seed 62: int64 40000 into int16 wrapped to -25536, CPU raises).
FILL_OVERFLOWS = [
    (aten.max.unary_out, [40000, 1], I64, I16),
    (aten.min.unary_out, [-40000, 1], I64, I16),
    (aten.max.unary_out, [2**40, 1], I64, I32),
    (aten.max.unary_out, [300, 1], I32, U8),
    (aten.min.unary_out, [-300, 1], I16, U8),
    (aten.max.unary_out, [200, 1], U8, I8),
    (aten.max.unary_out, [1e300, 1], F64, F32),
    (aten.min.unary_out, [-1e39, 1], F64, C64),
]
FILL_FITS = [
    (aten.max.unary_out, [32767, 1], I64, I16),
    (aten.min.unary_out, [-200, 1], I64, U8),  # two's complement: 56
    (aten.min.unary_out, [-128, 1], I16, I8),
    (aten.max.unary_out, [float("inf"), 1], F64, F32),
    (aten.max.unary_out, [float("nan"), 1], F64, F32),
    (aten.max.unary_out, [1e300, 1], F64, F16),  # unchecked: inf
    (aten.max.unary_out, [70000.0, 1], F32, BF16),
    (aten.max.unary_out, [3.0, 1], F64, F32),
    (aten.max.unary_out, [1, 0], torch.bool, I8),
    (aten.max.unary_out, [-5, 7], I8, I64),
]


def _fill(op: object, values: list, dtype: torch.dtype, out: torch.dtype):
    return lambda d: [op(torch.tensor(values, dtype=dtype, device=d), out=torch.empty(0, dtype=out, device=d))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("op", "values", "dtype", "out"), FILL_OVERFLOWS)
def test_fill_overflow_refused_as_cpu(mode: str, op: object, values: list, dtype: torch.dtype,
                                      out: torch.dtype) -> None:
    assert_refused_as_cpu(_fill(op, values, dtype, out), mode)


@pytest.mark.parametrize(("op", "values", "dtype", "out"), FILL_OVERFLOWS[:2])
def test_fill_overflow_refused_compiled(op: object, values: list, dtype: torch.dtype, out: torch.dtype) -> None:
    assert_refused_as_cpu_compiled(_fill(op, values, dtype, out))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("op", "values", "dtype", "out"), FILL_FITS)
def test_fill_that_fits_as_cpu(mode: str, op: object, values: list, dtype: torch.dtype, out: torch.dtype) -> None:
    assert_exactly_cpu(_fill(op, values, dtype, out), mode)


@pytest.mark.parametrize(("op", "values", "dtype", "out"), FILL_FITS[:3])
def test_fill_that_fits_compiled(op: object, values: list, dtype: torch.dtype, out: torch.dtype) -> None:
    case = _fill(op, values, dtype, out)
    torch._dynamo.reset()
    got = torch.compile(lambda: case("tpu"), backend="tpu")()
    torch.testing.assert_close(got[0].cpu(), case("cpu")[0], rtol=0, atol=0, equal_nan=True)


# binary_cross_entropy_backward.grad_input with operands of other shapes: CPU's iterator writes grad_input's squeezed
# view, resized in its storage; an empty grad_input= stays empty, a contiguous one holds the first elements (and
# keeps the rest of its own values), weight's mul_ and the mean's div_ then act on it (fuzz seeds 62, 64).
def _bce_backward(grad: list, x: list, target: list, out: list, weight: list | None = None, reduction: int = 1):
    def call(d: str) -> list[torch.Tensor]:
        gen = torch.Generator().manual_seed(0)
        t = [torch.rand(s, generator=gen).clamp(0.1, 0.9).to(d) for s in (grad, x, target)]
        gi = torch.arange(float(torch.Size(out).numel())).reshape(out).to(d)
        w = None if weight is None else torch.rand(weight, generator=gen).to(d)
        return [aten.binary_cross_entropy_backward.grad_input(*t, w, reduction, grad_input=gi)]

    return call


BCE_BACKWARD_SQUEEZED = [
    ([], [1], [], [0]),
    ([], [5, 4], [], [0]),
    ([], [5, 4], [], [2, 0]),
    ([], [5, 4], [], [3]),
    ([], [2, 2], [], [1, 6]),
    ([], [5, 4], [], [0], [1]),
    ([4, 1], [1, 4], [1], [3], [3], 0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", BCE_BACKWARD_SQUEEZED)
def test_bce_backward_into_squeezed_grad_input(mode: str, shapes: tuple) -> None:
    assert_exactly_cpu(_bce_backward(*shapes), mode)


def test_bce_backward_into_empty_grad_input_compiled() -> None:
    """Under torch.compile only the first form: with a self of more than one element Dynamo's own out= handling
    fails on CPU too (backend="aot_eager": BackendCompilerFailed, an IndexError in its guards)."""
    def f(g: torch.Tensor, x: torch.Tensor, t: torch.Tensor, gi: torch.Tensor) -> torch.Tensor:
        return aten.binary_cross_entropy_backward.grad_input(g, x, t, None, 1, grad_input=gi)

    args = [torch.tensor(1.0), torch.full((2,), 0.5)[::2], torch.tensor(0.3), torch.empty(0)]
    torch._dynamo.reset()
    got = torch.compile(f, backend="tpu")(*(a.to("tpu") for a in args))
    torch.testing.assert_close(got.cpu(), f(*args), rtol=0, atol=0)


def test_bce_backward_weight_of_another_shape_refused_as_cpu() -> None:
    for mode in MODES:
        assert_refused_as_cpu(lambda d: _bce_backward([], [5, 4], [], [0], [5, 4])(d), mode)


# mse_loss_backward / smooth_l1_loss_backward: the iterator's cast of the inputs' common dtype to grad_input's, then
# the kernel's dispatch on that common dtype (real types only): all-complex operands are refused (fuzz seed 57: tpu
# computed a complex grad), real operands into a complex grad_input= are computed (tpu refused smooth_l1's).
def _loss_backward(op: object, dtypes: tuple, out: torch.dtype | None = None, extra: tuple = ()):
    def call(d: str) -> list[torch.Tensor]:
        g, x, t = (torch.full((3,), v, dtype=dt, device=d) for v, dt in zip((1.5, 2.0, 0.25), dtypes))
        if out is None:
            return [op(g, x, t, 1, *extra)]
        return [op.grad_input(g, x, t, 1, *extra, grad_input=torch.empty(0, dtype=out, device=d))]

    return call


LOSS_BACKWARD_REFUSED = [
    _loss_backward(aten.mse_loss_backward, (C64, C64, C64)),
    _loss_backward(aten.mse_loss_backward, (F32, C64, C64)),
    _loss_backward(aten.mse_loss_backward, (C64, C64, C64), C64),
    _loss_backward(aten.mse_loss_backward, (C64, F32, F32)),  # the cast to self's float32 first
    _loss_backward(aten.mse_loss_backward, (torch.bool, torch.bool, torch.bool), F32),
    _loss_backward(aten.smooth_l1_loss_backward, (C64, C64, C64), None, (1.0,)),
]
LOSS_BACKWARD_COMPUTED = [
    _loss_backward(aten.mse_loss_backward, (F32, F32, F32), C64),
    _loss_backward(aten.smooth_l1_loss_backward, (F32, F32, F32), C64, (1.0,)),
    _loss_backward(aten.mse_loss_backward, (I32, I32, I32)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(LOSS_BACKWARD_REFUSED)))
def test_loss_backward_dispatch_refused_as_cpu(mode: str, case: int) -> None:
    assert_refused_as_cpu(LOSS_BACKWARD_REFUSED[case], mode)


@pytest.mark.parametrize("case", range(2))
def test_loss_backward_dispatch_refused_compiled(case: int) -> None:
    assert_refused_as_cpu_compiled(LOSS_BACKWARD_REFUSED[case])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(LOSS_BACKWARD_COMPUTED)))
def test_loss_backward_real_operands_computed_as_cpu(mode: str, case: int) -> None:
    assert_exactly_cpu(LOSS_BACKWARD_COMPUTED[case], mode)


def test_loss_backward_real_operands_computed_compiled() -> None:
    def f(g: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return aten.mse_loss_backward(g, x, t, 1)

    args = [torch.full((3,), 1.5, dtype=I32), torch.full((3,), 2, dtype=I32), torch.zeros(3, dtype=I32)]
    torch._dynamo.reset()
    got = torch.compile(f, backend="tpu")(*(a.to("tpu") for a in args))
    torch.testing.assert_close(got.cpu(), f(*args), rtol=0, atol=0)


# Hermite H and He of float32: CPU's compiled recurrence contracts (x + x) * q - k * p into an FMA; with separate
# roundings an overflowing step was inf - inf = NaN where CPU's is -inf (fuzz seed 65: H_48(3.116)), and finite
# values were an ulp or more off.
@pytest.mark.parametrize("fn", [torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he])
def test_hermite_float32_bits_as_cpu(fn: object) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.cat([torch.tensor([3.116, 10.0, -7.5]), torch.rand(400, generator=gen) * 20 - 10])
    n = torch.cat([torch.tensor([48.0, 8.0, 60.0]), torch.randint(0, 70, (400,), generator=gen).float()])
    want = fn(x, n)
    assert want.isinf().any()
    for mode, got in results_in_every_mode(fn, x, n).items():
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=mode)


# normal(float mean, Tensor std): CPU converts the mean unchecked into float16/bfloat16 (beyond their range: +-inf),
# checked into float32 (fuzz: a float16 mean of 1e10 was refused by tpu's full()).
NORMAL_MEANS = [(1e10, F16), (-1e10, F16), (70000.0, F16), (1e300, BF16), (3.5e38, BF16), (1e10, F32), (65519.0, F16)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("mean", "dtype"), NORMAL_MEANS)
def test_normal_mean_beyond_a_half_precision_range_as_cpu(mode: str, mean: float, dtype: torch.dtype) -> None:
    def calls(d: str) -> list[torch.Tensor]:
        std = torch.zeros(3, dtype=dtype, device=d)
        return [aten.normal.float_Tensor_out(mean, std, out=torch.empty(3, dtype=dtype, device=d)),
                aten.normal.float_Tensor(mean, std)]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_normal_mean_beyond_float32_refused_as_cpu(mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.normal.float_Tensor(1e300, torch.zeros(3, device=d)), mode)


def test_normal_mean_beyond_a_half_precision_range_compiled() -> None:
    def f(std: torch.Tensor) -> torch.Tensor:
        return torch.normal(1e10, std)

    std = torch.zeros(3, dtype=F16)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend="tpu")(std.to("tpu")).cpu(), f(std), rtol=0, atol=0)


def _t(*shape: int, dtype: torch.dtype = F32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


def _pivots(values: list, d: str) -> torch.Tensor:
    return torch.tensor(values, dtype=I32, device=d)


# error_class findings of seeds 56-63: CPU's check (or dispatch) that comes first, in CPU's class and words
REFUSED = {
    # log_weight = (pos_weight - 1).mul(target).add_(1), then log_sigmoid(input).mul_(log_weight): its cast
    "bce_with_logits_out_complex_pos_weight": lambda d: aten.binary_cross_entropy_with_logits.out(
        _t(5, 2, dtype=F16, d=d), _t(5, 2, dtype=F16, d=d), None, _t(5, 2, dtype=C64, d=d),
        out=_t(5, 2, dtype=F16, d=d)),
    "bce_with_logits_bool_pos_weight": lambda d: aten.binary_cross_entropy_with_logits(
        _t(3, d=d), _t(3, d=d), None, _t(3, dtype=torch.bool, d=d)),
    # native_group_norm: at::empty({N, group}) before the kernel's dispatch
    "group_norm_negative_n": lambda d: aten.native_group_norm(_t(5, dtype=I8, d=d), None, None, -1, 0, 6, 3, 1e-5),
    # log_sigmoid_forward.output: the outs resized as they are, the dispatch on the input
    "log_sigmoid_forward_output_int": lambda d: aten.log_sigmoid_forward.output(
        _t(0, 4, dtype=I32, d=d), output=_t(0, dtype=torch.bool, d=d), buffer=_t(0, 4, dtype=torch.bool, d=d)),
    # lu_unpack: unpack_pivots' range check of each pivot read (CPU in its kernel, tpu where the program runs)
    "lu_unpack_pivot_zero": lambda d: aten.lu_unpack(_t(2, 4, d=d), _pivots([0, 1], d)),
    "lu_unpack_pivot_above_m": lambda d: aten.lu_unpack(_t(2, 4, d=d), _pivots([3, 1], d)),
    "lu_unpack_out_pivot_negative": lambda d: aten.lu_unpack.out(
        _t(3, 2, 2, d=d), _pivots([[1, 2], [2, 2], [-7, 1]], d), P=_t(0, d=d), L=_t(0, d=d), U=_t(0, d=d)),
    # linspace into bool: the kernel's dispatch (no Bool) before the bounds' conversion (fuzz seed 63)
    "linspace_bool_out": lambda d: aten.linspace.Scalar_Tensor_out(0, torch.tensor(True, device=d), 3,
                                                                   out=_t(dtype=torch.bool, d=d)),
    "linspace_bool_overflowing_end": lambda d: torch.linspace(0, 1e300, 3, dtype=torch.bool, device=d),
    "logspace_bool": lambda d: torch.logspace(0, 1, 3, dtype=torch.bool, device=d),
    "linspace_bool_1d_start": lambda d: aten.linspace.Tensor_Scalar_out(_t(3, d=d), 1, 3,
                                                                      out=_t(dtype=torch.bool, d=d)),  # seed 64
    # seed 66: logaddexp2.out's broadcast and cast before its dispatch, polygamma's negative n before its dispatch
    "logaddexp2_out_complex_into_float": lambda d: aten.logaddexp2.out(_t(2, dtype=C64, d=d), _t(2, dtype=C64, d=d),
                                                                       out=_t(0, d=d)),
    "logaddexp_out_complex_into_float": lambda d: aten.logaddexp.out(_t(2, dtype=C64, d=d), _t(2, dtype=C64, d=d),
                                                                     out=_t(0, d=d)),
    "polygamma_out_negative_n_complex": lambda d: aten.polygamma.out(-1, _t(2, dtype=C64, d=d), out=_t(0, d=d)),
    "polygamma_negative_n_bool": lambda d: aten.polygamma(-1, _t(2, dtype=torch.bool, d=d)),
    # seed 67: frac.out's same-dtype check before the dispatch; argmax/argmin's complex and bool before the dim
    "frac_out_bool_into_int8": lambda d: aten.frac.out(_t(2, dtype=torch.bool, d=d), out=_t(0, dtype=I8, d=d)),
    "frac_out_float_into_double": lambda d: aten.frac.out(_t(2, d=d), out=_t(0, dtype=F64, d=d)),
    "argmax_complex_bad_dim": lambda d: aten.argmax(_t(2, 2, 2, 2, dtype=C64, d=d), 4),
    "argmin_bool_bad_dim": lambda d: aten.argmin(_t(2, dtype=torch.bool, d=d), 4),
}


@pytest.mark.parametrize("mode", MODES)
def test_linspace_logspace_of_one_step_into_bool_as_cpu(mode: str) -> None:
    def calls(d: str) -> list[torch.Tensor]:
        return [torch.linspace(0, 1, 1, dtype=torch.bool, device=d),
                torch.logspace(0, 1, 1, dtype=torch.bool, device=d),
                torch.logspace(-1000, 1, 1, dtype=torch.bool, device=d),
                torch.logspace(0, 1, 0, dtype=torch.bool, device=d)]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_as_cpu(mode: str, case: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("case", ["bce_with_logits_bool_pos_weight", "group_norm_negative_n", "lu_unpack_pivot_zero",
                                  "linspace_bool_overflowing_end", "logspace_bool"])
def test_refused_as_cpu_compiled(case: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[case])


@pytest.mark.parametrize("mode", MODES)
def test_lu_unpack_reads_the_first_min_m_n_pivots_as_cpu(mode: str) -> None:
    def calls(d: str) -> list[torch.Tensor]:
        lu = torch.arange(16.0, device=d).reshape(2, 2, 4)
        return [*aten.lu_unpack(lu, _pivots([[2, 2, 1], [1, 2, 2]], d)), *aten.lu_unpack(lu[0], _pivots([2, 1, 7], d))]

    assert_exactly_cpu(calls, mode)


def test_lu_unpack_pivots_of_another_batch_refused() -> None:
    with pytest.raises(RuntimeError, match=r"expected pivots of shape \[3, 2\]"):
        aten.lu_unpack(_t(3, 2, 2, d="tpu"), _pivots([[1, 2], [2, 1]], "tpu"))


# in-place foreach ops: CPU's slow kernel runs X_ tensor by tensor, so an earlier tensor's in-place checks fail
# before a later tensor's dtype refusal, and a later tensor's shape is not read (fuzz seeds 62-64)
FOREACH_REFUSED = {
    "lgamma_int_cast_before_complex": lambda d: aten._foreach_lgamma_([_t(1, 5, dtype=I32, d=d),
                                                                       _t(1, 5, dtype=C64, d=d)]),
    "minimum_scalar_cast_before_complex": lambda d: aten._foreach_minimum_.Scalar(
        [_t(dtype=I8, d=d), _t(dtype=C64, d=d)], 0.635),
    "maximum_list_complex_before_broadcast": lambda d: aten._foreach_maximum_.List(
        [_t(0, 3, dtype=C64, d=d), _t(3, 1, 4, dtype=C64, d=d)], [_t(0, 3, dtype=C64, d=d), _t(0, 3, d=d)]),
    "maximum_list_shape_before_complex": lambda d: aten._foreach_maximum_.List(
        [_t(1, d=d), _t(2, dtype=C64, d=d)], [_t(4, 5, d=d), _t(2, dtype=C64, d=d)]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(FOREACH_REFUSED))
def test_foreach_inplace_refused_in_cpus_tensor_order(mode: str, case: str) -> None:
    assert_refused_as_cpu(FOREACH_REFUSED[case], mode)


def test_foreach_inplace_refused_in_cpus_tensor_order_compiled() -> None:
    assert_refused_as_cpu_compiled(FOREACH_REFUSED["lgamma_int_cast_before_complex"])


def _per_sample_backward(indices: torch.dtype, offset2bag: torch.dtype):
    def call(d: str) -> torch.Tensor:
        return aten._embedding_bag_per_sample_weights_backward(
            _t(2, 3, d=d), _t(5, 3, d=d), torch.tensor([1, 2, 3], dtype=indices, device=d),
            torch.tensor([0, 1], dtype=indices, device=d), torch.tensor([0, 1, 1], dtype=offset2bag, device=d), 0)

    return call


# _embedding_bag_per_sample_weights_backward: offset2bag's index types, then its type against indices' (seed 66)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("indices", "offset2bag"), [(I64, F32), (I64, I32), (I32, I64)])
def test_per_sample_weights_backward_offset2bag_refused_as_cpu(mode: str, indices: torch.dtype,
                                                               offset2bag: torch.dtype) -> None:
    assert_refused_as_cpu(_per_sample_backward(indices, offset2bag), mode)


def test_per_sample_weights_backward_offset2bag_refused_compiled() -> None:
    assert_refused_as_cpu_compiled(_per_sample_backward(I64, F32))


@pytest.mark.parametrize("mode", MODES)
def test_cumulative_of_empty_bool_into_bool_out_as_cpu(mode: str) -> None:
    """An empty self never reaches cumsum/cumprod's dispatch (which refuses bool) on CPU (fuzz seed 64)."""
    def calls(d: str) -> list[torch.Tensor]:
        b = torch.bool
        return [aten.cumprod.out(_t(5, 0, 0, 2, dtype=b, d=d), -4, out=_t(0, dtype=b, d=d)),
                aten.cumsum.out(_t(0, dtype=b, d=d), 0, out=_t(0, dtype=b, d=d))]

    assert_exactly_cpu(calls, mode)
    assert_refused_as_cpu(lambda d: aten.cumprod.out(_t(2, dtype=torch.bool, d=d), 0, out=_t(0, dtype=torch.bool, d=d)),
                          mode)
