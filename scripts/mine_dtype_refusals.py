"""Mines the dtype refusals CPU's kernels make that CUDA's make too, from PyTorch's OpInfo samples, into
torchtpu/ops/dtype_refusals.json (the table torchtpu.ops.dtype_refusals enforces on "tpu").

For every OpInfo and every dtype that neither CPU nor CUDA supports for it (the OpInfo's own dtype lists), the
first samples run on CPU under a dispatch mode; where CPU raises, the innermost ATen op that raised is recorded
with the dtype of its checked operand (`self`, or self and other promoted for binary ops), CPU's exception class
and message. Run again after a torch upgrade:

    python scripts/mine_dtype_refusals.py [--out torchtpu/ops/dtype_refusals.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._python_dispatch import TorchDispatchMode

from torchtpu.ops.dtype_refusals import DTYPE_WORDS, checked_dtype, overload_name, packet_name

DTYPES = (torch.complex64, torch.complex128, torch.bool, torch.float32, torch.float64, torch.bfloat16,
          torch.float16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
RUNTIME_CLASSES = ("RuntimeError", "NotImplementedError", "TypeError", "ValueError")
# words naming one operand ("normal expects standard deviation to be non-complex": a complex mean computes)
OPERAND_WORDS = re.compile(r"standard deviation|\bX[12] got|\bweight\b|\btarget\b|\bindex\b|\bmask\b")

class _Raiser(TorchDispatchMode):
    """Records each ATen call that returned (op packet, checked key) in `seen`, and marks an exception with the
    innermost call it came out of."""

    def __init__(self, seen: list[tuple[str, str]]) -> None:
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        key = checked_dtype(func, args, kwargs)
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            if not hasattr(exc, "_torchtpu_raiser") and key is not None:
                exc._torchtpu_raiser = (packet_name(func), key, overload_name(func))
            raise
        if key is not None and all(a.dim() > 0 and a.numel() > 0 for a in args if isinstance(a, torch.Tensor)):
            self.seen.append((packet_name(func), key))  # empty and 0-dim operands return before the dtype check
            self.seen.append((overload_name(func), key))
        return result


def _calls(op: Any, dtype: torch.dtype) -> Iterator[tuple[Exception | None, tuple[str, str] | None,
                                                          list[tuple[str, str]]]]:
    """Per sample: CPU's exception or None, (op packet, checked key) of the innermost raising call, and the
    (op packet, checked key) of every call that returned."""
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:3]
    except Exception:
        return
    for sample in samples:
        seen: list[tuple[str, str]] = []
        try:
            with warnings.catch_warnings(), _Raiser(seen):
                warnings.simplefilter("ignore")
                op(sample.input, *sample.args, **sample.kwargs)
        except Exception as exc:
            raiser = getattr(exc, "_torchtpu_raiser", None)
            yield exc, raiser, seen
            continue
        yield None, None, seen


def mine(only: tuple[str, ...] | None = None) -> tuple[dict[str, dict[str, list[str]]], int]:
    """(the refusals, how many were dropped because CPU computed the same op and key in another call);
    `only`: the OpInfo names to run (all by default)."""
    rules: dict[str, dict[str, list[str]]] = {}
    overloads: dict[str, dict[str, list[str]]] = {}
    computed: set[tuple[str, str]] = set()
    for op in op_db:
        if only is not None and op.name not in only:
            continue
        cpu, cuda = op.supported_dtypes("cpu"), op.supported_dtypes("cuda")
        for dtype in DTYPES:
            refused = dtype not in cpu and dtype not in cuda
            for exc, raiser, seen in _calls(op, dtype):
                computed.update(seen)
                if not refused or exc is None or raiser is None:
                    continue
                if type(exc).__name__ not in RUNTIME_CLASSES or not DTYPE_WORDS.search(str(exc)):
                    continue
                if OPERAND_WORDS.search(str(exc)):
                    continue  # the refusal is about one operand's dtype, which the promoted key cannot tell
                packet, key, overload = raiser
                if key.split("|")[0].removeprefix("dtype=") != str(dtype).removeprefix("torch."):
                    continue  # the kernel refused another operand's dtype than the one under test
                refusal = [type(exc).__name__, str(exc).split("\n")[0]]
                rules.setdefault(packet, {}).setdefault(key, refusal)
                overloads.setdefault(overload, {}).setdefault(key, refusal)  # max.default's words, not max.dim's
    dropped = 0
    for level in (rules, overloads):  # a key CPU computed in another call of the op (or overload) is not a refusal
        for name, keys in list(level.items()):
            for key in [k for k in keys if (name, k) in computed]:
                del keys[key]
                dropped += level is rules
            if not keys:
                del level[name]
    for overload, keys in overloads.items():  # an overload's own refusals and words, where the packet's differ
        packet = overload.split(".")[0]
        own = {k: v for k, v in keys.items() if rules.get(packet, {}).get(k) != v}
        if own:
            rules[overload] = own
    return {k: dict(sorted(v.items())) for k, v in sorted(rules.items())}, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parents[1] / "torchtpu/ops/dtype_refusals.json"))
    args = parser.parse_args()
    rules, dropped = mine()
    pathlib.Path(args.out).write_text(json.dumps(rules, indent=1) + "\n")
    print(f"{len(rules)} ops, {sum(map(len, rules.values()))} (op, dtype) refusals -> {args.out} "
          f"({dropped} dropped: CPU computed the same op and dtype in another call)")


if __name__ == "__main__":
    main()
