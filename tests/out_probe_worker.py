"""The CPU probe of tests/test_out_dtype.py, in its own process: `python out_probe_worker.py START` prints one JSON
line per registered out= overload from index START on: [cpu refuses, dtype accepted, dtype tried, message], or
null when no fuzzer call CPU accepts. A separate process (not a fork of the test process, whose thread pools
can hold locks a fork inherits): some CPU kernels crash on fuzzed arguments, and the test restarts past them."""

from __future__ import annotations

import json
import sys
import warnings

import torch

from torchtpu.fuzz.args import Unsupported, make_call
from torchtpu.fuzz.overloads import registered
from torchtpu.fuzz.runner import call_rng
from torchtpu.ops import registry

# Same kind, castable, different: the out dtype the probe substitutes for the one CPU accepted.
_OTHER = {torch.bool: torch.uint8, torch.uint8: torch.int16, torch.int8: torch.int16, torch.int16: torch.int32,
          torch.int32: torch.int64, torch.int64: torch.int32, torch.float16: torch.float32,
          torch.bfloat16: torch.float32, torch.float32: torch.float64, torch.float64: torch.float32,
          torch.complex64: torch.complex128, torch.complex128: torch.complex64}
_DTYPE_WORDS = ("dtype", "type", "Found dtype", "scalar type", "non-boolean")



def out_overloads() -> list[torch._ops.OpOverload]:
    return [op for op in registered() if registry.schema_kind(op) == "out"]


def _probe(op: torch._ops.OpOverload) -> list | None:
    """[cpu refuses, dtype accepted, dtype tried, message] for the first fuzzer call CPU accepts, or None."""
    names = registry._out_args(op)
    for seed in range(16):
        try:
            call = make_call(op, call_rng(seed, str(op), 0), seed)
        except Unsupported:
            return None
        except Exception:
            continue
        args, kw = call.materialize("cpu")
        first = kw[names[0]]
        if isinstance(first, list) and not first:
            continue
        try:
            op(*args, **kw)
        except Exception:
            continue
        accepted = (first[0] if isinstance(first, list) else first).dtype
        if accepted not in _OTHER:
            continue
        args, kw = call.materialize("cpu")
        other = torch.empty(0, dtype=_OTHER[accepted])
        kw[names[0]] = [other, *kw[names[0]][1:]] if isinstance(kw[names[0]], list) else other
        try:
            op(*args, **kw)
            return [False, str(accepted), str(other.dtype), ""]
        except Exception as e:  # a raise about something else than the dtype proves nothing
            msg = str(e)
            return [True, str(accepted), str(other.dtype), msg] if any(w in msg for w in _DTYPE_WORDS) else None
    return None


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    for i, op in enumerate(out_overloads()[int(sys.argv[1]):], int(sys.argv[1])):
        try:
            verdict = _probe(op)
        except Exception:
            verdict = None
        print(json.dumps([i, str(op), verdict]), flush=True)
