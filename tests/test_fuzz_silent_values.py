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


CASES: dict[str, Callable[[str], list[torch.Tensor]]] = {
    "zeta_float32_tail": _zeta_tail,
}
COMPILED = ["zeta_float32_tail"]


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
