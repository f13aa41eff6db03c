"""`torchtpu.advise(model, example_inputs, chip=...)` and `torchtpu advise`: ranked findings, each with the
code location, the evidence from the simulation and the predicted simulated step time before/after the change
on the chosen chip. Owns `Finding`, `Advice` and the rules; predictions come from `resim.step_time` (the
recorded launches re-priced with the change applied to their MXU ops).

Rules: MXU dims that are not multiples of the tile (padding waste), matmuls at HIGH/HIGHEST where DEFAULT
stays within the measured error tolerance, host-bound eager runs (DEFER_AND_FUSE), recompiles from changing
shapes (`shapes.py`), small batches leaving the MXU idle, eager layout copies every step (`layout.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torchtpu.profiler import resim
from torchtpu.profiler.trace import Launch, Window

__all__ = ["Advice", "Finding", "advise", "run_step"]

MIN_GAIN = 0.005  # findings predicted to save less than this fraction of the step are not reported
DIM_SLACK = 0.1  # a width is rounded down to a tile multiple when that drops at most this fraction of it
BATCH_FACTOR = 4
SMALL_BATCH_UTILISATION = 0.25
SMALL_BATCH_ROWS = 2048  # streamed rows (batch x sequence) below which the MXU's fill and drain dominate


@dataclass
class Finding:
    """One piece of advice. `before_s` / `after_s`: simulated seconds per step (per sample for kind "batch")."""

    kind: str  # padding | precision | mode | recompile | batch | layout
    title: str
    where: str
    evidence: str
    before_s: float
    after_s: float
    action: dict[str, Any] = field(default_factory=dict)
    unit: str = "step"

    @property
    def gain(self) -> float:
        """Predicted fraction of the step (or per-sample) time saved."""
        return 1.0 - self.after_s / self.before_s if self.before_s > 0 else 0.0

    def __str__(self) -> str:
        if self.unit == "compile":
            predicted = f"{self.before_s * 1e3:.1f} -> {self.after_s * 1e3:.1f} ms host compile time"
        else:
            predicted = f"{self.before_s * 1e6:.2f} -> {self.after_s * 1e6:.2f} us per {self.unit}"
        return (f"[{self.kind}] {self.title}\n    at {self.where or '?'}\n    evidence: {self.evidence}\n"
                f"    predicted: {predicted} ({self.gain:.1%} saved)")


@dataclass
class Advice:
    chip: str
    step_s: float
    findings: list[Finding]
    window: Window
    train: bool

    def __str__(self) -> str:
        head = f"torchtpu advise on {self.chip}: simulated step {self.step_s * 1e6:.2f} us " \
               f"({len(self.window.launches)} launches); {len(self.findings)} findings"
        return "\n".join([head] + [f"{i + 1}. {f}" for i, f in enumerate(self.findings)])

    def write_html(self, path: str) -> str:
        from torchtpu.profiler.report import write_html

        return write_html(self, path)


def _call(model: Callable[..., Any], inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def _loss(out: Any) -> Any:
    import torch

    loss = getattr(out, "loss", None)
    if loss is None and isinstance(out, dict):
        loss = out.get("loss")
    if loss is None:
        t = out if isinstance(out, torch.Tensor) else next(v for v in (out.values() if isinstance(out, dict)
                                                                        else out) if isinstance(v, torch.Tensor))
        loss = t.float().pow(2).mean()
    return loss


def run_step(model: Callable[..., Any], inputs: Any, train: bool) -> float:
    """One forward (and backward when `train`) step; returns the loss (or output) as a float."""
    import torch

    if train:
        loss = _loss(_call(model, inputs))
        loss.backward()
        if isinstance(model, torch.nn.Module):
            model.zero_grad(set_to_none=True)
        return float(loss.item())
    with torch.no_grad():
        return float(_loss(_call(model, inputs)).item())


def measure(model: Callable[..., Any], inputs: Any, train: bool, stacks: bool = False, warmup: int = 1,
            mode: str | None = None) -> Window:
    """A window over one steady-state step (after `warmup` steps), in eager `mode` if given."""
    import torch

    from torchtpu.execution import modes

    ctx = torch.tpu.eager_mode(mode) if mode else modes.eager_mode(modes.get_eager_mode())
    with ctx:
        for _ in range(warmup):
            run_step(model, inputs, train)
        window = Window(stacks).open()
        try:
            run_step(model, inputs, train)
        finally:
            window.close()
    return window


def step_seconds(window: Window) -> float:
    return window.sim_end[0] - window.sim_start[0] if window.sim_start else 0.0


def _mxu_launches(window: Window) -> list[tuple[Launch, Any]]:
    out = []
    for la in window.launches:
        program = la.record.source
        if program is None:
            continue
        for op in program.ops:
            if op.name in ("dot_general", "convolution"):
                out.append((la, op))
    return out


def _where(la: Launch, op_index: int = 0) -> str:
    """The user line of a launch: the eager call's line, or the matching MXU-like source op of a region."""
    if la.line:
        return la.line
    sources = [s for s in la.info["sources"] if s[1]]
    mm = [s for s in sources if any(k in s[0] for k in ("mm", "linear", "matmul", "conv", "einsum", "bmm",
                                                          "compiled_graph"))]
    pick = mm[op_index] if op_index < len(mm) else (mm[-1] if mm else (sources[0] if sources else None))
    return f"{pick[1]} ({pick[0]})" if pick else ""


def _padding(window: Window, chip: Any, before: float, tile: int) -> list[Finding]:
    widths: dict[int, list[tuple[Launch, Any]]] = {}
    for la, op in _mxu_launches(window):
        _, m, n, k = resim.mxu_dims(op)
        for d in {n, k}:
            if d > tile and d % tile:
                widths.setdefault(d, []).append((la, op))
    out = []
    for d, uses in widths.items():
        new = d // tile * tile
        if (d - new) / d > DIM_SLACK:
            continue
        after = resim.step_time(window.launches, chip, resim.with_dim(d, new), other_scale=new / d,
                                scale_if=resim.has_dim(d))
        if before <= 0 or 1 - after / before < MIN_GAIN:
            continue
        la, op = uses[0]
        waste = la.info["padding_waste"]
        out.append(Finding(
            "padding", f"width {d} is not a multiple of the {tile}-wide MXU tile: use {new}",
            _where(la, [o for o in la.record.source.ops if o.name in ("dot_general", "convolution")].index(op)),
            f"{len(uses)} MXU ops use a {d}-wide dim ({-(-d // tile)} tiles for {d / tile:.2f} tiles of work); "
            f"padding waste {waste:.0%} in {la.record.name}", before, after, {"kind": "dim", "from": d, "to": new}))
    return out


def _precision(window: Window, chip: Any, before: float, model: Any, inputs: Any, train: bool,
               tolerance: float) -> list[Finding]:
    high = [(la, op) for la, op in _mxu_launches(window)
            if str(op.attr("precision") or "DEFAULT") != "DEFAULT" and op.inputs[0].dtype == "float32"]
    if not high:
        return []
    import torch

    precision = str(high[0][1].attr("precision"))
    with torch.tpu.precision(precision):
        ref = run_step(model, inputs, False)
    with torch.tpu.precision("DEFAULT"):
        got = run_step(model, inputs, False)
    error = abs(got - ref) / max(abs(ref), 1e-30)
    if error > tolerance:
        return []
    after = resim.step_time(window.launches, chip, resim.with_precision("DEFAULT"))
    if before <= 0 or 1 - after / before < MIN_GAIN:
        return []
    return [Finding(
        "precision", f"{len(high)} float32 matmuls run at {precision}; DEFAULT is within tolerance",
        _where(high[0][0]) + " (and torch.tpu.set_precision / TORCHTPU_PRECISION)",
        f"loss/output at DEFAULT differs by {error:.2e} (relative) from {precision}, tolerance {tolerance:g}; "
        f"{precision} costs {6 if precision == 'HIGHEST' else 3} MXU passes per product",
        before, after, {"kind": "precision", "to": "DEFAULT", "error": error})]


def _mode(window: Window, chip: Any, before: float) -> list[Finding]:
    from torchtpu.execution import modes

    if modes.get_eager_mode() is modes.EagerMode.DEFER_AND_FUSE or not window.launches:
        return []
    device = window.device_seconds(0)
    if before <= 0 or device / before >= 0.5:
        return []
    model = resim.cost_model(chip)
    mxu = sum(la.info["mxu_seconds"] for la in window.launches)
    vpu = sum(la.info["vpu_seconds"] for la in window.launches)
    hbm = sum(la.info["hbm_seconds"] for la in window.launches if la.info["mxu_ops"])
    flushes = 1 + sum(1 for la in window.launches if la.record.name.startswith("aten::copy") or
                      "_local_scalar_dense" in la.record.name)
    after = flushes * float(model.chip.launch_overhead_s) + max(mxu, vpu, hbm)
    if 1 - after / before < MIN_GAIN:
        return []
    hbm_bound = sum(1 for la in window.launches if la.record.bound in ("hbm", "launch") and not la.info["mxu_ops"])
    return [Finding(
        "mode", f"host-bound eager run: DEFER_AND_FUSE (or torch.compile) would fuse {len(window.launches)} launches",
        window.launches[0].line or "torch.tpu.set_eager_mode('DEFER_AND_FUSE')",
        f"the chip is busy {device / before:.0%} of the step; {len(window.launches)} launches pay "
        f"{float(model.chip.launch_overhead_s) * 1e6:.1f} us each; {hbm_bound} are fusable element-wise/movement "
        f"launches", before, after, {"kind": "mode", "to": "DEFER_AND_FUSE", "flushes": flushes})]


def _recompiles(window: Window) -> list[Finding]:
    from torchtpu.profiler.shapes import recompile_findings

    return recompile_findings(window)


def _layout(window: Window, chip: Any, before: float, model: Any) -> list[Finding]:
    from torchtpu.profiler.layout import layout_findings

    params = model.parameters() if hasattr(model, "parameters") else ()
    return layout_findings(window, chip, before, [tuple(p.shape) for p in params if p.dim() == 2])


def _batch(window: Window, chip: Any, before: float) -> list[Finding]:
    mxu = _mxu_launches(window)
    if not mxu or before <= 0:
        return []
    utilisation = max(la.info["mxu_utilisation"] for la, _ in mxu)
    rows = max(resim.mxu_dims(op)[1] for _, op in mxu)
    if utilisation >= SMALL_BATCH_UTILISATION or rows >= SMALL_BATCH_ROWS:
        return []
    after = resim.step_time(window.launches, chip, resim.with_rows(BATCH_FACTOR),
                            other_scale=BATCH_FACTOR) / BATCH_FACTOR
    if 1 - after / before < MIN_GAIN:
        return []
    return [Finding(
        "batch", f"small batch leaves the MXU idle: {BATCH_FACTOR}x the batch per step",
        _where(mxu[0][0]), f"peak MXU utilisation of any launch {utilisation:.1%}; at most {rows} rows stream "
        "through the MXU", before, after,
        {"kind": "batch", "factor": BATCH_FACTOR}, unit="sample-batch")]


def advise(model: Callable[..., Any], example_inputs: Any, chip: str | None = None, train: bool = True,
           tolerance: float = 1e-2, report: str | None = None) -> Advice:
    """Runs one warm step of `model(example_inputs)` (a dict is passed as keywords, a tuple as positional
    arguments; `train`: forward + backward), records it, and returns ranked findings with predicted simulated
    step times on `chip` (default: the simulated chip). `report`: also write an HTML report there."""
    tile = resim.cost_model(chip).chip.mxu_cols  # an unknown chip fails here, before anything runs
    window = measure(model, example_inputs, train, stacks=True)
    before = resim.step_time(window.launches, chip)
    findings = (_padding(window, chip, before, tile) + _precision(window, chip, before, model, example_inputs, train,
                                                                  tolerance)
                + _mode(window, chip, before) + _batch(window, chip, before) + _recompiles(window)
                + _layout(window, chip, before, model))
    findings.sort(key=lambda f: -f.gain)
    name = resim.cost_model(chip).chip.name
    advice = Advice(name, before, findings, window, train)
    if report:
        advice.write_html(report)
    return advice
