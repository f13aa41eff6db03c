"""Shared fixtures: every test starts with zeroed stats and fallback counts."""

from __future__ import annotations

import pytest


@pytest.fixture
def tpu():
    import torch

    import torchtpu

    torchtpu.reset_stats()
    torchtpu.reset_fallback_counts()
    yield torch.device("tpu")
    torch.tpu.synchronize()
