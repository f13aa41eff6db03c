"""Memory observability for "tpu": owns `torch.tpu.memory_summary()`, `memory_snapshot()` and the
`torch.tpu.memory._record_memory_history()` / `_snapshot()` / `_dump_snapshot()` trio, in the pickle format
PyTorch's memory visualiser (pytorch.org/memory_viz, `torch.cuda._memory_viz`) reads, and the OOM note that
names the largest live tensors and where they were allocated.

While history is on, the C++ allocator (csrc/tpu_shim.cpp) calls `_on_alloc` for every allocation and free,
which notes the Python stack; the frames are the caller's even for ops served by the C++ launch cache (the
callback runs under the Python frame that called the op). Off, nothing is called.
The simulator's allocator gives each tensor storage its own block, so a snapshot has one segment per live
allocation.
"""

from __future__ import annotations

import gc
import pickle
import sys
import threading
import time
import traceback
import types
from typing import Any

import torch

from torchtpu._native import native

__all__ = ["live_tensors", "memory_snapshot", "memory_summary", "oom_note", "record_memory_history",
           "snapshot", "dump_snapshot"]

# Re-entrant: a garbage collection inside a locked section can free a tpu tensor, whose free calls back here.
_lock = threading.RLock()
_state: dict[str, Any] = {"enabled": None, "stacks": "python", "max_entries": sys.maxsize}
_live: dict[int, dict[str, Any]] = {}  # address -> {size, device, frames, time_us}
_trace: list[list[dict[str, Any]]] = []  # per device: alloc / free_completed entries


def _frames(skip: int = 2) -> list[dict[str, Any]]:
    try:
        frame = sys._getframe(skip)
    except ValueError:  # called with no Python frame below (autograd's device thread)
        return []
    out = []
    for fs in reversed(traceback.extract_stack(frame)):
        if "torchtpu" + "/" in fs.filename and "/profiler/" in fs.filename:
            continue
        out.append({"filename": fs.filename, "line": fs.lineno or 0, "name": fs.name})
    return out


def _on_alloc(address: int, size: int, device: int, is_alloc: int) -> None:
    now = int(time.time() * 1e6)
    frames = _frames() if is_alloc else []
    with _lock:
        if is_alloc:
            _live[address] = {"size": size, "device": device, "frames": frames, "time_us": now}
            action = "alloc"
        else:
            entry = _live.pop(address, None)
            frames = entry["frames"] if entry else frames
            action = "free_completed"
        if _state["enabled"] == "all":
            while len(_trace) <= device:
                _trace.append([])
            trace = _trace[device]
            trace.append({"action": action, "addr": address, "size": size, "stream": 0, "frames": frames,
                          "time_us": now})
            if len(trace) > _state["max_entries"]:
                del trace[: len(trace) - _state["max_entries"]]


def record_memory_history(enabled: str | None = "all", context: str | None = "all", stacks: str = "all",
                          max_entries: int = sys.maxsize, device: Any = None, **_: Any) -> None:
    """As `torch.cuda.memory._record_memory_history`: enabled None (off), "state" (live blocks with their
    stacks) or "all" (also the alloc/free trace). Python stacks only (`stacks` "all" and "python" alike)."""
    if enabled not in (None, "state", "all"):
        raise ValueError(f"_record_memory_history(enabled={enabled!r}); valid: None, 'state', 'all'")
    with _lock:
        _state.update(enabled=enabled, stacks=stacks, max_entries=max_entries)
        if enabled is None:
            _live.clear()
            _trace.clear()
    _hooks()(_on_alloc, oom_note, enabled is not None)


def _hooks() -> Any:
    hooks = getattr(native(), "set_memory_hooks", None)
    if hooks is None:
        raise RuntimeError("torchtpu's C++ shim was built from older sources without memory hooks; delete its "
                           "build cache ($TORCHTPU_CACHE_DIR or ~/.cache/torchtpu) so that it rebuilds")
    return hooks


def _block(address: int, entry: dict[str, Any]) -> dict[str, Any]:
    return {"address": address, "size": entry["size"], "requested_size": entry["size"], "state": "active_allocated",
            "frames": entry["frames"]}


def snapshot(device: Any = None) -> dict[str, Any]:
    """The allocator state as `torch.cuda.memory._snapshot()` gives it: {"segments", "device_traces"}; one segment
    per live allocation (each with one active block and its allocation stack). Live allocations made before
    history was on appear without frames (from the live tensors)."""
    index = None if device is None else torch.device("tpu", device).index if isinstance(device, int) else \
        torch.device(device).index
    with _lock:
        live = dict(_live)
        traces = [list(t) for t in _trace]
    for address, entry in _untracked_live().items():
        live.setdefault(address, entry)
    segments = []
    for address, entry in sorted(live.items()):
        if index is not None and entry["device"] != index:
            continue
        segments.append({"device": entry["device"], "address": address, "total_size": entry["size"],
                         "allocated_size": entry["size"], "active_size": entry["size"],
                         "requested_size": entry["size"], "stream": 0, "segment_type": "large",
                         "segment_pool_id": (0, 0), "is_expandable": False, "frames": entry["frames"],
                         "blocks": [_block(address, entry)]})
    count = torch.tpu.device_count()
    while len(traces) < count:
        traces.append([])
    return {"segments": segments, "device_traces": traces, "allocator_settings": {}}


def dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles `snapshot()` to `filename` (drag it onto pytorch.org/memory_viz)."""
    with open(filename, "wb") as f:
        pickle.dump(snapshot(), f)


def memory_snapshot() -> list[dict[str, Any]]:
    """The segments of `snapshot()`, as `torch.cuda.memory_snapshot()`."""
    return snapshot()["segments"]


def _untracked_live() -> dict[int, dict[str, Any]]:
    """Live tpu storages found by the garbage collector: address -> entry (no stack)."""
    out: dict[int, dict[str, Any]] = {}
    for obj in gc.get_objects():
        try:
            if not issubclass(type(obj), torch.Tensor) or obj.device.type != "tpu" or obj.is_meta:
                continue
            storage = obj.untyped_storage()
            address = storage.data_ptr()
        except (RuntimeError, ReferenceError):  # a tensor without storage (wrapper subclasses, fakes)
            continue
        if address and address not in out:
            out[address] = {"size": storage.nbytes(), "device": obj.device.index or 0, "frames": [],
                            "time_us": 0, "shape": tuple(obj.shape), "dtype": str(obj.dtype).replace("torch.", "")}
    return out


def live_tensors(device: int | None = None) -> list[dict[str, Any]]:
    """Live allocations, largest first: size, device, shape and dtype (from a tensor using it), and the
    allocation site (innermost user frame) when history was on at allocation."""
    found = _untracked_live()
    with _lock:
        recorded = dict(_live)
    rows = []
    for address, entry in found.items():
        if device is not None and entry["device"] != device:
            continue
        frames = recorded.get(address, {}).get("frames", [])
        rows.append({"address": address, "size": entry["size"], "device": entry["device"], "shape": entry["shape"],
                     "dtype": entry["dtype"], "site": _site(frames), "frames": frames})
    rows.sort(key=lambda r: -r["size"])
    return rows


def _site(frames: list[dict[str, Any]]) -> str:
    from torchtpu.profiler.events import _TORCH_MARKERS

    for f in frames:  # innermost first
        if not any(m in f["filename"] for m in _TORCH_MARKERS):
            return f"{f['filename']}:{f['line']} ({f['name']})"
    return ""


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def oom_note(device: int, nbytes: int, top: int = 5) -> str:
    """What the OOM error adds: the largest live tensors on `device` and their allocation sites."""
    try:
        rows = live_tensors(device)[:top]
    except Exception as exc:  # noqa: BLE001 - the OOM itself must still be raised
        return f" (could not list live tensors: {exc})"
    if not rows:
        return ""
    parts = []
    for r in rows:
        site = r["site"] or "site unknown: torch.tpu.memory._record_memory_history() records it"
        parts.append(f"{_mib(r['size'])} {r['dtype']}{list(r['shape'])} at {site}")
    return " Largest live tensors: " + "; ".join(parts) + "."


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A readable summary of the device's memory, as `torch.cuda.memory_summary()`: current and peak bytes,
    allocation counts, OOMs and (unless abbreviated) the largest live tensors with their sites."""
    index = torch.tpu.current_device() if device is None else torch.device("tpu", device).index \
        if isinstance(device, int) else torch.device(device).index or 0
    allocated, peak, limit, allocs, frees, ooms, _ = native().memory_counters(index)
    name = torch.tpu.get_device_name(index)
    lines = [
        "|" + "=" * 75 + "|",
        f"|{'torchtpu memory summary, device tpu:' + str(index) + ' (' + name + ')':^75}|",
        "|" + "-" * 75 + "|",
        f"| {'allocated memory':<30}{_mib(allocated):>20}{'peak ' + _mib(peak):>24} |",
        f"| {'device HBM':<30}{_mib(limit):>20}{'free ' + _mib(limit - allocated):>24} |",
        f"| {'allocations / frees':<30}{allocs:>20}{frees:>24} |",
        f"| {'out-of-memory errors':<30}{ooms:>20}{'':>24} |",
        f"| {'history recording':<30}{str(_state['enabled']):>20}{'':>24} |",
        "|" + "=" * 75 + "|",
    ]
    if not abbreviated:
        rows = live_tensors(index)[:10]
        lines.append(f"| {'largest live tensors':<73} |")
        for r in rows:
            lines.append(f"|   {_mib(r['size']):>12} {r['dtype'] + str(list(r['shape'])):<26} "
                         f"{(r['site'] or '-')[-30:]:<30} |")
        lines.append("|" + "=" * 75 + "|")
    return "\n".join(lines)


def attach(device_module: types.ModuleType) -> None:
    """Puts the memory API on `torch.tpu` (and `torch.tpu.memory`) and installs the OOM note."""
    mem = types.ModuleType("torch.tpu.memory", "torch.tpu.memory: allocator history and snapshots.")
    mem._record_memory_history = record_memory_history
    mem._snapshot = snapshot
    mem._dump_snapshot = dump_snapshot
    mem.memory_snapshot = memory_snapshot
    mem.memory_summary = memory_summary
    for name in ("memory_allocated", "max_memory_allocated", "memory_stats", "reset_peak_memory_stats"):
        if hasattr(device_module, name):
            setattr(mem, name, getattr(device_module, name))
    device_module.memory = mem
    device_module.memory_summary = memory_summary
    device_module.memory_snapshot = memory_snapshot
    sys.modules["torch.tpu.memory"] = mem
    if hasattr(native(), "set_memory_hooks"):  # else _record_memory_history says how to rebuild the shim
        native().set_memory_hooks(_on_alloc, oom_note, False)
