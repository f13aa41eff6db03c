"""Pipeline parallelism: bubble time, activations in flight, and the point-to-point volumes between stages.

The layers are split into `stages` = pp x dcn_pp consecutive groups; each data shard's batch runs as
`microbatches` microbatches. Schedules (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC 2021, arXiv:2104.04473, sections 2.2.1-2.2.2):
* 'gpipe' and '1f1b': the pipeline is idle (bubble) for (p - 1) microbatch slots at fill and drain, so the step
  takes (1 + (p - 1) / m) x the ideal time; GPipe keeps all m microbatches' activations, 1F1B at most p;
* 'interleaved': each chip holds v model chunks (virtual stages); the bubble shrinks to (p - 1) / (v m) and the
  stage boundaries are crossed v times as often. The first stage keeps p + (p - 1) / v microbatches of
  activations in flight (Megatron-LM's warm-up count, `schedules.py`
  forward_backward_pipelining_with_interleaving: (p - 1) x 2 + (v - 1) x p warm-up chunks, plus one).
Point-to-point: every microbatch sends its activations [tokens, d_model] forward across each stage boundary
and the gradient back; with sequence-parallel activations each tp rank sends its 1/tp share.
"""

from __future__ import annotations

__all__ = ["SCHEDULES", "bubble_fraction", "check", "inflight_fraction", "p2p_bytes_per_chip"]

SCHEDULES = ("1f1b", "interleaved", "gpipe")


def check(n_layers: int, stages: int, microbatches: int, schedule: str = "1f1b", virtual: int = 1) -> None:
    """Raise ValueError naming what is wrong with a pipeline configuration."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r}; valid: {', '.join(SCHEDULES)}")
    if stages < 1 or microbatches < 1 or virtual < 1:
        raise ValueError("stages, microbatches and virtual stages must be positive")
    if schedule != "interleaved" and virtual != 1:
        raise ValueError("virtual stages > 1 need the 'interleaved' schedule")
    chunks = stages * virtual
    if n_layers % chunks:
        raise ValueError(f"{n_layers} layers do not split into {stages} stages x {virtual} virtual stages")


def bubble_fraction(stages: int, microbatches: int, schedule: str = "1f1b", virtual: int = 1) -> float:
    """Idle time / ideal time: (p - 1) / m, or (p - 1) / (v m) interleaved [Narayanan21].

    >>> bubble_fraction(8, 32), bubble_fraction(8, 32, "interleaved", 4)
    (0.21875, 0.0546875)
    """
    if stages <= 1:
        return 0.0
    v = virtual if schedule == "interleaved" else 1
    return (stages - 1) / (v * microbatches)


def inflight_fraction(stages: int, microbatches: int, schedule: str = "1f1b", virtual: int = 1) -> float:
    """Fraction of the shard's microbatches whose saved activations the busiest (first) stage holds at once."""
    if stages <= 1:
        return 1.0
    if schedule == "gpipe":
        return 1.0
    held = stages + ((stages - 1) / virtual if schedule == "interleaved" else 0.0)
    return min(1.0, held / microbatches)


def p2p_bytes_per_chip(tokens: float, d_model: int, act_bytes: float, tp: int, sp: bool, stages: int,
                       schedule: str = "1f1b", virtual: int = 1) -> float:
    """Bytes one chip sends per step to the next (forward) and previous (backward) stage: 2 x tokens x d_model x
    bytes (/ tp with sequence-parallel activations), v times for interleaved chunks; 0 with one stage.

    >>> p2p_bytes_per_chip(4096, 8192, 2, 8, True, 4)
    16777216.0
    """
    if stages <= 1:
        return 0.0
    v = virtual if schedule == "interleaved" else 1
    return 2.0 * tokens * d_model * act_bytes / (tp if sp else 1) * v
