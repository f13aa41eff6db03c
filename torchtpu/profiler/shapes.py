"""The advisor's recompile rule: owns `recompile_findings` (a recorded run's size-mismatch recompiles, with the
compile count and host compile time that `torch.compile(dynamic=True)` with shape buckets would give),
`advise_shapes` (records a function called with changing shapes and returns those findings) and
`measure_buckets` (the same calls re-run under `dynamic=True`, measured, to check the prediction).

Prediction, from the recorded run alone:
* Dynamo compiles: every compile that followed a guard failure is one `dynamic=True` avoids (each function
  compiles once, with symbolic sizes), so predicted = compiles - recompiling compiles;
* programs (the sim's executables): the recorded compiled graphs' input signatures, each axis that differs
  between signatures of the same graph rank padded up to its bucket (`torchtpu.compile.buckets.bucket`, the
  `TORCHTPU_SHAPE_BUCKETS` policy): predicted = distinct bucketed signatures. This assumes the backend finds
  padding safe (`buckets.padding_is_safe`); a graph that mixes positions along the padded axis runs exact;
* host compile seconds: the measured mean seconds per Dynamo compile of the run x predicted compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torchtpu.profiler.advise import Finding
from torchtpu.profiler.trace import Window

__all__ = ["advise_shapes", "measure_buckets", "program_signatures", "recompile_findings"]


def program_signatures(window: Window) -> list[tuple[tuple[int, ...], ...]]:
    """The input shapes of each distinct compiled-graph executable launched in `window`."""
    seen: dict[int, tuple[tuple[int, ...], ...]] = {}
    for la in window.launches:
        program = la.record.source
        if la.record.name == "compiled_graph" and program is not None and id(program) not in seen:
            # 0-d inputs (host scalars, a bucket's real sizes) never vary in shape: left out, so a padded
            # program groups with the exact ones it replaces
            seen[id(program)] = tuple(tuple(int(s) for s in v.shape) for v in program.inputs if v.shape)
    return list(seen.values())


def bucketed_programs(signatures: Sequence[tuple[tuple[int, ...], ...]]) -> int:
    """How many programs the signatures become when every axis that varies within a rank group is bucketed."""
    from torchtpu.compile.buckets import bucket

    groups: dict[tuple[int, ...], list[tuple[tuple[int, ...], ...]]] = {}
    for sig in signatures:
        groups.setdefault(tuple(len(s) for s in sig), []).append(sig)
    total = 0
    for sigs in groups.values():
        varying = {(i, a) for i, shape in enumerate(sigs[0]) for a in range(len(shape))
                   if len({s[i][a] for s in sigs}) > 1}
        total += len({tuple(tuple(bucket(d) if (i, a) in varying else d for a, d in enumerate(shape))
                            for i, shape in enumerate(sig)) for sig in sigs})
    return total


def _compiles(window: Window) -> tuple[list[Any], set[int]]:
    compiles = [ev for ev in window.host_events if ev.kind == "compile"]
    recompiling = {ev.start_ns for ev in window.host_events
                   if ev.kind == "recompile" and "size mismatch" in ev.reason}
    return compiles, recompiling


def recompile_findings(window: Window) -> list[Finding]:
    """One finding when Dynamo recompiled on a size mismatch in `window`: compiles and programs before/after
    `dynamic=True` with buckets; `before_s`/`after_s` are host compile seconds (unit "compile")."""
    compiles, recompiling = _compiles(window)
    shape_recompiles = [ev for ev in window.host_events if ev.kind == "recompile" and "size mismatch" in ev.reason]
    if not shape_recompiles or not compiles:
        return []
    n = len(compiles)
    predicted = max(n - sum(1 for ev in compiles if ev.start_ns in recompiling), 1)
    seconds = sum(ev.end_ns - ev.start_ns for ev in compiles) / 1e9
    sigs = program_signatures(window)
    programs = bucketed_programs(sigs)
    first = shape_recompiles[0]
    functions = sorted({ev.args.get("function", "?") for ev in shape_recompiles})
    return [Finding(
        "recompile", f"{', '.join(functions)} recompiles on new shapes: torch.compile(dynamic=True) with buckets "
        f"gives {predicted} compile(s) and {programs} program(s)", first.where,
        f"Dynamo: {first.reason}; measured {n} compiles ({seconds * 1e3:.0f} ms host, "
        f"{seconds / n * 1e3:.0f} ms each) and {len(sigs)} programs; buckets: TORCHTPU_SHAPE_BUCKETS (default pow2)",
        seconds, seconds / n * predicted,
        {"kind": "buckets", "compiles": n, "predicted_compiles": predicted, "programs": len(sigs),
         "predicted_programs": programs}, unit="compile")]


def _run(fn: Callable[..., Any], inputs: Sequence[Sequence[Any]], dynamic: bool | None) -> Window:
    import torch

    from torchtpu.profiler.explain import explain

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="tpu", dynamic=dynamic)
    return explain(compiled, inputs=inputs).window


def advise_shapes(fn: Callable[..., Any], inputs: Sequence[Sequence[Any]]) -> list[Finding]:
    """Compiles plain `fn` (default `torch.compile`, Dynamo state reset first), calls it once per argument tuple
    in `inputs`, and returns the recompile findings of that run."""
    return recompile_findings(_run(fn, inputs, None))


def measure_buckets(fn: Callable[..., Any], inputs: Sequence[Sequence[Any]]) -> dict[str, float]:
    """The same calls under `torch.compile(fn, dynamic=True)`: measured compiles, programs, compile seconds."""
    window = _run(fn, inputs, True)
    compiles, _ = _compiles(window)
    return {"compiles": len(compiles), "programs": len(program_signatures(window)),
            "seconds": sum(ev.end_ns - ev.start_ns for ev in compiles) / 1e9}
