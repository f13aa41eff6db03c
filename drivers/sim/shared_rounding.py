"""Dots of one plan that read the same value round it to bf16 once per run (sim/mxu_round.py `RoundMemo`).

A DEFAULT-precision float32 dot in the fast (BLAS) mode rounds both operands to bf16 values before the product.
Where several dot steps read the same value slot (a normalized activation feeding the q, k and v projections,
an attention gradient read by two products), `share_rounding` wraps those steps' fast kernels so that the first
reader in the plan's order keeps the rounded array and the later ones, given the same operand in the same
layout, take it instead of rounding again; the last reader drops it. Readers of reshapes and transposes of a
value (each projection of a compiled model reshapes its input) count as readers of that value. Only the fast
path's `round_operand` calls go through the memo: the exact mode, HIGH and HIGHEST precision and other dtypes
compute as before. A rounded array is the same bits whether kept or made again (tests/test_mxu_round_once.py
compares every mode).

Measured (session p27a, medium compiled steps, hidden 256 x 2 x 256 tokens, thread CPU time inside
`round_operand`, old and new in one process, median of 3): Llama train 19.1 -> 16.4 ms per step, fwd 5.5 -> 5.2;
GPT-2 train 16.0 -> 14.0, fwd 3.4 -> 3.4; zoo vit medium unchanged (its repeats are across programs). The rest
of the repeated rounding is across programs (session p28b, benchmarks/dot_repeats.py, one medium train step):
Llama rounds 92.9 MiB of operands, 26.5 MiB of them values a dot of an earlier program (the forward) rounded
already, 15.5 MiB of those at the same address (weights read by the forward and the backward, activations the
forward saved as they are) and 11 MiB in other memory (saved copies); GPT-2 74.9, 21.5 and 15.0 MiB. No memo
serves those: nothing here proves a buffer unchanged between two launches (the caller may write it in between).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torchtpu.sim.mxu_round import LAST, STORE, USE, RoundMemo

__all__ = ["ENABLED", "share_rounding"]

# fast.py's kernels of these ops return a view of their operand where numpy can (a reshape that must copy gives
# new memory, which the memo's geometry check then tells apart)
_VIEWS = frozenset({"reshape", "transpose"})
# False: plans built from now on are not wrapped, and wrapped ones round every operand at every dot (benchmarks
# compare both in one process)
ENABLED = True


def _shares(step: Any) -> bool:
    """A fast float32 DEFAULT dot_general step whose kernel takes its two operands as they are."""
    op = step.op
    return (op.name == "dot_general" and step.fast is not None and len(step.inputs) == 2
            and str(op.attr("precision")).upper() == "DEFAULT"
            and [v.dtype for v in op.inputs] == ["float32", "float32"])


def share_rounding(steps: Sequence[Any]) -> int:
    """Wraps the fast kernels of the dot steps that read a slot another such step also reads (module docstring);
    returns how many steps it wrapped."""
    if not ENABLED:
        return 0
    root: dict[int, int] = {}  # a view step's result slot -> the slot it views (through chains of views)
    readers: dict[int, list[tuple[int, int]]] = {}  # root slot -> (step position, operand side) in plan order
    for n, step in enumerate(steps):
        if step.op.name in _VIEWS and step.fast is not None and len(step.inputs) == 1:
            root[step.out] = root.get(step.inputs[0], step.inputs[0])
        if _shares(step):
            for side, slot in enumerate(step.inputs):
                readers.setdefault(root.get(slot, slot), []).append((n, side))
    roles: dict[int, list[Any]] = {}
    for slot, reads in readers.items():
        if len(reads) < 2:
            continue
        for k, (n, side) in enumerate(reads):
            role = STORE if k == 0 else LAST if k == len(reads) - 1 else USE
            roles.setdefault(n, [None, None])[side] = (slot, role)
    if not roles:
        return 0
    memo = RoundMemo()
    for n, sides in roles.items():
        steps[n].fast = _wrapped(steps[n].fast, memo, tuple(sides))
    return len(roles)


def _wrapped(fast: Callable[..., Any], memo: RoundMemo, roles: tuple) -> Callable[..., Any]:
    call = memo.call
    module = globals()

    def dot(*args: Any, **kwargs: Any) -> Any:
        if not module["ENABLED"]:
            return fast(*args, **kwargs)
        return call(fast, roles, args, kwargs)

    dot.__dict__.update(getattr(fast, "__dict__", {}))  # markers such as `writes_out` stay as they were
    dot.shared_rounding = (memo, roles)  # type: ignore[attr-defined]
    return dot
