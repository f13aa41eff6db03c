"""Every mix of up to three index entries among None, 0-d / 1-d / 2-d / 3-d boolean masks, a uint8 mask and
integer indices, for aten.index, index_put_ and index_put_(accumulate=True) of a 3-D tensor, compared with CPU:
the same values and shape, or the same error class (and CPU's first words, the internal assert's by its name)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import pytest
import torch

A, P = torch.ops.aten.index.Tensor, torch.ops.aten.index_put_
_G = torch.Generator().manual_seed(0)
X = torch.randn(3, 4, 5, generator=_G)
ENTRIES: dict[str, torch.Tensor | None] = {
    "N": None, "T": torch.tensor(True), "F": torch.tensor(False), "m3": torch.tensor([True, False, True]),
    "m4": torch.tensor([True, True, False, True]), "m34": torch.rand(3, 4, generator=_G) > 0.4,
    "m45": torch.rand(4, 5, generator=_G) > 0.4, "m345": torch.rand(3, 4, 5, generator=_G) > 0.5,
    "i2": torch.tensor([0, 2]), "i1": torch.tensor([1]), "u4": torch.tensor([1, 0, 1, 1], dtype=torch.uint8),
}
OPS: dict[str, Callable[[torch.Tensor, list], torch.Tensor]] = {
    "index": lambda x, idx: A(x, idx),
    "put": lambda x, idx: P(x.clone(), idx, torch.tensor(1.5, device=x.device), False),
    "put_accumulate": lambda x, idx: P(x.clone(), idx, torch.tensor(1.5, device=x.device), True),
}


def _combos() -> list[tuple[str, ...]]:
    out = []
    for n in (1, 2, 3):
        for combo in itertools.product(ENTRIES, repeat=n):
            if any(c != "N" for c in combo) and (n < 3 or sum(c != "N" for c in combo) <= 2):
                out.append(combo)
    return out


def _run(op: Callable[[torch.Tensor, list], torch.Tensor], combo: tuple[str, ...], device: str) -> object:
    idx = [None if ENTRIES[c] is None else ENTRIES[c].to(device) for c in combo]
    try:
        return op(X.to(device), idx).cpu()
    except (RuntimeError, IndexError) as exc:
        return exc


def _same(got: object, want: object) -> bool:
    if isinstance(want, Exception):
        words = "ntensor >= 3" if "ntensor >= 3" in str(want) else str(want).split("\n")[0]
        return type(got) is type(want) and words in str(got)
    return isinstance(got, torch.Tensor) and got.shape == want.shape and torch.equal(got, want)


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "DEFER_AND_FUSE"])
@pytest.mark.parametrize("op", list(OPS))
def test_every_mix_as_cpu(op: str, mode: str) -> None:
    wrong = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # uint8 indices' deprecation warning, both sides
        for combo in _combos():
            want = _run(OPS[op], combo, "cpu")
            with torch.tpu.eager_mode(mode):
                got = _run(OPS[op], combo, "tpu")
            if not _same(got, want):
                wrong.append((combo, want if isinstance(want, Exception) else want.shape, got))
    assert not wrong, wrong[:5]
