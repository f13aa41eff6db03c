"""Memory observability: history with Python stacks in the format PyTorch's memory visualiser reads,
summaries, and an OOM message naming the largest live tensors and where they were allocated."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch.cuda import _memory_viz

pytestmark = pytest.mark.sim_only


@pytest.fixture
def history():
    torch.tpu.memory._record_memory_history(max_entries=10_000)
    yield
    torch.tpu.memory._record_memory_history(enabled=None)


def _make_activation():
    return torch.zeros(512, 1024, device="tpu")  # the allocation site the snapshot must name


def test_snapshot_lists_live_tensors_with_stacks(history, tmp_path):
    weight = torch.randn(256, 256, device="tpu")
    act = _make_activation()
    tmp = weight @ weight  # allocated and freed: in the trace, not in the segments
    del tmp
    snap = torch.tpu.memory._snapshot()
    by_addr = {seg["address"]: seg for seg in snap["segments"]}
    seg = by_addr[act.untyped_storage().data_ptr()]
    assert seg["total_size"] == act.nbytes and seg["blocks"][0]["state"] == "active_allocated"
    top = seg["blocks"][0]["frames"][0]
    assert top["filename"] == __file__ and top["name"] == "_make_activation"
    assert top["line"] == _make_activation.__code__.co_firstlineno + 1
    weight_frames = by_addr[weight.untyped_storage().data_ptr()]["frames"]
    assert weight_frames[0]["name"] == "test_snapshot_lists_live_tensors_with_stacks"
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert "alloc" in actions and "free_completed" in actions
    freed = [e for e in snap["device_traces"][0] if e["action"] == "free_completed"]
    assert any(e["size"] == 256 * 256 * 4 for e in freed)
    # PyTorch's own visualiser code reads it
    assert "segments: " in _memory_viz.segsum(snap)
    html = _memory_viz.trace_plot(snap)
    assert "<html" in html.lower()
    path = tmp_path / "snap.pickle"
    torch.tpu.memory._dump_snapshot(str(path))
    loaded = pickle.loads(path.read_bytes())
    assert {s["address"] for s in loaded["segments"]} >= {act.untyped_storage().data_ptr()}
    assert torch.tpu.memory_snapshot() == torch.tpu.memory._snapshot()["segments"]


def test_history_off_records_nothing():
    torch.tpu.memory._record_memory_history(enabled=None)
    x = torch.ones(1000, device="tpu")
    snap = torch.tpu.memory._snapshot()
    assert snap["device_traces"][0] == []
    seg = next(s for s in snap["segments"] if s["address"] == x.untyped_storage().data_ptr())
    assert seg["frames"] == []  # live, found, but its stack was not recorded
    with pytest.raises(ValueError, match="valid: None, 'state', 'all'"):
        torch.tpu.memory._record_memory_history(enabled="sometimes")


def test_memory_summary(history):
    x = _make_activation()
    text = torch.tpu.memory_summary()
    assert "allocated memory" in text and "largest live tensors" in text
    assert "float32[512, 1024]" in text and "_make_activation" in text
    del x


def test_oom_names_largest_tensors_and_sites(history):
    keep = _make_activation()
    limit = torch.tpu.get_device_properties(0).total_memory
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(limit, dtype=torch.uint8, device="tpu")
    message = str(info.value)
    assert "Largest live tensors" in message
    assert f"float32[512, 1024] at {__file__}:{_make_activation.__code__.co_firstlineno + 1}" in message
    assert keep.sum().item() == 0  # tensors intact after the OOM


def test_ops_from_the_cpp_launch_cache_keep_their_stack(history):
    from torchtpu.execution import fast_launch

    a = torch.randn(32, 32, device="tpu")
    a + a  # the first call stores the launch in the C++ cache
    hits = fast_launch.counters()["hits"]
    c = a + a; line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    if fast_launch.counters()["hits"] == hits:
        pytest.skip("the C++ launch cache is off (TORCHTPU_FAST_LAUNCH=0)")
    seg = next(s for s in torch.tpu.memory._snapshot()["segments"] if s["address"] == c.untyped_storage().data_ptr())
    assert (seg["frames"][0]["filename"], seg["frames"][0]["line"]) == (__file__, line)
