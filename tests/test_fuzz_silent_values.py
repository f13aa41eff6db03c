"""Silent wrong results the schema fuzzer found (session 24, issue #17): each call must equal CPU exactly (NaN
where CPU's NaN is, same shape and dtype) in every eager mode and, where the op reaches a compiled graph, under
torch.compile(backend="tpu")."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

aten = torch.ops.aten


def _zeta_tail(d: str) -> list[torch.Tensor]:
    # fuzz seed 6, special_zeta.other_scalar: float32 tail terms overflowed (NaN); CPU sums in double (0)
    x = torch.tensor([79.3, 2.0, 3.5, 1.5, 100.0, 30.0, 1.0, 0.5], device=d)
    return [torch.special.zeta(x, 4), torch.special.zeta(x, torch.full_like(x, 0.7)), torch.special.zeta(3.0, x)]


def _var_mean_inf(d: str) -> list[torch.Tensor]:
    # fuzz seed 6, var_mean.correction: CPU's Welford mean is NaN once an inf is followed by any element (tpu gave
    # the sum's -inf); an inf last of all stays inf. std_mean and a complex input's parts follow the same rule
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[-inf, 1.0, 2.0, 4.0], [1.0, 2.0, 3.0, inf], [inf, 2.0, 2.0, inf], [1.0, nan, 2.0, 2.0]],
                     device=d)
    out = []
    for dtype in (torch.float16, torch.float32, torch.bfloat16):
        for dim in (None, [0], [1], [0, 1]):
            out += torch.var_mean(x.to(dtype), dim, keepdim=True)
    out += torch.std_mean(x, [1])
    out += torch.var_mean(x.t(), [0])
    out += torch.var_mean(torch.complex(x, x.flip(1)), [1])
    return out


def _complex_mean(d: str) -> list[torch.Tensor]:
    # fuzz seed 4, soft_margin_loss of complex64: CPU's mean divides the sum by the complex scalar n + 0i, so an
    # inf part makes the other NaN ((inf - 0.39j) / 2 is inf + NaNj; tpu gave inf - 0.2j), and multiplies by 1 / n
    # (5 / 3 and 5 * (1 / 3) differ in float32)
    inf = float("inf")
    x = torch.complex(torch.tensor([[inf, 0.5, 1.0], [1.0, 2.0, 2.0], [2.0, 2.0, 1.0]], device=d),
                      torch.tensor([[-0.75, 0.0, 1.0], [inf, 0.0, 4.0], [1.0, 2.0, 0.0]], device=d))
    x64 = x.to(torch.complex128)
    loss = torch.nn.functional.soft_margin_loss(torch.complex(torch.tensor([[132.0, 72.0]], device=d),
                                                              torch.tensor([[-2.0, -0.5]], device=d)),
                                                torch.tensor([0, -2], device=d))
    return [x.mean(), x.mean(0), x.mean(1, keepdim=True), x64.mean(1), x[:, :0].mean(1), loss,
            torch.view_as_real(x[2:].mean(1))]


def _soft_margin_other_reduction(d: str) -> list[torch.Tensor]:
    # fuzz seed 7: a reduction other than 0-2 gave the unreduced loss; CPU's is 0-d with the first element
    x, t = torch.tensor([[0.5, 2.0], [1.0, 3.0]], device=d), torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=d)
    out = torch.empty(3, device=d)
    aten.soft_margin_loss.out(x, t, 4, out=out)
    return [aten.soft_margin_loss(x[0, :1], t[0, :1], 4), aten.soft_margin_loss(x, t, -1), out]


def _logspace_zero_base(d: str) -> list[torch.Tensor]:
    # fuzz seed 7, logspace base 0: C's pow(0, negative) is inf (-inf for -0.0 and an odd power); tpu gave NaN
    return [torch.logspace(-4.427, 3, 6, 0.0, device=d), torch.logspace(-3, 3, 7, -0.0, device=d),
            torch.logspace(-3, 3, 7, 0.0, dtype=torch.float16, device=d)]


def _lerp_large_weight(d: str) -> list[torch.Tensor]:
    # fuzz seed 7, lerp.Scalar: a weight >= 0.5 takes ATen's end - (end - self) * (1 - weight), -inf at self = inf
    # (tpu's self + weight * (end - self) gave NaN)
    inf = float("inf")
    s = torch.tensor([inf, -inf, 1.0, 2.0, inf, 5.0], device=d)
    e = torch.tensor([0.0625, 3.0, -inf, inf, inf, 7.0], device=d)
    w = torch.tensor([4.5, 0.25, -0.75, 0.5, 1.0, 2.0], device=d)
    return [torch.lerp(s.half(), e.half(), 4.5), torch.lerp(s, e, 0.25), torch.lerp(s, e, -0.75), torch.lerp(s, e, w),
            torch.lerp(s.bfloat16(), e.bfloat16(), w.bfloat16())]


CASES: dict[str, Callable[[str], list[torch.Tensor]]] = {
    "lerp_large_weight": _lerp_large_weight,
    "logspace_zero_base": _logspace_zero_base,
    "soft_margin_other_reduction": _soft_margin_other_reduction,
    "complex_mean": _complex_mean,
    "zeta_float32_tail": _zeta_tail,
    "var_mean_inf": _var_mean_inf,
}
COMPILED = ["lerp_large_weight", "logspace_zero_base", "zeta_float32_tail", "var_mean_inf", "complex_mean",
            "soft_margin_other_reduction"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_exactly_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(CASES[name], mode)


def _assert_same(got: list[torch.Tensor], want: list[torch.Tensor]) -> None:
    for g, c in zip(got, want, strict=True):
        assert g.dtype == c.dtype and g.shape == c.shape, (g.dtype, g.shape, c.dtype, c.shape)
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_exactly_cpu(name: str) -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: CASES[name]("tpu"), backend="tpu")()
    _assert_same(list(got), CASES[name]("cpu"))



def _aminmax_out(x: torch.Tensor, mn: torch.Tensor, mx: torch.Tensor) -> list[torch.Tensor]:
    aten.aminmax.out(x, min=mn, max=mx)
    return [mn, mx]


def _var_mean_out(x: torch.Tensor, o0: torch.Tensor, o1: torch.Tensor) -> list[torch.Tensor]:
    aten.var_mean.correction_out(x, [1], correction=1, keepdim=True, out0=o0, out1=o1)
    return [o0, o1]


def _log_sigmoid_forward_out(x: torch.Tensor, output: torch.Tensor, buffer: torch.Tensor) -> list[torch.Tensor]:
    aten.log_sigmoid_forward.output(x, output=output, buffer=buffer)
    return [output, buffer]


# fuzz seed 3: a multi-output out= call under torch.compile left its out tensors (graph inputs) unresized (Dynamo
# checks only a kwarg named `out`): CPU resizes them to the results' shapes. (Dynamo itself fails building its
# guards where the resize changes an input's rank, on any backend: those keep their rank here.)
RESIZED_OUT = {
    "aminmax_out": (_aminmax_out, lambda d: [torch.arange(30.0, device=d).reshape(5, 2, 3).sin(),
                                             torch.empty(0, device=d), torch.empty(5, 2, 3, device=d)]),
    # fuzz seed 7 (log_sigmoid_forward.output's outputs are named output / buffer)
    "log_sigmoid_forward_output": (_log_sigmoid_forward_out, lambda d: [
        torch.tensor([-100.0, -200.0, 0.0], device=d), torch.empty(1, 3, 4, device=d), torch.empty(2, 2, device=d)]),
    "var_mean_correction_out": (_var_mean_out, lambda d: [
        torch.arange(6.0, device=d).reshape(2, 3).to(torch.bfloat16),
        torch.empty(2, 3, device=d, dtype=torch.bfloat16), torch.empty(1, 5, device=d, dtype=torch.bfloat16)]),
}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("name", sorted(RESIZED_OUT))
def test_compiled_out_resized_as_cpu(name: str) -> None:
    fn, inputs = RESIZED_OUT[name]
    torch._dynamo.reset()
    ins = inputs("tpu")
    got = torch.compile(fn, backend="tpu")(*ins)
    want = fn(*inputs("cpu"))
    _assert_same(got, want)
    _assert_same(ins[1:], want)


def _bicubic_inf(d: str) -> list[torch.Tensor]:
    # fuzz seed 4: a border row reads one column twice; a merged weight gave inf * (w0 + w1) = -inf where CPU's
    # inf * w0 + inf * w1 is NaN
    inf = float("inf")
    x = torch.arange(40.0, device=d).reshape(4, 1, 5, 2).sin()
    x[0, 0, 0, 0], x[1, 0, 4, 1], x[2, 0, 2, 0], x[3, 0, 1, 1] = inf, -inf, inf, -inf
    f = torch.nn.functional.interpolate
    return [f(x, size=(2, 4), mode="bicubic"), f(x, size=(9, 3), mode="bicubic", align_corners=True),
            f(x.double(), size=(7, 5), mode="bicubic"), f(x.half(), size=(3, 3), mode="bicubic")]


def _run(fn: Callable[[str], list[torch.Tensor]], mode: str) -> list[torch.Tensor]:
    if mode == "compile":
        torch._dynamo.reset()
        return [t.cpu() for t in torch.compile(lambda: fn("tpu"), backend="tpu")()]
    with torch.tpu.eager_mode(mode):
        got = fn("tpu")
        torch.tpu.synchronize()
    return [t.cpu() for t in got]


def test_bicubic_infinities_as_cpu() -> None:
    """CPU's NaN / +-inf pattern exactly, its finite values within float rounding (CPU's own float32 kernel
    rounds differently in the last bit), and every mode and compile bit-identical to each other."""
    want = _bicubic_inf("cpu")
    runs = {mode: _run(_bicubic_inf, mode) for mode in [*MODES, "compile"]}
    for got in runs.values():
        for g, c in zip(got, want, strict=True):
            assert g.shape == c.shape and g.dtype == c.dtype
            assert torch.equal(g.isnan(), c.isnan()) and torch.equal(g.isposinf(), c.isposinf())
            assert torch.equal(g.isneginf(), c.isneginf())
            torch.testing.assert_close(g, c, equal_nan=True)
        for g, first in zip(got, runs["DEFER_NEVER"], strict=True):
            assert torch.equal(g.nan_to_num(), first.nan_to_num()) and torch.equal(g.isnan(), first.isnan())
