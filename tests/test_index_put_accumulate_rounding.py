"""index_put_(accumulate=True) of float16, bfloat16 and complex32 with duplicate indices: CPU's serial kernel adds
`*dst += *src` in the dtype, rounding every addition (complex32: each float16 part), where one float32 sum rounded
once gave other bits (1 + 2**-11 + 2**-11: CPU 1.0, tpu 1.0009765625). Compared bit for bit in every mode and
compiled, on random data with infinities, NaN and signed zeros. index_add of a 1-D or 0-d self likewise (CPU's
`*self_ip += *source_ip * alpha` loop) and of a 2-D self with an alpha (its slice add_, the product rounded first);
a 2-D self's adds with alpha 1, summed in float32 by CPU, stay rounded once."""

from __future__ import annotations

import warnings

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
DTYPES = [torch.float16, torch.bfloat16, torch.complex32]


def _data(seed: int, dtype: torch.dtype, *shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.complex32:
        parts = torch.randn(*shape, 2, generator=g) * 4
        parts.view(-1)[:4] = torch.tensor([float("inf"), -0.0, float("nan"), 2.0**-11])
        return torch.view_as_complex(parts).to(dtype)
    x = torch.randn(*shape, generator=g) * 4
    x.view(-1)[:4] = torch.tensor([float("inf"), -0.0, float("nan"), 2.0**-11])
    return x.to(dtype)


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = torch.view_as_real(t) if t.is_complex() else t
    return torch.where(t.isnan(), torch.full_like(t.view(torch.int16), -1), t.view(torch.int16))


INDEX = torch.tensor([1, 3, 1, 1, 0, 3, 1, -4, 2, 1])


def _cases(dtype: torch.dtype) -> dict[str, tuple]:
    x, v = _data(0, dtype, 5, 3), _data(1, dtype, 10, 3)
    small = torch.full((10, 3), 2.0**-11).to(dtype)
    return {"rows": (x, (INDEX,), v), "tiny_addends": (torch.ones(5, 3).to(dtype), (INDEX,), small),
            "two_dims": (x, (INDEX, INDEX.abs() % 3), v[:, 0]),
            "columns": (x, (None, INDEX.abs() % 3), _data(2, dtype, 5, 10))}


def _put(x: torch.Tensor, index: tuple, v: torch.Tensor) -> torch.Tensor:
    """aten.index_put_(x.clone(), index, v, accumulate=True), a None entry standing for a whole dim."""
    return torch.ops.aten.index_put_(x.clone(), [None if i is None else i.to(x.device) for i in index], v, True)


@pytest.mark.parametrize("case", ["rows", "tiny_addends", "two_dims", "columns"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_as_cpu(dtype: torch.dtype, case: str) -> None:
    x, index, v = _cases(dtype)[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _put(x, index, v)
        for mode in MODES:
            with torch.tpu.eager_mode(mode):
                got = _put(x.to("tpu"), index, v.to("tpu")).cpu()
            assert got.dtype == want.dtype and torch.equal(_bits(got), _bits(want)), (mode, got, want)
        torch._dynamo.reset()
        got = torch.compile(lambda a, b: _put(a, index, b), backend="tpu")(x.to("tpu"), v.to("tpu")).cpu()
        assert torch.equal(_bits(got), _bits(want)), ("compile", got, want)


@pytest.mark.parametrize("alpha", [1, 0.3])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_index_add_1d_as_cpu(dtype: torch.dtype, alpha: float) -> None:
    x, v = _data(3, dtype, 6), _data(4, dtype, 10)
    v[5:] = 2.0**-11
    for self, index, src in ((x, INDEX.abs() % 6, v), (x[0].clone(), torch.zeros(1, dtype=torch.long), v[0])):
        want = self.index_add(0, index, src, alpha=alpha)
        for mode in MODES:
            with torch.tpu.eager_mode(mode):
                got = self.to("tpu").index_add(0, index.to("tpu"), src.to("tpu"), alpha=alpha).cpu()
            assert torch.equal(_bits(got.reshape(-1)), _bits(want.reshape(-1))), (mode, got, want)


@pytest.mark.parametrize("alpha", [1, 0.3, -2.7])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_index_add_2d_as_cpu(dtype: torch.dtype, dim: int, alpha: float) -> None:
    x = _data(5, dtype, 4, 6)
    index = INDEX.abs() % x.shape[dim]
    src = _data(6, dtype, *(10 if d == dim else s for d, s in enumerate(x.shape)))
    want = x.index_add(dim, index, src, alpha=alpha)
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            got = x.to("tpu").index_add(dim, index.to("tpu"), src.to("tpu"), alpha=alpha).cpu()
        assert torch.equal(_bits(got), _bits(want)), (mode, got, want)

