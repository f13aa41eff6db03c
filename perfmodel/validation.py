"""Predicted vs published MFU for the cases of `perfmodel.published`, as rows and as a printable table.

`validate()` runs every case through `perfmodel.training.train_step` with the global calibration and returns
`Row`s (relative error = predicted / published - 1, in the publisher's FLOP convention). `format_table` renders
them in Markdown (used in docs/perfmodel.md and printed by the tests and `torchtpu perf --validate`).
`fit_grid` re-fits the calibration constants on a grid by minimising the worst relative error.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import load_config
from torchtpu.perfmodel.flops import flops_per_token
from torchtpu.perfmodel.published import CASES, Case, ServingCase
from torchtpu.perfmodel.serving import serve
from torchtpu.perfmodel.training import StepReport, train_step
from torchtpu.sim.chips import get_chip

__all__ = ["Row", "fit_grid", "format_table", "predict_case", "serving_mfu", "validate"]


@dataclass(frozen=True)
class Row:
    """One validation result."""

    case: Case
    report: StepReport

    @property
    def predicted(self) -> float:
        return self.report.mfu

    @property
    def published(self) -> float:
        return self.case.mfu

    @property
    def rel_error(self) -> float:
        return self.predicted / self.published - 1.0


def predict_case(case: Case, calibration: Calibration = DEFAULT) -> StepReport:
    """The model's prediction for one published case, in the publisher's FLOP convention."""
    batch = dict(global_batch=case.global_batch) if case.global_batch else dict(per_device_batch=case.per_device_batch)
    return train_step(case.model, case.chip, case.chips, case.layout, n_slices=case.slices, seq_len=case.seq_len,
                      remat=case.remat, offload=case.offload, block_q=case.block, block_kv=case.block,
                      causal_convention=case.convention, calibration=calibration, dcn_bw=case.dcn_bw, **batch)


def serving_mfu(case: ServingCase, calibration: Calibration = DEFAULT) -> float:
    """Predicted prefill MFU of a published serving case (forward FLOPs, causal attention halved)."""
    rep = serve(case.model, case.chip, case.chips, tp=case.tp, fsdp=case.fsdp, batch=case.batch,
                prompt_len=case.prompt_len, gen_len=1, quant=case.quant, calibration=calibration)
    flops = flops_per_token(load_config(case.model), case.prompt_len, causal="half", training=False)
    return flops * case.batch * case.prompt_len * rep.replicas / (rep.prefill_seconds * case.chips
                                                                  * get_chip(case.chip).bf16_flops)


def validate(cases: Iterable[Case] = CASES, calibration: Calibration = DEFAULT) -> list[Row]:
    """Predicted vs published MFU for each case."""
    return [Row(c, predict_case(c, calibration)) for c in cases]


def format_table(rows: Sequence[Row]) -> str:
    """Markdown table: case, chips, layout, published and predicted MFU, relative error, step time."""
    head = ("| case | role | chips | layout | remat | published MFU | predicted MFU | rel. error | predicted step (s) |"
            "\n|---|---|---:|---|---|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        c = r.case
        lay = c.layout + (f",dcn_dp={c.slices}" if c.slices > 1 else "")
        lines.append(f"| {c.id} | {c.role} | {c.chips} | {lay} | {r.report.remat} | {100 * r.published:.2f}% | "
                     f"{100 * r.predicted:.2f}% | {100 * r.rel_error:+.1f}% | {r.report.step_seconds:.2f} |")
    errs = [abs(r.rel_error) for r in rows]
    if errs:
        lines.append(f"\n{len(rows)} cases: max |error| {100 * max(errs):.1f}%, mean |error| "
                     f"{100 * sum(errs) / len(errs):.1f}%")
    return "\n".join(lines)


def fit_grid(grid: dict[str, Sequence[float]], cases: Iterable[Case] = CASES,
             base: Calibration = DEFAULT) -> tuple[Calibration, float]:
    """Grid search of calibration constants minimising the worst |relative error| over `cases`."""
    cases = list(cases)
    best, best_err = base, float("inf")
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        cal = base.with_(**dict(zip(keys, values)))
        err = max(abs(r.rel_error) for r in validate(cases, cal))
        if err < best_err:
            best, best_err = cal, err
    return best, best_err
