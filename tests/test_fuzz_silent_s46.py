"""Fuzz findings of brief fz46 (issue 17): silent results fixed.

- binary_cross_entropy (.default and .out) with a target, weight or out= of a shape other than self's: CPU's
  kernel iterates over squeezed operands into a squeezed view of its loss tensor, which keeps its own shape (an
  empty out= stays empty, so the mean is NaN: fuzz seed 3, tpu gave 1.33), then multiplies by the weight in place
  and reduces that loss (ops/decomposition_values.py). The values are compared within float32's tolerance: the
  elementwise loss is an ulp off CPU's for some inputs, with or without broadcasting (not this fix).
- multilabel_margin_loss_forward (.default, .output) with a target other than int64: refused as CPU (seed 47;
  ops/loss_checks.py check_multilabel_forward, called from the lowering in ops/losses.py).
- the Chebyshev recurrences (T, U, V, W and the shifted forms) with (x + x) * q - p rounded once, as CPU's FMA
  (seed 46; drivers/ir_lowerings_polynomials.py).
"""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_close_to_cpu, assert_exactly_cpu, assert_refused_as_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _probs(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed))


# (self, target, weight, out (None: .default), reduction)
BCE_SHAPES = [
    ((4,), (1,), None, (0,), 1),  # seed 3: CPU's mean of an empty loss, NaN
    ((4,), (1,), None, (0,), 0),
    ((4,), (4,), None, (0,), 2),
    ((4,), (1,), None, (2,), 1),
    ((4,), (1,), None, (), 1),
    ((4,), (4,), None, (2, 2), 0),
    ((4,), (4,), None, (5,), 0),
    ((4,), (1,), (4,), (4,), 1),
    ((4, 1), (4,), None, (0,), 1),
    ((4, 1), (4,), None, None, 1),
    ((4, 1), (1, 4), None, None, 0),
    ((1,), (4,), None, None, 0),
    ((1,), (4,), None, None, 1),
    ((4, 1), (4,), (4, 1), None, 2),
    ((4,), (1,), None, None, 6),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("xs", "ts", "ws", "outs", "reduction"), BCE_SHAPES)
def test_binary_cross_entropy_squeezed_shapes_as_cpu(mode: str, xs: tuple[int, ...], ts: tuple[int, ...],
                                                      ws: tuple[int, ...] | None, outs: tuple[int, ...] | None,
                                                      reduction: int) -> None:
    x, t = _probs(xs, 1), _probs(ts, 2)
    w = None if ws is None else _probs(ws, 3)

    def calls(d: str) -> list[torch.Tensor]:
        weight = None if w is None else w.to(d)
        if outs is None:
            return [aten.binary_cross_entropy.default(x.to(d), t.to(d), weight, reduction)]
        out = torch.full(outs, 7.0, device=d)
        result = aten.binary_cross_entropy.out(x.to(d), t.to(d), weight, reduction, out=out)
        return [result, out]

    assert_close_to_cpu(calls, mode)  # shapes and NaNs exactly; tpu's log1p may differ from CPU's by an ulp


REFUSED = [
    ((4,), (4,), (2, 4), None, 1),  # the in-place mul_ cannot grow the loss
    ((4,), (1,), (4,), (0,), 1),  # an empty out= times a weight of 4
    ((5, 1, 1), (4, 2), None, (0,), 1),  # squeezed shapes that do not broadcast
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("xs", "ts", "ws", "outs", "reduction"), REFUSED)
def test_binary_cross_entropy_squeezed_shapes_refused(mode: str, xs: tuple[int, ...], ts: tuple[int, ...],
                                                      ws: tuple[int, ...] | None, outs: tuple[int, ...] | None,
                                                      reduction: int) -> None:
    x, t = _probs(xs, 1), _probs(ts, 2)
    w = None if ws is None else _probs(ws, 3)

    def case(d: str) -> torch.Tensor:
        weight = None if w is None else w.to(d)
        if outs is None:
            return aten.binary_cross_entropy.default(x.to(d), t.to(d), weight, reduction)
        return aten.binary_cross_entropy.out(x.to(d), t.to(d), weight, reduction, out=torch.empty(outs, device=d))

    assert_refused_as_cpu(case, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("out", [False, True])
def test_multilabel_margin_forward_non_long_target_refused(mode: str, dtype: torch.dtype, out: bool) -> None:
    """Fuzz seed 47: a float32 target (CPU: "expected scalar type Long but found Float"); tpu read it as int64."""
    x = _probs((4,), 1)

    def case(d: str) -> object:
        target = torch.tensor([0, 1, 0, 0], dtype=dtype, device=d)
        if not out:
            return aten.multilabel_margin_loss_forward.default(x.to(d), target, 1)
        return aten.multilabel_margin_loss_forward.output(x.to(d), target, 1, output=torch.empty(0, device=d),
                                                          is_target=torch.empty(0, device=d))

    assert_refused_as_cpu(case, mode)


CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CHEBYSHEV)
def test_chebyshev_recurrence_fused_as_cpu(mode: str, name: str) -> None:
    """Fuzz seed 46 (chebyshev_polynomial_t.out, T_10(-1.0224): tpu 4.1944466, CPU 4.1944442): CPU's compiled
    recurrence computes (x + x) * q - p as one FMA; bit for bit outside the trigonometric form's range."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(400, generator=g) * 8 + 1.0  # [1, 9): the recurrence (|x| >= 1, shifted 2x - 1 >= 1)
    x = torch.where(torch.arange(400) % 2 == 0, x, -x + (1.0 if name.startswith("shifted") else 0.0))
    n = torch.randint(0, 12, (400,), generator=g).float()
    fn = getattr(torch.special, name)
    assert_exactly_cpu(lambda d: [fn(x.to(d), n.to(d))], mode)
