"""torchtpu.sim: the TPU chip model (numpy + numba, no torch).

Submodules, one concern each: `chips` (ChipSpec table), `numerics` (bf16 rounding and splits), `mxu`
(systolic-array matmul/conv numerics), `cost` (time model from shapes only),
`timeline` (simulated device clock and traces). Names below are imported lazily so `import torchtpu.sim`
stays cheap and compiles no numba kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ChipSpec": "chips",
    "CHIPS": "chips",
    "DEFAULT_CHIP": "chips",
    "get_chip": "chips",
    "round_bf16": "numerics",
    "to_bf16": "numerics",
    "from_bf16": "numerics",
    "split_bf16x3": "numerics",
    "split_bf16x6": "numerics",
    "matmul": "mxu",
    "conv": "mxu",
    "set_mode": "mxu",
    "get_mode": "mxu",
    "CostRecord": "cost",
    "CostModel": "cost",
    "systolic_cycles": "cost",
    "Timeline": "timeline",
}
_SUBMODULES = ("chips", "numerics", "mxu", "cost", "timeline")  # VPU kernels: drivers/sim/kernels*.py

__all__ = sorted(_EXPORTS) + list(_SUBMODULES)


def __getattr__(name: str) -> Any:
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
