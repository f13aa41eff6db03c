"""Hurwitz zeta at its poles and non-finite operands, as ATen's Cephes zeta decides them (Math.h): x == 1 is inf
(whatever q), x < 1 NaN, an integer q <= 0 inf (q = -inf and a NaN x included), and the summation's early exits
make zeta(inf, q) 1 at q = 1 and inf for 0 < q < 1 or a fractional q < 0 (fuzzer seeds 4-5: the tpu gave NaN).
Compared with CPU (non-finite values exactly) through the tensor and both scalar overloads, in every eager mode
and under torch.compile, and bit-identical across the modes."""

from __future__ import annotations

import itertools

import pytest
import torch
from refusal_cases import MODES

INF, NAN = float("inf"), float("nan")
VALUES = [INF, -INF, NAN, 1.0, 0.5, 2.0, 3.0, -2.0, -0.5, -2.5, 0.0, 1.5, 10.0, 0.778, 1e-3, -1e-3]
PAIRS = list(itertools.product(VALUES, VALUES))


def _grid(dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    xs, qs = zip(*PAIRS)
    return torch.tensor(xs, dtype=dtype, device=device), torch.tensor(qs, dtype=dtype, device=device)


def _calls(dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    x, q = _grid(dtype, device)
    out = torch.empty(len(VALUES), dtype=dtype, device=device)
    return [torch.special.zeta(x, q),
            torch.ops.aten.special_zeta.self_scalar(INF, q[: len(VALUES)]),
            torch.ops.aten.special_zeta.other_scalar(x[:: len(VALUES)], 0.778),
            torch.ops.aten.special_zeta.other_scalar_out(x[:: len(VALUES)], -INF, out=out)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_cpu_in_every_mode(dtype: torch.dtype) -> None:
    cpu = _calls(dtype, "cpu")
    runs = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            got = [t.cpu() for t in _calls(dtype, "tpu")]
        for g, c in zip(got, cpu):
            torch.testing.assert_close(g, c, rtol=1e-6, atol=0, equal_nan=True)
            assert torch.equal(g.isinf(), c.isinf()) and torch.equal(g.isnan(), c.isnan())
        runs.append(got)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_compiled_matches_cpu() -> None:
    torch._dynamo.reset()
    x, q = _grid(torch.float64, "tpu")
    got = torch.compile(lambda a, b: torch.special.zeta(a, b) * 1.0, backend="tpu")(x, q).cpu()
    with torch.tpu.eager_mode("DEFER_NEVER"):
        eager = torch.special.zeta(x, q).cpu()
    cpu = torch.special.zeta(*_grid(torch.float64, "cpu"))
    assert torch.equal(got.isinf(), cpu.isinf()) and torch.equal(got.isnan(), cpu.isnan())
    assert torch.equal(got.view(torch.uint8), eager.view(torch.uint8))


def test_known_values() -> None:
    x = torch.tensor([INF, INF, INF, 1.0, NAN], dtype=torch.float64, device="tpu")
    q = torch.tensor([1.0, 0.5, -0.5, NAN, -2.0], dtype=torch.float64, device="tpu")
    assert torch.special.zeta(x, q).cpu().tolist() == [1.0, INF, INF, INF, INF]
