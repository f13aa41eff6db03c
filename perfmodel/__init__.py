"""torchtpu.perfmodel: analytical performance model of transformers on TPUs (no torch).

How fast will a model train or serve on v5e / v5p / v6e / v7x, on how many chips, with which parallelism, and
how far from peak? Chip numbers come from the simulator's table (`torchtpu.sim.chips`), attention and MoE
kernel efficiencies from its cost model (`torchtpu.sim.cost`); the few global calibration constants are in
`perfmodel.calibration`; docs/perfmodel.md has the equations and the validation against published results.

Entry points (imported lazily):
    train_step(model, chip, n_chips, layout, ...) -> StepReport   step time, MFU, memory, breakdown
    search(model, chip, n_chips, ...) -> SearchResult             best fitting layout by predicted MFU
    serve(model, chip, n_chips, ...) -> ServeReport               prefill / decode latency and throughput
    validate() / format_table(rows)                               predicted vs published MFU
    project_records(records, target_chip)                         re-time simulator records on another chip
    chip_roofline(chip), matmul_cost, attention_cost, collective_time  building blocks
    load_config(name | path | hf dict), list_configs()            model shapes
    plots.*                                                       matplotlib figures
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Calibration": "calibration",
    "DEFAULT_CALIBRATION": "calibration",
    "ModelConfig": "config",
    "from_hf_config": "config",
    "list_configs": "config",
    "load_config": "config",
    "maxtext_synthetic": "config",
    "flops_per_token": "flops",
    "param_counts": "flops",
    "Layout": "layout",
    "Axis": "collectives",
    "collective_time": "collectives",
    "dcn_collective_time": "collectives",
    "OpCost": "ops",
    "attention_cost": "ops",
    "elementwise_cost": "ops",
    "matmul_cost": "ops",
    "Roofline": "roofline",
    "chip_roofline": "roofline",
    "MemoryReport": "memory",
    "training_memory": "memory",
    "StepReport": "training",
    "System": "training",
    "TrainSetup": "training",
    "train_step": "training",
    "ServeReport": "serving",
    "serve": "serving",
    "SearchResult": "layout_search",
    "search": "layout_search",
    "Case": "published",
    "CASES": "published",
    "VALIDATION_CASES": "published",
    "cost_per_million_tokens": "pricing",
    "format_table": "validation",
    "validate": "validation",
    "Projection": "project",
    "project_records": "project",
}
_SUBMODULES = ("blocks", "calibration", "collectives", "config", "flops", "layout", "layout_search", "longctx",
               "memory", "ops", "pipeline", "plots", "pricing", "project", "published", "remat", "roofline",
               "serving", "simcost", "training", "validation")

__all__ = sorted(_EXPORTS) + list(_SUBMODULES)


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_CALIBRATION":
        from torchtpu.perfmodel.calibration import DEFAULT

        return DEFAULT
    if name in _EXPORTS:
        module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
