"""aten.index whose masks' nonzero() columns and the Nones after them are more entries than self has dims
(`[mask2d, None]` of a 2-D tensor): CPU's AdvancedIndex broadcasts self, restrided, with the indices viewed with a
1 per None, both aligned from the right, giving e.g. a [k, k] result; non-adjacent indices drop the entries past
self's dims. The tpu device gives the same shape and values (or the same error) in every mode and compiled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
A = torch.ops.aten.index.Tensor
X2 = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
X3 = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1))
X2[1, 2], X3[0, 1, 2] = float("nan"), float("-inf")
Index = Callable[[Callable[[torch.Tensor], torch.Tensor]], list]
CASES: dict[str, tuple[torch.Tensor, Index]] = {
    "mask2d_none": (X2, lambda d: [d(X2 > 0), None]),
    "mask1d_none": (X2, lambda d: [d(X2[:, 0] > 0), None]),
    "mask3d_none": (X3, lambda d: [d(X3 > 0.5), None]),
    "mask_rows_none": (X3, lambda d: [d(X3[..., 0] > 0), None]),
    "mask_rows_none_none": (X3, lambda d: [d(X3[..., 0] > 0), None, None]),
    "none_mask_none": (X3, lambda d: [None, d(X3[0] > 0), None]),  # CPU: the broadcast's RuntimeError
    "mask2d_index": (X2, lambda d: [d(X2 > 0), d(torch.tensor([0]))]),  # CPU: IndexError, dim out of range
    "index_mask": (X3, lambda d: [d(torch.tensor([0, 1])), d(X3[0] > 0)]),
    "mask_none_index": (X3, lambda d: [d(X3[..., 0] > 0), None, d(torch.tensor([2]))]),  # non-adjacent: dropped
    "mask_none_bad_index": (X3, lambda d: [d(X3[..., 0] > 0), None, d(torch.tensor([1, 0, 3]))]),  # not broadcast
    "empty_mask_none": (X3, lambda d: [d(X3[..., 0] > 100), None]),
    "full_mask_none": (X2, lambda d: [d(X2 == X2), None]),
}


def _run(x: torch.Tensor, idx: Index, device: str) -> object:
    try:
        return A(x.to(device), idx(lambda t: t.to(device))).cpu()
    except (RuntimeError, IndexError) as exc:
        return exc


def _same(got: object, want: object) -> None:
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(want).split("\n")[0] in str(got), (got, want)
    else:
        assert isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype, (got, want)
        assert torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0)) and torch.equal(got.isnan(), want.isnan())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_as_cpu(name: str, mode: str) -> None:
    x, idx = CASES[name]
    want = _run(x, idx, "cpu")
    with torch.tpu.eager_mode(mode):
        _same(_run(x, idx, "tpu"), want)


@pytest.mark.parametrize("name", ["mask2d_none", "mask_rows_none", "mask_none_index"])
def test_as_cpu_compiled(name: str) -> None:
    x, idx = CASES[name]
    want = _run(x, idx, "cpu")
    torch._dynamo.reset()
    fn = torch.compile(lambda t: A(t, idx(lambda i: i.to(t.device))), backend="tpu")
    _same(fn(x.to("tpu")).cpu(), want)


def test_the_broadcast_result_is_ks_rows() -> None:
    """x[[mask2d, None]] of a 2-D x: row i of the [k, k] result is the i-th masked element, repeated."""
    x, idx = CASES["mask2d_none"]
    got = _run(x, idx, "tpu")
    picked = x[X2 > 0]
    assert isinstance(got, torch.Tensor) and torch.equal(got, picked[:, None].expand(len(picked), len(picked)))
