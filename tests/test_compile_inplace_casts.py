"""In-place arithmetic under torch.compile refuses a result self cannot hold, as CPU eager does (and abs of bools).

The functional graph computes `self.op_(other)` as a new tensor copied into self, and copy_ casts anything; CPU's
TensorIterator first refuses a common dtype self cannot hold ("result type ComplexFloat can't be cast to the
desired output type Long"). The meta kernels make that check for integer and float results only, so a complex
operand into a real self computed silently under compile (`int64.add_(1.5+1j)` gave 2); Dynamo spells addcmul_
and addcdiv_ with a value as inductor's fma, which also dropped their value's overflow check (a complex value for
a float self) and the cast (float products into an integer self). Eager modes refused all of these already; they
are checked here too so that no mode regresses. Valid in-place calls still compile and match eager exactly."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled


def _t(d: str, dtype: torch.dtype) -> torch.Tensor:
    return torch.arange(1, 5, device=d).to(dtype)


def _b(d: str) -> torch.Tensor:
    return torch.tensor([True, False, True], device=d)


REFUSED = {
    "int add_ complex": lambda d: _t(d, torch.int64).add_(1.5 + 1j),
    "float add_ complex": lambda d: _t(d, torch.float32).add_(1j),
    "float mul_ complex": lambda d: _t(d, torch.float32).mul_(2j),
    "int mul_ complex 0-d tensor": lambda d: _t(d, torch.int64).mul_(torch.tensor(1j, device=d)),
    "int sub_ complex": lambda d: _t(d, torch.int64).sub_(1j),
    "float add_ complex tensor": lambda d: _t(d, torch.float32).add_(_t(d, torch.complex64)),
    "int div_ floor complex": lambda d: _t(d, torch.int64).div_(1j, rounding_mode="floor"),
    "int div_ true": lambda d: _t(d, torch.int64).div_(2),
    "float addcmul_ complex value": lambda d: _t(d, torch.float32).addcmul_(_t(d, torch.float32),
                                                                            _t(d, torch.float32), value=1j),
    "float addcdiv_ complex value": lambda d: _t(d, torch.float32).addcdiv_(_t(d, torch.float32),
                                                                            _t(d, torch.float32), value=1j),
    "int addcmul_ float tensors": lambda d: _t(d, torch.int64).addcmul_(_t(d, torch.float32),
                                                                        _t(d, torch.float32), value=2),
    "float16 addcmul_ overflowing value": lambda d: _t(d, torch.float16).addcmul_(_t(d, torch.float16),
                                                                                  _t(d, torch.float16), value=1e300),
    "int ldexp_": lambda d: _t(d, torch.int64).ldexp_(_t(d, torch.int64)),
    "bool ldexp_ float": lambda d: _t(d, torch.bool).ldexp_(_t(d, torch.float32)),
    "float ldexp_ complex": lambda d: _t(d, torch.float32).ldexp_(_t(d, torch.complex64)),
    "int ldexp_ float64 0-d": lambda d: _t(d, torch.int64).ldexp_(torch.tensor(2.0, dtype=torch.float64, device=d)),
    "bool clamp_min True": lambda d: torch.clamp_min(_b(d), True),
    "bool clamp_max_ False": lambda d: _b(d).clamp_max_(False),
    "bool clamp both": lambda d: torch.clamp(_b(d), True, True),
    "bool clamp_ min only": lambda d: _b(d).clamp_(True),
    "int logit_": lambda d: _t(d, torch.int64).logit_(),
    "bool logit_": lambda d: _b(d).logit_(),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_under_compile_as_cpu(name):
    assert_refused_as_cpu_compiled(REFUSED[name])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_in_eager_as_cpu(name, mode):
    assert_refused_as_cpu(REFUSED[name], mode)


def _steps(x: torch.Tensor, t: torch.Tensor, i: torch.Tensor) -> list[torch.Tensor]:
    x.addcmul_(t, t, value=0.5)
    x.addcdiv_(t, t + 1, value=-0.25)
    x.add_(t, alpha=2.0)
    x.mul_(1.5)
    x.div_(t + 3)
    i.addcmul_(i, i, value=1.7)  # an integer self takes the value toward zero: 1
    i.add_(3).mul_(2).sub_(5)
    return [x, i]


def test_valid_inplace_arithmetic_compiles_as_eager():
    def run(d: str, compiled: bool) -> list[torch.Tensor]:
        x, t, i = _t(d, torch.float32) / 3, _t(d, torch.float32), _t(d, torch.int64)
        fn = torch.compile(_steps, backend="tpu") if compiled else _steps
        return [r.cpu() for r in fn(x, t, i)]

    torch._dynamo.reset()
    want = run("cpu", False)
    for got in (run("tpu", True), run("tpu", False)):
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_bool_clamps_that_cpu_computes_still_compute(mode):
    def calls(d: str) -> list[torch.Tensor]:
        return [torch.clamp_min(_b(d), 1), torch.clamp(_b(d), torch.tensor(True, device=d)), torch.clamp(_b(d), 0.5),
                _t(d, torch.float16).ldexp_(_t(d, torch.float64)), torch.ldexp(_t(d, torch.int64), _t(d, torch.int64))]

    with torch.tpu.eager_mode(mode):
        got = [g.cpu() for g in calls("tpu")]
    for g, w in zip(got, calls("cpu"), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_abs_of_bool_refused_as_cpu_unless_empty(mode):
    assert_refused_as_cpu(lambda d: torch.abs(_b(d)), mode)
    assert_refused_as_cpu(lambda d: _b(d).abs_(), mode)
    with torch.tpu.eager_mode(mode):
        assert torch.abs(torch.ones(0, dtype=torch.bool, device="tpu")).shape == (0,)


def test_abs_of_bool_refused_as_cpu_compiled():
    assert_refused_as_cpu_compiled(lambda d: torch.abs(_b(d)))
    assert_refused_as_cpu_compiled(lambda d: _b(d).abs_())


@pytest.mark.parametrize("mode", MODES)
def test_pow_of_bools_refused_as_cpu(mode):
    assert_refused_as_cpu(lambda d: torch.pow(_b(d), _b(d)), mode)
    assert_refused_as_cpu(lambda d: torch.pow(True, _b(d)), mode)
    assert_refused_as_cpu(lambda d: _b(d).pow_(_b(d)), mode)
    with torch.tpu.eager_mode(mode):  # a bool tensor to a bool Scalar computes
        assert torch.equal(torch.pow(_b("tpu"), True).cpu(), torch.pow(_b("cpu"), True))


@pytest.mark.parametrize(("name", "case"), [
    ("xlogy complex", lambda d: torch.xlogy(_t(d, torch.float32), _t(d, torch.complex64))),
    ("logaddexp int", lambda d: torch.logaddexp(_t(d, torch.int64), _t(d, torch.int64))),
])
def test_the_dtype_refusal_table_holds_under_compile(name, case):
    assert_refused_as_cpu_compiled(case)  # upstream's decompositions computed them
