"""index_fill_, masked_fill_ and index_put_ into a tensor that overlaps itself (an expanded view), as ATen writes it.

ATen lets these ops write an expanded `self` (with a deprecation warning): its kernel writes the value through
each selected element, so a memory location holds the value when *any* of its aliases is selected
(`x = base.expand(2, 3, 2); x.index_fill_(1, tensor([1]), v)` fills all of `base`). A lowering computes the
logical result, whose write-back into the view leaves each memory location with one alias's value (the last
one's): an unselected alias put the old value back (fuzz seed 56: index_fill_.int_Scalar on a float32[2, 3]
expanded along dim 1 returned `self` unchanged). Here the op first runs on a contiguous copy (every check of
ATen's, in its order and words), then the selection is reduced with `any` over the expanded dims and filled into
the view with each expanded dim narrowed to one element: each memory location once. index_put_ so with one
value; with more values or accumulate=True, each write is mapped to its memory location and the locations take
the last value written through any alias (or the sum of all, in ATen's order): `_put_in_turn`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.execution.eager import overlaps_itself

_FILLS = frozenset({"index_fill", "masked_fill", "index_put", "_index_put_impl"})


def _distinct(t: torch.Tensor) -> torch.Tensor:
    """`t` with each expanded dimension (size > 1, stride 0) narrowed to its first element."""
    for d, (n, st) in enumerate(zip(t.shape, t.stride())):
        if st == 0 and n > 1:
            t = t.narrow(d, 0, 1)
    return t


def _put_in_turn(self: torch.Tensor, indices: Sequence[Any], values: torch.Tensor, accumulate: bool) -> None:
    """index_put_ of several values, or with accumulate=True, into `self` that overlaps itself through its expanded
    dims, as ATen's kernel writes it: the selected elements in turn, in C order of the indexed shape (its
    TensorIterator's order for contiguous indices and values), so each memory location keeps the value of the
    last write through any of its aliases, or adds every value written through them in that order."""
    distinct = _distinct(self)  # one element per memory location (overlaps_itself: stride 0 is all ATen detects)
    n = distinct.numel()
    memory = torch.arange(n, device=self.device).reshape(distinct.shape).expand(self.shape)
    where = torch.ops.aten.index.Tensor(memory, list(indices))  # each write's memory location, in write order
    if where.numel() == 0:
        return
    values = torch.broadcast_to(values.to(self.device), where.shape).reshape(-1)
    where = where.reshape(-1)
    flat = distinct.reshape(-1)
    if accumulate:
        written = flat.clone().index_put_((where,), values, accumulate=True)
    else:
        order = torch.arange(where.numel(), device=self.device)
        last = torch.full((n,), -1, dtype=torch.int64, device=self.device).scatter_reduce_(0, where, order, "amax")
        written = torch.where(last >= 0, values[last.clamp(min=0)], flat)
    distinct.copy_(written.reshape(distinct.shape))


def fill_expanded(op_name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Runs in-place op `op_name` ("aten.index_fill_.int_Scalar") as ATen does when it is index_fill_,
    masked_fill_ or index_put_ and its `self` overlaps itself; returns whether it did (else the caller runs it)."""
    parts = op_name.split(".")
    if len(parts) < 2 or parts[1].rstrip("_") not in _FILLS or not args:
        return False
    self = args[0]
    if not isinstance(self, torch.Tensor) or not overlaps_itself(self):
        return False
    full = self.clone(memory_format=torch.contiguous_format)
    if parts[1].rstrip("_") == "index_fill":
        _, dim, index, value = (*args, *kwargs.values())[:4]
        full.index_fill_(dim, index, value)  # ATen's checks (index dtype and range, value) before any write
        selected = torch.zeros(self.shape, dtype=torch.bool, device=self.device).index_fill_(dim, index, True)
    elif parts[1].rstrip("_") in ("index_put", "_index_put_impl"):
        _, indices, values, *rest = (*args, *kwargs.values())
        # ATen's checks of the indices and the values (the aten op: an index list may hold None, unindexed dims)
        torch.ops.aten.index_put_(full, list(indices), values, *rest[:1])
        if (rest and rest[0]) or values.numel() != 1:  # each alias a value of its own, or a sum over aliases
            _put_in_turn(self, indices, values, bool(rest and rest[0]))
            return True
        selected = torch.ops.aten.index_put_(torch.zeros(self.shape, dtype=torch.bool, device=self.device),
                                             list(indices), torch.ones((), dtype=torch.bool, device=self.device))
        value = values.reshape(()).to(self.dtype)
    else:
        _, mask, value = (*args, *kwargs.values())[:3]
        full.masked_fill_(mask, value)  # mask dtype, its broadcast to self, the value's rank and range
        selected = mask.to(self.device).expand(self.shape)
    for d, (n, st) in enumerate(zip(self.shape, self.stride())):
        if st == 0 and n > 1:
            selected = selected.any(d, keepdim=True)
    _distinct(self).masked_fill_(selected, value)
    return True
