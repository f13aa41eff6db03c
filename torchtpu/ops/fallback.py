"""The CPU fallback: ops with neither a lowering nor an accepted decomposition run on CPU, counted per op.

`torchtpu.fallback_counts()` shows what fell back; `TORCHTPU_CPU_FALLBACK=0` turns a fallback into an error
that names the op. The fallback copies tpu arguments to CPU, runs the op there, and copies results (and any
mutated arguments) back, so it is correct but slow.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._pytree import tree_map

from torchtpu import config
from torchtpu.profiler import events as _events

_counts: Counter[str] = Counter()
_lib: list[torch.library.Library] = []


def fallback_counts() -> dict[str, int]:
    return dict(_counts)


def reset_fallback_counts() -> None:
    _counts.clear()


def strict() -> bool:
    return not config.get("TORCHTPU_CPU_FALLBACK")


class NoLoweringError(NotImplementedError):
    pass


def _to_cpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.device.type == "tpu":
        return x.to("cpu")
    return x


def cpu_fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    name = str(op)
    if strict():
        raise NoLoweringError(
            f"{name} has no tpu lowering and TORCHTPU_CPU_FALLBACK=0 forbids running it on CPU. "
            "Set TORCHTPU_CPU_FALLBACK=1 to allow a (counted) CPU fallback.")
    _counts[name] += 1
    if _events.ACTIVE:  # a profiler is recording
        _events.on_fallback(name)
    from torchtpu.ops.out_rules import check_out_devices, first_tpu_device

    device = first_tpu_device((*args, *kwargs.values()))
    device = device or kwargs.get("device") or torch.device("tpu", torch.tpu.current_device())
    outs = [kwargs[a.name] for a in op._schema.arguments if a.kwarg_only and a.is_write and a.name in kwargs]
    if outs:  # out= tensors on another device are refused as CUDA does (not written through the host copy)
        ins = {k: v for k, v in kwargs.items() if all(v is not o for o in outs)}
        check_out_devices(args, ins, [t for o in outs for t in (o if isinstance(o, list | tuple) else (o,))], name)
    cpu_args = tree_map(_to_cpu, args)
    cpu_kwargs = tree_map(_to_cpu, kwargs)
    if "device" in cpu_kwargs and cpu_kwargs["device"] is not None:
        cpu_kwargs["device"] = torch.device("cpu")
    result = op(*cpu_args, **cpu_kwargs)
    # write back mutated arguments
    schema = op._schema
    for i, arg in enumerate(schema.arguments):
        if not arg.is_write:
            continue
        original = args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
        updated = cpu_args[i] if i < len(args) and not arg.kwarg_only else cpu_kwargs.get(arg.name)
        if isinstance(original, torch.Tensor) and original.device.type == "tpu":
            if original.shape != updated.shape:
                original.resize_(updated.shape)
            original.copy_(updated)
        elif isinstance(original, list | tuple):
            for o, u in zip(original, updated):
                if isinstance(o, torch.Tensor) and o.device.type == "tpu":
                    o.copy_(u)

    def back(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            for i, arg in enumerate(schema.arguments):
                if arg.is_write:
                    updated = cpu_args[i] if i < len(args) and not arg.kwarg_only else cpu_kwargs.get(arg.name)
                    if updated is x:
                        return args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
            return x.to(device)
        return x

    return tree_map(back, result)


def register() -> None:
    if _lib:
        return
    lib = torch.library.Library("_", "IMPL")
    lib.fallback(cpu_fallback, "PrivateUse1")
    _lib.append(lib)
