"""CPU index operands of tpu indexing ops: copied to `self`'s device at the op's entry.

CUDA's advanced indexing (`x[idx]`, index_put_) moves a CPU index to the indexed tensor's device; torchtpu does
the same there (ops/indexing.py) and, more permissively than CUDA, for the operands of the other indexing ops
that only say *where* (index_select, index_fill, index_add/copy/reduce, gather, scatter*, put, the masks of
masked_fill/masked_scatter/masked_select): an index or mask has the same values on either device, so copying it
cannot change a result. The operands that carry data (scatter's src, index_add's source, masked_scatter's source,
`self`) still raise the device-mix error, as CUDA does. A 0-dim CPU tensor is left as it is (eager folds it in as a
scalar). Each op declares its index operands once, by schema position and name, through `moves(...)`, given to
`@lower(..., prepare=...)`.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops.registry import Prepare


def _on_host(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() > 0


def to_device_of(self: Any, x: Any) -> Any:
    """`x` copied to tpu `self`'s device when `x` is a CPU tensor of one or more dims; else `x` itself."""
    if isinstance(self, torch.Tensor) and self.device.type == "tpu" and _on_host(x):
        return x.to(self.device)
    return x


def moves(*operands: tuple[int, str]) -> Prepare:
    """A prepare step that copies each CPU index operand (schema position, name; passed positionally or by
    keyword) to the device of the call's first argument; the call's own tuple and dict when nothing moved."""

    def prepare(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        self = args[0] if args else None
        if not isinstance(self, torch.Tensor) or self.device.type != "tpu":
            return args, kwargs
        new_args, new_kwargs = args, kwargs
        for pos, name in operands:
            if pos < len(args):
                if _on_host(args[pos]):
                    new_args = (*new_args[:pos], args[pos].to(self.device), *new_args[pos + 1:])
            elif _on_host(kwargs.get(name)):
                new_kwargs = {**new_kwargs, name: kwargs[name].to(self.device)}
        return new_args, new_kwargs

    return prepare


INDEX_AT_2 = moves((2, "index"))  # (self, dim, index, ...): index_select, gather, scatter*, index_add/copy/fill
INDEX_AT_1 = moves((1, "index"))  # put(self, index, source)
MASK_AT_1 = moves((1, "mask"))  # masked_fill(self, mask, value), masked_scatter(self, mask, source)
