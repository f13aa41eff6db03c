"""Shared fixtures: every test starts with zeroed stats and fallback counts.

`@pytest.mark.sim_only("why")` marks a test that asserts a simulator-only fact (simulated cycles and costs, the
timeline, HBM accounting figures, the sim's bf16 MXU numerics, bit-exact per-op evaluation): it is skipped, with
its reason, when the suite runs on another driver (TORCHTPU_DRIVER=pjrt)."""

from __future__ import annotations

import gc

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sim_only(reason): asserts a simulator-only fact; skipped on other drivers")


@pytest.fixture(autouse=True, scope="session")
def _strict_static_reads():
    """A lowering that reads a float it did not declare static raises in tests (users get a by-value retrace)."""
    from torchtpu.execution import eager

    eager.STRICT = True
    yield
    eager.STRICT = False


def _driver_name() -> str:
    from torchtpu.runtime import driver_name_from_env

    return driver_name_from_env()


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("sim_only")
    if marker is not None and _driver_name() != "sim":
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        pytest.skip(f"sim only (driver is {_driver_name()}): {reason}")


@pytest.fixture
def launch_cache_live():
    """A test that counts the C++ launch cache's hits runs without other tests' poisoned storages: while any is
    registered the cache is off, as it must be (poison.py), and an earlier test's failed region may still be
    referenced (its traceback). They are set aside for the test, which cannot reach them, and restored after it."""
    import gc

    from torchtpu.execution import poison

    gc.collect()
    poison.sweep()
    others = dict(poison._entries)
    poison.discard(list(others))
    try:
        yield
    finally:
        poison._entries.update(others)
        poison._set_active()


@pytest.fixture
def one_op_regions_kept(monkeypatch):
    """DEFER_AND_FUSE records every op, also where each region holds one (no op launches at once: the one-op
    streak, execution/one_op_streak.py, has its own tests)."""
    from torchtpu.execution import one_op_streak

    monkeypatch.setattr(one_op_streak, "STREAK", 1 << 30)
    one_op_streak.reset()


@pytest.fixture
def tpu():
    import torch

    import torchtpu

    torchtpu.reset_stats()
    torchtpu.reset_fallback_counts()
    yield torch.device("tpu")
    torch.tpu.synchronize()


@pytest.fixture
def steady_memory():
    """Collect cyclic garbage of earlier tests, then keep the GC off for the test: a GC pass that frees an
    earlier test's device tensors in the middle of a memory_allocated() comparison would change the count."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()
