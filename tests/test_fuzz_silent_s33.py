"""Silent results the fuzzer found (seeds 33-35), refused or equal to CPU's now, in every eager mode and compiled:
(log_)softmax backward of a float grad for a Half input (CPU's kernel refuses), elu_backward's NaN slope with
is_result, adaptive max-pool backward with an empty non-batch grad dim, std/var of float32 values whose squares
overflow float32 (CPU accumulates in double), isin with assume_unique on repeated elements (CPU's sorting
algorithm), grid_sampler with a mode CPU's kernel leaves the output unwritten for, the fused optimizer steps with a
grad or state of another shape (CPU reads past it: heap corruption), ldexp with a bool exponent (CPU's kernel
refuses) and with exponents whose power of two overflows the dtype (CPU's std::ldexp is exact); and the seeds' CPU
crash rules (tests/test_fuzz_crash_rules.py has the older ones)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

from torchtpu.fuzz.args import make_call
from torchtpu.fuzz.overloads import cpu_crashes, registered, select
from torchtpu.fuzz.runner import call_rng

aten = torch.ops.aten


def _ones(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


REFUSED = {
    # seed 33: CPU's kernel reads its Half result as float
    "log_softmax_backward_half_input": lambda d: aten._log_softmax_backward_data(
        torch.ones((), device=d), torch.ones((), device=d), -1, torch.float16),
    "softmax_backward_half_input": lambda d: aten._softmax_backward_data(
        torch.ones(2, 3, device=d), torch.ones(2, 3, device=d), 0, torch.float16),
    "log_softmax_backward_half_input_out": lambda d: aten._log_softmax_backward_data.out(
        torch.ones(3, device=d), torch.ones(3, device=d), 0, torch.float16,
        out=torch.empty(3, dtype=torch.float16, device=d)),
    # seed 33: TORCH_CHECK(alpha >= 0.0) fails for NaN
    "elu_backward_nan_slope": lambda d: aten.elu_backward(
        torch.ones((), dtype=torch.float64, device=d), float("nan"), -1, -2.401, True,
        torch.ones(3, 1, 5, dtype=torch.float64, device=d)),
    # seed 33: adaptive_pool_empty_output_check
    "adaptive_max_pool2d_backward_empty_out": lambda d: aten.adaptive_max_pool2d_backward.grad_input(
        _ones(4, 0, 3, 0, dtype=torch.int16, d=d), _ones(4, 0, 3, 0, dtype=torch.int16, d=d),
        torch.zeros(4, 0, 3, 0, dtype=torch.long, device=d), grad_input=torch.empty(0, dtype=torch.int16, device=d)),
    "adaptive_max_pool2d_backward_empty": lambda d: aten.adaptive_max_pool2d_backward(
        _ones(2, 0, 3, d=d), _ones(2, 4, 3, d=d), torch.zeros(2, 0, 3, dtype=torch.long, device=d)),
    "adaptive_max_pool3d_backward_empty": lambda d: aten.adaptive_max_pool3d_backward(
        _ones(2, 1, 0, 3, d=d), _ones(2, 1, 4, 3, d=d), torch.zeros(2, 1, 0, 3, dtype=torch.long, device=d)),
    # ldexp: CPU's exponent kernel dispatches on integer types only
    "ldexp_bool": lambda d: torch.ldexp(_ones(3, d=d), torch.tensor([True, False, True], device=d)),
    "ldexp_bool_half": lambda d: torch.ldexp(_ones(2, 3, dtype=torch.float16, d=d), torch.ones(3, dtype=torch.bool,
                                                                                              device=d)),
    "ldexp_bool_out": lambda d: torch.ldexp(_ones(3, dtype=torch.float64, d=d), torch.ones(3, dtype=torch.bool,
                                                                                         device=d),
                                            out=torch.empty(3, dtype=torch.float64, device=d)),
    "ldexp_bool_out_float64": lambda d: torch.ldexp(_ones(3, d=d), torch.ones(3, dtype=torch.bool, device=d),
                                                    out=torch.empty(3, dtype=torch.float64, device=d)),
    "ldexp_inplace_broadcast": lambda d: _ones(2, 1, 1, d=d).ldexp_(torch.ones(2, 1, dtype=torch.int32, device=d)),
    "ldexp_inplace_broadcast_float": lambda d: _ones(d=d).ldexp_(_ones(5, 1, 1, d=d)),
    "ldexp_bool_inplace": lambda d: _ones(3, d=d).ldexp_(torch.ones(3, dtype=torch.bool, device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("case", ["ldexp_bool", "ldexp_bool_inplace", "ldexp_bool_out", "ldexp_int_inplace_complex"])
def test_ldexp_refused_compiled(case: str) -> None:
    """The bool exponent while fake tensors trace; an integer self's ldexp_ by a complex exponent is ldexp_out's
    cast check first (the fake-tensor check gave mul's words)."""
    cases = {**REFUSED, "ldexp_int_inplace_complex": lambda d: _ones(3, dtype=torch.int64, d=d).ldexp_(
        torch.ones(3, dtype=torch.complex64, device=d))}
    assert_refused_as_cpu_compiled(cases[case])


def _ldexp(d: str) -> list[torch.Tensor]:
    """CPU's kernel path (floating self, integer exponent) exactly, where the power of two alone overflows or
    underflows the dtype; an int64 exponent is read as its low 32 bits; every other pairing as before."""
    out = []
    e = torch.tensor([16, -150, 128, 1, 5, -1100, -3, 2**32 + 2, -140, 300], device=d)
    x = torch.tensor([2.0**-10, 2.0**20, 3.0, float("nan"), -0.0, 1e-30, float("inf"), -5.5, 2.0**10, 1e-300],
                     dtype=torch.float64, device=d)
    for dt in (torch.float32, torch.float16, torch.float64):
        for edt in (torch.int64, torch.int32, torch.int16):
            s = x.to(dt)
            out += [torch.ldexp(s, e.to(edt)), s.clone().ldexp_(e.to(edt)),
                    torch.ldexp(s, e.to(edt), out=torch.empty(0, dtype=dt, device=d))]
    out += [torch.ldexp(x.to(torch.float32), e.to(torch.float32)), torch.ldexp(e, e),  # the composite's paths
            torch.ldexp(e, e, out=torch.empty(10, dtype=torch.float64, device=d))]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_ldexp_exactly_cpu(mode: str) -> None:
    assert_exactly_cpu(_ldexp, mode)
    _ldexp_gradients_as_cpu()


def _ldexp_gradients_as_cpu() -> None:
    """ATen's autograd formula above the tpu kernel, unchanged."""
    for dev in ("cpu", "tpu"):
        x = torch.tensor([1.5, -2.0, 3.0], device=dev, requires_grad=True)
        e = torch.tensor([1.0, 0.5, 2.0], device=dev, requires_grad=True)
        (torch.ldexp(x, e) * torch.tensor([1.0, 2.0, 3.0], device=dev)).sum().backward()
        y = torch.tensor([1.5, -2.0, 3.0], device=dev, requires_grad=True)
        torch.ldexp(y, torch.tensor([3, -1, 0], device=dev)).sum().backward()
        grads = [g.cpu() for g in (x.grad, e.grad, y.grad)]
        if dev == "cpu":
            want = grads
    for g, w in zip(grads, want, strict=True):
        torch.testing.assert_close(g, w)


def _std(d: str) -> list[torch.Tensor]:
    """Seed 34: std of float32 values near 1e30 was inf (squares past float32); tiny values' variance too."""
    g = torch.Generator().manual_seed(34)
    big = (torch.randn(4, 3, 3, 4, generator=g) * 1e30).to(d)
    tiny = (torch.randn(5, 3, generator=g) * 1e-30).to(d)
    edge = torch.tensor([3e38, -3e38, 1e38], device=d)
    half = (torch.randn(3, 4, generator=g) * 1000).half().to(d)
    return [torch.std(big, dim=[-3], keepdim=True), torch.var(big, dim=0), torch.std(big), torch.std(tiny, dim=0),
            torch.var_mean(big, dim=-1)[0], torch.std(edge), torch.var(edge), torch.std(half, dim=1)]


@pytest.mark.parametrize("mode", MODES)
def test_std_of_large_values_as_cpu(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        got = _std("tpu")
        torch.tpu.synchronize()
    for g, c in zip(got, _std("cpu"), strict=True):
        assert torch.isfinite(g.cpu()).eq(torch.isfinite(c)).all()
        torch.testing.assert_close(g.cpu(), c, rtol=1e-5, atol=0, equal_nan=True)


def _isin(d: str) -> list[torch.Tensor]:
    """Seed 34/35: assume_unique with repeated elements; ATen's sorting algorithm marks repeats as found."""
    g = torch.Generator().manual_seed(35)
    e = torch.randint(-5, 5, (5, 2, 4), generator=g).float()
    e[0, 0, 0] = float("nan")
    t = torch.randint(-5, 5, (5, 2, 4), generator=g).int()
    e, t = e.to(d), t.to(d)
    return [torch.isin(e, t, assume_unique=True, invert=inv) for inv in (False, True)] + \
        [torch.isin(e, t, invert=True), torch.isin(t, t, assume_unique=True),
         torch.isin(torch.tensor([1, 1, 2], device=d), torch.arange(20, device=d) + 5, assume_unique=True)]


@pytest.mark.parametrize("mode", MODES)
def test_isin_assume_unique_as_cpu(mode: str) -> None:
    assert_exactly_cpu(_isin, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("interpolation", "padding"), [(0, 3), (3, 0), (1, -1)])
def test_grid_sampler_unknown_mode_refused(interpolation: int, padding: int, mode: str) -> None:
    x, grid = torch.arange(8.0).reshape(2, 1, 2, 2).to("tpu"), torch.full((2, 1, 2, 2), 0.3, device="tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="tpu refuses it"):
        aten.grid_sampler_2d(x, grid, interpolation, padding, True)
        torch.tpu.synchronize()


def _sgd(grad: tuple[int, ...], buf: tuple[int, ...]) -> None:
    aten._fused_sgd_([torch.ones(2, 4, device="tpu")], [torch.ones(grad, device="tpu")],
                     [torch.ones(buf, device="tpu")], weight_decay=0.0, momentum=0.5, lr=0.1, dampening=0.0,
                     nesterov=False, maximize=False, is_first_step=False)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("grad", "buf"), [((1,), (2, 4)), ((2, 4), (8,)), ((4,), (2, 4))])
def test_fused_sgd_other_shapes_refused(grad: tuple[int, ...], buf: tuple[int, ...], mode: str) -> None:
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="must have the same shape and layout"):
        _sgd(grad, buf)
        torch.tpu.synchronize()


def test_fused_adam_other_layout_refused_and_matching_computes() -> None:
    def adam(d: str, exp_avg: torch.Tensor) -> torch.Tensor:
        p = [torch.ones(2, 4, device=d)]
        aten._fused_adam_(p, [torch.full((2, 4), 0.5, device=d)], [exp_avg.to(d)], [torch.ones(2, 4, device=d)], [],
                          [torch.tensor(1.0, device=d)], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8,
                          amsgrad=False, maximize=False)
        return p[0]
    with pytest.raises(RuntimeError, match="must have the same shape and layout"):
        adam("tpu", torch.ones(4, 2).t())
    torch.testing.assert_close(adam("tpu", torch.ones(2, 4)).cpu(), adam("cpu", torch.ones(2, 4)))


def test_fused_sgd_other_shape_refused_compiled() -> None:
    torch._dynamo.reset()
    with pytest.raises(Exception, match="must have the same shape and layout"):
        torch.compile(lambda: _sgd((1,), (2, 4)), backend="tpu")()
        torch.tpu.synchronize()


@pytest.mark.parametrize(("seed", "name", "index"), [(33, "aten._fused_sgd_.default", 1),
                                                     (33, "aten._native_batch_norm_legit_no_training.out", 2),
                                                     (35, "aten._weight_norm_interface_backward.default", 0)])
def test_the_crashing_calls_are_skipped(seed: int, name: str, index: int) -> None:
    op = next(o for o in select(registered(), None) if str(o) == name)
    assert cpu_crashes(make_call(op, call_rng(seed, name, index), seed))
