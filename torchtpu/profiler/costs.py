"""What the profiler reads from one launched executable: owns `executable_info` (its ATen ops, IR ops, MXU
FLOPs, MXU utilisation, padding waste and per-unit times) and `mxu_ops` (each MXU op of a Program with its
shape, precision and cost), computed once per executable from its Program and the chip's cost rules.
"""

from __future__ import annotations

import threading
from typing import Any

from torchtpu.profiler import events

_cache: dict[int, tuple[Any, dict[str, Any]]] = {}
_lock = threading.Lock()
_MXU = ("dot_general", "convolution", "ragged_dot")  # the IR ops of kind "matmul"


def _model() -> Any:
    from torchtpu import runtime

    return getattr(runtime.driver(), "cost_model", None)


def mxu_ops(program: Any) -> list[dict[str, Any]]:
    """Each dot_general / convolution / ragged_dot of `program`: shapes, precision, FLOPs, padded FLOPs (the MXU's work
    including tile padding and passes), passes and seconds, from the sim's cost rules."""
    model = _model()
    if program is None or model is None:
        return []
    from torchtpu.drivers.sim.costs import COSTS

    out = []
    for op in program.ops:
        if op.name not in _MXU:
            continue
        rec = COSTS[op.name](model, op)
        passes = rec.detail.get("passes", 1) if rec.detail else 1
        out.append({"op": op.name, "shapes": [tuple(v.shape) for v in op.inputs], "dtype": op.inputs[0].dtype,
                    "out_shape": tuple(op.outputs[0].shape), "precision": str(op.attr("precision") or "DEFAULT"),
                    "flops": rec.flops, "padded_flops": rec.padded_flops, "passes": passes,
                    "seconds": rec.seconds, "mxu_seconds": rec.mxu_seconds, "bound": rec.bound})
    return out


def executable_info(record: Any) -> dict[str, Any]:
    """Profiler facts about one timeline record's executable (cached per executable)."""
    program = getattr(record, "source", None)
    key = id(program)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] is program and program is not None:
        return hit[1]
    cost = getattr(record, "cost", None)
    mxu = mxu_ops(program)
    mxu_flops = sum(m["flops"] for m in mxu)
    useful = sum(m["flops"] * m["passes"] for m in mxu)
    padded = sum(m["padded_flops"] for m in mxu)
    model = _model()
    peak = float(model.chip.bf16_flops) if model is not None else 0.0
    seconds = float(record.seconds) if record.seconds > 0 else 0.0
    info = {
        "aten_ops": [op for op, _ in events.source_ops(program)],
        "sources": events.source_ops(program),
        "ir_ops": len(program.ops) if program is not None else 0,
        "mxu_flops": mxu_flops,
        "mxu_utilisation": mxu_flops / (peak * seconds) if peak and seconds else 0.0,
        "padding_waste": 1.0 - useful / padded if padded > 0 else 0.0,
        "mxu_seconds": cost.mxu_seconds if cost is not None else 0.0,
        "vpu_seconds": cost.vpu_seconds if cost is not None else 0.0,
        "hbm_seconds": cost.hbm_seconds if cost is not None else 0.0,
        "mxu_ops": mxu,
    }
    if program is not None:
        with _lock:
            _cache[key] = (program, info)
    return info
