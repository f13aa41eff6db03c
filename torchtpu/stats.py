"""`torchtpu.stats()`: simulated device time, FLOPs, HBM bytes, launches and a per-op-kind breakdown, plus the
program cache's hit/miss counters and the CPU-fallback counts."""

from __future__ import annotations

from typing import Any

from torchtpu import runtime
from torchtpu.execution import deferred
from torchtpu.ops.fallback import fallback_counts


class Stats(dict):
    """A dict with attribute access: `torchtpu.stats().device_seconds`."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def stats() -> Stats:
    drv = runtime.driver()
    out = Stats(drv.stats())
    cache = drv.cache_stats
    out["cache"] = {"hits": cache.hits, "misses": cache.misses, "compiles": cache.compiles,
                    "compile_seconds": cache.compile_seconds}
    r = deferred.stats
    out["regions"] = {"flushes": r.flushes, "hits": r.hits, "misses": r.misses, "replays": r.replays,
                      "ops_deferred": r.ops_deferred}
    from torchtpu.compile.backend import compile_stats

    out["compile"] = compile_stats()
    out["fallbacks"] = fallback_counts()
    out["driver"] = drv.name
    return out


def reset_stats() -> None:
    drv = runtime.driver()
    drv.reset_stats()
    cache = drv.cache_stats
    cache.hits = cache.misses = cache.compiles = 0
    cache.compile_seconds = 0.0
    deferred.reset_stats()
    from torchtpu.compile.backend import reset_compile_stats

    reset_compile_stats()


def timeline_records(device: int | None = None) -> list[dict[str, Any]]:
    """The simulated device timeline: one dict per launched executable (name, op, flops, hbm_bytes, cycles, bound,
    start, end, seconds, chip, and the unit times mxu_seconds / vpu_seconds / hbm_seconds and padded_flops of
    its cost) — the shape `torchtpu.perfmodel.project_records` takes."""
    drv = runtime.driver()
    timelines = getattr(drv, "timelines", [])
    out = []
    for index, timeline in enumerate(timelines):
        if device is not None and index != device:
            continue
        chip = drv.stats().get("chip")
        for r in timeline.records:
            cost = r.cost
            out.append({"name": r.name, "op": r.op, "flops": r.flops, "hbm_bytes": r.hbm_bytes,
                        "cycles": r.cycles, "bound": r.bound, "start": r.start, "end": r.end,
                        "seconds": r.seconds, "chip": chip, "device": index,
                        "mxu_seconds": cost.mxu_seconds if cost is not None else 0.0,
                        "vpu_seconds": cost.vpu_seconds if cost is not None else 0.0,
                        "hbm_seconds": cost.hbm_seconds if cost is not None else 0.0,
                        "padded_flops": cost.padded_flops if cost is not None else 0.0})
    return out
