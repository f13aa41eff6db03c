"""Checks the advisor against re-simulated runs: owns `measure_finding` (apply a finding's change for real,
where it can be applied automatically, and measure the simulated step) and `zoo_table` (every finding on the
model zoo, predicted vs measured, the table in docs/advisor.md). `python -m torchtpu.profiler.validate
[names...]` prints it.

Applied changes: precision (run at DEFAULT), mode (run in DEFER_AND_FUSE, steady state), batch (every input
repeated `factor` times along dim 0; compared per sample), dim (the caller's `rebuild(width)` makes the model
and inputs at the new width). A finding agrees when |predicted - measured| <= 25% of the measured saving.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from torchtpu.profiler.advise import Finding, advise, measure, step_seconds

__all__ = ["AGREEMENT", "measure_finding", "zoo_table"]

AGREEMENT = 0.25


def _repeat(inputs: Any, factor: int) -> Any:
    import torch

    def rep(v: Any) -> Any:
        return torch.cat([v] * factor) if isinstance(v, torch.Tensor) and v.dim() > 0 else v
    if isinstance(inputs, dict):
        return {k: rep(v) for k, v in inputs.items()}
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(rep(v) for v in inputs)
    return rep(inputs)


def measure_finding(finding: Finding, model: Any, inputs: Any, train: bool,
                    rebuild: Callable[[int], tuple[Any, Any]] | None = None) -> float | None:
    """The measured simulated time after applying `finding` (per step; per sample-batch for "batch"), or None
    when the change cannot be applied automatically."""
    import torch

    kind = finding.action.get("kind")
    if kind == "precision":
        with torch.tpu.precision(finding.action["to"]):
            return step_seconds(measure(model, inputs, train, warmup=1))
    if kind == "mode":
        return step_seconds(measure(model, inputs, train, warmup=2, mode=finding.action["to"]))
    if kind == "batch":
        factor = finding.action["factor"]
        return step_seconds(measure(model, _repeat(inputs, factor), train, warmup=1)) / factor
    if kind == "dim" and rebuild is not None:
        new_model, new_inputs = rebuild(finding.action["to"])
        return step_seconds(measure(new_model, new_inputs, train, warmup=1))
    return None


def agrees(predicted_after: float, measured_after: float, before: float) -> bool:
    predicted, measured = before - predicted_after, before - measured_after
    return abs(predicted - measured) <= AGREEMENT * abs(measured)


def zoo_table(names: list[str] | None = None, precision: str = "HIGHEST", train: bool = True) -> list[dict]:
    """Advice on each zoo model (run at `precision`), each finding applied and measured."""
    import torch

    from torchtpu.validate_models import MODELS, to_device

    rows = []
    for name in names or list(MODELS):
        spec = MODELS[name]
        model = spec.build().to("tpu")
        if train:
            model.train()
        inputs = to_device(spec.make_inputs(), "tpu")
        with torch.tpu.precision(precision):
            advice = advise(model, inputs, train=train)
            for f in advice.findings:
                measured = measure_finding(f, model, inputs, train)
                rows.append({"model": name, "kind": f.kind, "before_us": f.before_s * 1e6,
                             "predicted_us": f.after_s * 1e6,
                             "measured_us": None if measured is None else measured * 1e6,
                             "predicted_gain": f.gain,
                             "measured_gain": None if measured is None else 1 - measured / f.before_s,
                             "agrees": None if measured is None else agrees(f.after_s, measured, f.before_s)})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| model | finding | before (us) | predicted after (us) | measured after (us) | predicted saved | "
             "measured saved | within 25% |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = "n/a" if r["measured_us"] is None else f"{r['measured_us']:.2f}"
        mg = "n/a" if r["measured_gain"] is None else f"{r['measured_gain']:.1%}"
        ok = "n/a" if r["agrees"] is None else ("yes" if r["agrees"] else "**no**")
        lines.append(f"| {r['model']} | {r['kind']} | {r['before_us']:.2f} | {r['predicted_us']:.2f} | {m} | "
                     f"{r['predicted_gain']:.1%} | {mg} | {ok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore")
    print(markdown(zoo_table(sys.argv[1:] or None)))
