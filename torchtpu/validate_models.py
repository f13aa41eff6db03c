"""Hugging Face model zoo on "tpu": the checks and table over the registry in `torchtpu.model_zoo` (shared by
`tests/models/` and `python -m torchtpu.validate_models`).

Each architecture is built from a small config (2 layers, hidden 32, vocab 128, 8 tokens) with seeded random
weights, no hub access, and run unmodified on CPU and on "tpu". Four checks per model:

- ``forward``:      the model's main output (logits) at HIGHEST precision (bf16x6 passes, near fp32) vs CPU;
- ``forward_bf16``: the same at DEFAULT precision (bf16 products, fp32 accumulation), bf16-justified tolerance;
- ``generate``:     ``model.generate`` with greedy decoding at HIGHEST gives exactly CPU's tokens (decoders,
                    encoder-decoders);
- ``train``:        one training step (``loss.backward()`` and AdamW) at HIGHEST: every gradient, and the loss
                    after the step, vs CPU.

Errors are relative to the scale of the reference: ``max|tpu - cpu| / max|cpu|`` per tensor (for gradients,
the worst tensor). Any CPU fallback is recorded per check (``torchtpu.fallback_counts()``); the goal is none.
A check that fails for a reason outside the model harness (a missing lowering, a bug elsewhere) is listed in
``KNOWN_FAILURES`` with its reason (``REASONS``, naming the owner); the tests mark it ``xfail(strict=True)``,
so it fails loudly once it is fixed, and the table shows it as a tracked failure.

Dropout is zeroed in every config (the device RNG differs from CPU's, so a dropout model cannot be compared
element-wise); the training step still runs in ``model.train()`` mode.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import math
import os
import sys
import time
import traceback
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402

import torchtpu  # noqa: E402
from torchtpu import config  # noqa: E402
from torchtpu.model_zoo import (  # noqa: E402, F401  (re-exported: tests and benchmarks read them from here)
    CHECKS,
    KNOWN_FAILURES,
    MODELS,
    NEW_TOKENS,
    REASONS,
    ModelSpec,
    _mlm_inputs,
    _no_dropout,
    reason_text,
)

# Relative error bounds (see the module docstring for the metric).
# HIGHEST is bf16x6: about fp32 (2^-24 per product); a few transformer layers stay well under 1e-4.
# DEFAULT rounds both matmul operands to bf16 (8 significant bits: 2^-9 relative rounding per operand); through
# two layers, attention softmax and the output projection the dense models' logits move by 1e-3..8e-3 of their
# scale (measured). 5e-2 (about 13 bf16 roundings of the largest logit) also covers what moves discontinuously:
# an MoE router whose top-k choice flips under bf16 (Mixtral: 2.5e-2) and CLIP's exp(logit_scale) = 14x
# amplified image-text logits (1.9e-2).
# train (HIGHEST): the loss, each gradient (scale floored, see check_train) and the loss after one AdamW step;
# measured errors are 1e-6..1e-5, fp32 rounding through forward and backward.
TOLERANCE = {"forward": 1e-4, "forward_bf16": 5e-2, "train": 1e-4}
GRAD_FLOOR = 1e-3


# --------------------------------------------------------------------------------------------------- checks


@dataclasses.dataclass
class CheckResult:
    model: str
    check: str
    ok: bool
    error: float | None = None          # relative error (see module docstring); None when not comparable
    detail: str = ""                    # mismatch or exception text
    fallbacks: dict[str, int] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    known_failure: str | None = None    # REASONS keys, when KNOWN_FAILURES lists this check

    @property
    def clean(self) -> bool:
        """Within tolerance and with zero CPU fallbacks: what the tests require."""
        return self.ok and not self.fallbacks


def rel_error(ref: torch.Tensor, got: torch.Tensor, floor: float = 0.0) -> float:
    """max|got - ref| / max(max|ref|, floor)."""
    ref, got = ref.detach().float().cpu(), got.detach().float().cpu()
    if ref.shape != got.shape:
        raise AssertionError(f"shape {tuple(got.shape)} != CPU {tuple(ref.shape)}")
    if not torch.isfinite(got).all():
        return math.inf
    scale = max(ref.abs().max().item(), floor)
    diff = (ref - got).abs().max().item()
    return diff / scale if scale > 0 else diff


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _output(out: Any, field: str) -> torch.Tensor:
    return out[field] if isinstance(out, dict) else getattr(out, field)


def _forward(spec: ModelSpec, model: torch.nn.Module, device: str) -> torch.Tensor:
    inputs = to_device(spec.make_inputs(), device)
    with torch.no_grad():
        return _output(model(**inputs), spec.output).cpu()


def check_forward(spec: ModelSpec, precision: str = "HIGHEST") -> float:
    model = spec.build()
    ref = _forward(spec, model, "cpu")
    with torchtpu.precision(precision):
        got = _forward(spec, model.to("tpu"), "tpu")
    return rel_error(ref, got)


def _generate(spec: ModelSpec, model: torch.nn.Module, device: str) -> torch.Tensor:
    inputs = to_device(spec.make_inputs(), device)
    inputs.pop("labels", None)
    kwargs = dict(max_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1)
    with torch.no_grad():
        return model.generate(**inputs, **kwargs).cpu()


def check_generate(spec: ModelSpec) -> tuple[torch.Tensor, torch.Tensor]:
    model = spec.build()
    ref = _generate(spec, model, "cpu")
    with torchtpu.precision("HIGHEST"):
        got = _generate(spec, model.to("tpu"), "tpu")
    return ref, got


def _train_step(spec: ModelSpec, model: torch.nn.Module, device: str):
    model.train()
    inputs = to_device(spec.make_inputs(), device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = model(**inputs).loss
    loss.backward()
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.zero_grad()
    with torch.no_grad():
        after = model(**inputs).loss
    return loss.detach().cpu(), grads, after.cpu()


def check_train(spec: ModelSpec, precision: str = "HIGHEST") -> tuple[float, str]:
    """Returns the worst relative error over the loss, every gradient and the loss after the AdamW step."""
    model = spec.build()
    ref = _train_step(spec, copy.deepcopy(model), "cpu")
    with torchtpu.precision(precision):
        got = _train_step(spec, model.to("tpu"), "tpu")
    errors = {"loss": rel_error(ref[0], got[0]), "loss after step": rel_error(ref[2], got[2])}
    if set(ref[1]) != set(got[1]):
        raise AssertionError(f"parameters with gradients differ: {sorted(set(ref[1]) ^ set(got[1]))}")
    # Some gradients are zero in exact arithmetic and only rounding noise on CPU (attention key biases: softmax
    # is invariant to a per-query shift), so each gradient's scale is floored at GRAD_FLOOR of the largest one.
    floor = GRAD_FLOOR * max(g.abs().max().item() for g in ref[1].values())
    for name, g in ref[1].items():
        errors[f"grad {name}"] = rel_error(g, got[1][name], floor)
    worst = max(errors, key=errors.get)
    return errors[worst], worst


def run_check(spec: ModelSpec, check: str, eager_mode: str | None = None) -> CheckResult:
    """Runs one check, catching everything: the table must show failures, not stop at them. `eager_mode`
    (e.g. "DEFER_AND_FUSE") runs the tpu side in that mode; tracked failures apply to the default mode only."""
    torchtpu.reset_fallback_counts()
    known = spec.known_failures.get(check) if eager_mode is None else None
    result = CheckResult(spec.name, check, ok=False, known_failure=known)
    start = time.perf_counter()
    mode = torchtpu.eager_mode(eager_mode) if eager_mode else contextlib.nullcontext()
    try:
        mode.__enter__()
        if check == "forward":
            result.error = check_forward(spec, "HIGHEST")
            result.ok = result.error <= TOLERANCE[check]
        elif check == "forward_bf16":
            result.error = check_forward(spec, "DEFAULT")
            result.ok = result.error <= TOLERANCE[check]
        elif check == "generate":
            ref, got = check_generate(spec)
            result.ok = ref.shape == got.shape and torch.equal(ref, got)
            result.error = 0.0 if result.ok else 1.0
            if not result.ok:
                result.detail = f"tokens differ: cpu {ref.tolist()} tpu {got.tolist()}"
        elif check == "train":
            result.error, worst = check_train(spec)
            result.ok = result.error <= TOLERANCE[check]
            result.detail = f"worst: {worst}"
        else:
            raise ValueError(f"unknown check {check!r}; valid: {CHECKS}")
        if not result.ok and not result.detail:
            result.detail = f"error {result.error:.3g} > tolerance {TOLERANCE.get(check)}"
    except Exception as exc:  # noqa: BLE001 - reported in the table
        result.detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if config.get("TORCHTPU_VALIDATE_TRACEBACK"):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            mode.__exit__(None, None, None)
    result.seconds = time.perf_counter() - start
    result.fallbacks = torchtpu.fallback_counts()
    torch.tpu.synchronize()
    return result


# ---------------------------------------------------------------------------------------------------- table


def validate(names: list[str] | None = None, checks: tuple[str, ...] = CHECKS,
             progress: bool = True, eager_mode: str | None = None) -> list[CheckResult]:
    from tqdm import tqdm

    names = names or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    jobs = [(MODELS[n], c) for n in names for c in MODELS[n].checks() if c in checks]
    results = []
    bar = tqdm(jobs, disable=not progress, unit="check", file=sys.stderr)
    for spec, check in bar:
        bar.set_description(f"{spec.name}:{check}")
        with _quiet():
            results.append(run_check(spec, check, eager_mode))
    return results


@contextlib.contextmanager
def _quiet():
    """Silences transformers' per-call warnings (generation flags, untied weights) during a check."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        yield
        return
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _cell(r: CheckResult | None) -> str:
    """pass: within tolerance, zero fallbacks; pass*: within tolerance with CPU fallbacks; xfail: a tracked
    failure; FAIL: an untracked one; XPASS: tracked but now clean (remove it from KNOWN_FAILURES)."""
    if r is None:
        return "-"
    err = "" if r.error is None or r.check == "generate" or not math.isfinite(r.error) else f" {r.error:.1e}"
    if r.clean:
        return ("XPASS" if r.known_failure else "pass") + err
    if r.ok:
        return "pass*" + err
    return f"xfail({r.known_failure})" if r.known_failure else "FAIL" + err


def format_table(results: list[CheckResult], markdown: bool = False) -> str:
    by_model: dict[str, dict[str, CheckResult]] = {}
    for r in results:
        by_model.setdefault(r.model, {})[r.check] = r
    checks = [c for c in CHECKS if any(c in row for row in by_model.values())]
    header = ["model", "arch", *checks, "fallbacks"]
    rows = []
    for name, row in by_model.items():
        falls: dict[str, int] = {}
        for r in row.values():
            for op, n in r.fallbacks.items():
                falls[op] = falls.get(op, 0) + n
        rows.append([name, MODELS[name].arch, *(_cell(row.get(c)) for c in checks),
                     ", ".join(f"{op} x{n}" for op, n in sorted(falls.items())) or "0"])
    notes = [r for r in results if not r.clean]
    passed = sum(r.ok for r in results)
    clean = sum(r.clean for r in results)
    summary = (f"{clean}/{len(results)} checks pass with zero fallbacks ({passed} within tolerance); "
               f"{sum(1 for row in by_model.values() if all(r.clean for r in row.values()))}"
               f"/{len(by_model)} models pass every check with zero fallbacks. Errors: max|tpu-cpu|/max|cpu|. "
               "pass* = within tolerance but with CPU fallbacks; xfail = tracked failure (reason below).")
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines += ["", summary]
        lines += [f"- {r.model} {r.check}: {_note(r)}" for r in notes]
        lines += ["", "Tracked failure reasons:", ""] + ["-" + x[1:] for x in _legend(results)]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:-1])]
    fmt = "  ".join(f"{{:{w}}}" for w in widths) + "  {}"
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths), "-" * 9)]
    lines += [fmt.format(*row) for row in rows]
    lines += ["", summary]
    lines += [f"  {r.model} {r.check}: {_note(r)}" for r in notes]
    lines += ["", "tracked failure reasons:"] + _legend(results)
    return "\n".join(lines)


def _legend(results: list[CheckResult]) -> list[str]:
    keys = sorted({k for r in results if r.known_failure and not r.clean for k in r.known_failure.split("+")})
    return [f"  {k}: {REASONS[k]}" for k in keys]


def _note(r: CheckResult) -> str:
    parts = [f"[{r.known_failure}]" if r.known_failure else "UNTRACKED"]
    if r.detail and not (r.ok and r.detail.startswith("worst:")):
        parts.append(r.detail[:160])
    if r.fallbacks:
        parts.append("fallbacks: " + ", ".join(f"{op} x{n}" for op, n in sorted(r.fallbacks.items())))
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchtpu.validate_models", description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated subset of: {', '.join(MODELS)}")
    parser.add_argument("--checks", default=",".join(CHECKS), help=f"comma-separated subset of: {', '.join(CHECKS)}")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--eager-mode", help="run the tpu side in this eager mode (e.g. DEFER_AND_FUSE); "
                        "tracked failures are not applied then")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise SystemExit("the model zoo needs the `models` extra: pip install -e '.[models]'") from None
    names = args.models.split(",") if args.models else None
    checks = tuple(c for c in args.checks.split(",") if c)
    results = validate(names, checks, progress=not args.no_progress, eager_mode=args.eager_mode)
    print(format_table(results, markdown=args.markdown))
    # exit status: 1 when a check fails untracked, or a tracked failure now passes (the registry is stale)
    stale = [r for r in results if r.clean == bool(r.known_failure)]
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
