"""copy_ into an expanded view (a destination whose elements share memory) raises ATen's internal-overlap error
on "tpu" in every eager mode, also after the same copy into a dense tensor filled the C++ launch cache (the cached
copy wrote the view silently, last value winning)."""

from __future__ import annotations

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


@pytest.mark.parametrize("mode", MODES)
def test_copy_into_an_expanded_view_is_refused_after_a_cached_copy(tpu, launch_cache_live, mode):
    src = torch.tensor([1.0, 2.0, 3.0], device=tpu)
    with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
        dense = torch.zeros(3, device=tpu)
        dense.copy_(src)
        dense.copy_(src)  # served by the C++ cache from here on
        for _ in range(2):
            base = torch.zeros(1, device=tpu)
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                base.expand(3).copy_(src)
            assert base.cpu().tolist() == [0.0]
        assert dense.cpu().tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(1).expand(3).copy_(src.cpu())
