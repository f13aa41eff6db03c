"""Chebyshev T/U/V/W and their shifted forms follow ATen's branch structure (ATen/native/Math.h): each family's
degree above which the trigonometric form replaces the recurrence inside (-1, 1) (T 6, U/V/W 8; shifted T/U/V 6,
shifted W 4), and the fallbacks where the trigonometric form's half angle rounds away (V: sin(acos(x)/2) == 1,
W: cos(acos(x)/2) == 1), which return integers (±(2n+1), 2n+1, ±1). Compared bit for bit with CPU in every eager
mode and under torch.compile (fuzzer seeds 3-5: shifted_chebyshev_polynomial_w.out gave NaN where CPU gives -1)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

S = torch.special
ONE_LESS = 0.99999994  # 1 - 2^-24: acos/2 is so small that cos rounds to 1 in float32
HALF_ULP = 2.0 ** -25  # the shifted forms' 2x - 1 is -(1 - 2^-24)

# (function, x values, degrees): the fallbacks, then the shifted forms' lower cutoffs at points where the
# trigonometric value and the recurrence's differ in the last bits
CASES = {
    "v_fallback": (S.chebyshev_polynomial_v, [-ONE_LESS], [9, 10, 11, 12, 2.0 ** 20]),
    "w_fallback": (S.chebyshev_polynomial_w, [ONE_LESS], [9, 10, 11, 12, 2.0 ** 20]),
    "shifted_v_fallback": (S.shifted_chebyshev_polynomial_v, [HALF_ULP], [7, 8, 9, 10]),
    "shifted_w_fallback": (S.shifted_chebyshev_polynomial_w, [(1.0 + ONE_LESS) / 2], [5, 6, 7, 8, 9]),
    "shifted_u_cutoff": (S.shifted_chebyshev_polynomial_u, [0.3, 0.6], [7, 8]),
    "shifted_v_cutoff": (S.shifted_chebyshev_polynomial_v, [0.3, 0.6, 0.2], [7]),
    "shifted_w_cutoff": (S.shifted_chebyshev_polynomial_w, [0.3, 0.2], [6]),
}


def _call(name: str, device: str) -> torch.Tensor:
    fn, xs, ns = CASES[name]
    x = torch.tensor(xs, dtype=torch.float32, device=device).repeat_interleave(len(ns))
    n = torch.tensor(ns, dtype=torch.float32, device=device).repeat(len(xs))
    return fn(x, n)


def _same(tpu: torch.Tensor, cpu: torch.Tensor) -> None:
    assert tpu.dtype == cpu.dtype
    assert torch.equal(tpu.cpu().view(torch.int32), cpu.view(torch.int32)), (tpu.cpu(), cpu)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu_bitwise(name: str, mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        out = _call(name, "tpu")
        torch.tpu.synchronize()
    _same(out, _call(name, "cpu"))


@pytest.mark.parametrize("name", ["v_fallback", "shifted_w_fallback", "shifted_u_cutoff"])
def test_compiled_matches_cpu_bitwise(name: str) -> None:
    torch._dynamo.reset()
    _same(torch.compile(lambda: _call(name, "tpu"), backend="tpu")(), _call(name, "cpu"))


def test_shifted_w_fallback_is_parity() -> None:
    # ATen's shifted W returns (-1)^n there (no 2n + 1 for x > 0, unlike W itself)
    out = _call("shifted_w_fallback", "tpu").cpu()
    assert out.tolist() == [-1.0, 1.0, -1.0, 1.0, -1.0]
