"""tpu_dist collectives on the pjrt driver as compiled XLA collectives (drivers/pjrt/collectives.py).

When the pjrt driver joined JAX's distributed runtime (under torchrun: TORCHTPU_PJRT_DISTRIBUTED), `plan` picks
the collectives XLA runs on the device buffers themselves: all_reduce and broadcast of one tensor, all_gather
(list and into_tensor), reduce_scatter (list and tensor) and even all_to_all_single, for contiguous tensors of
float32/bfloat16/float16/int32/int16/int8/uint8 and the reduce ops SUM, AVG (floats), MAX, MIN, PRODUCT, BAND,
BOR, BXOR (integers). Everything else keeps the host path through gloo (process_group.py): the coalesced and
list-of-many variants, reduce, gather, scatter, uneven and list all_to_all, strided views, 64-bit and bool dtypes
(JAX runs without x64), PREMUL_SUM (its scale lives in the op object), groups whose ranks are not JAX processes.
The ranks agree on the path: each says whether it can (an extra of the agreement), and XLA runs only if all can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from torchtpu import runtime


@dataclass
class Plan:
    kind: str
    op: str | None
    inputs: list[torch.Tensor]  # concatenated (flat, in order): this rank's shard
    outputs: list[torch.Tensor]  # receive consecutive pieces of this rank's result
    root: int = 0


def _op(opts: Any) -> str:
    red = getattr(opts.reduceOp, "op", opts.reduceOp)
    return str(red).rsplit(".", 1)[-1]


def _shape(method: str, args: tuple, size: int) -> Plan | None:
    if method == "allreduce" and len(args[0]) == 1:
        return Plan("all_reduce", _op(args[1]), list(args[0]), list(args[0]))
    if method == "broadcast" and len(args[0]) == 1 and args[1].rootTensor == 0:
        return Plan("broadcast", None, list(args[0]), list(args[0]), int(args[1].rootRank))
    if method == "allgather" and len(args[1]) == 1:
        return Plan("all_gather", None, list(args[1]), list(args[0][0]))
    if method == "all_gather_single":
        return Plan("all_gather", None, [args[1]], [args[0]])
    if method == "reduce_scatter" and len(args[0]) == 1:
        return Plan("reduce_scatter", _op(args[2]), list(args[1][0]), list(args[0]))
    if method == "reduce_scatter_single":
        return Plan("reduce_scatter", _op(args[2]), [args[1]], [args[0]])
    if method == "all_to_all_single":
        output, input_, out_splits, in_splits = args[:4]
        even = all(len(set(s)) <= 1 for s in (out_splits, in_splits))
        if even and output.shape == input_.shape and (input_.shape[0] if input_.dim() else 1) % size == 0:
            return Plan("all_to_all", None, [input_], [output])
    return None


def process_ranks(pg: Any) -> list[int] | None:
    """The JAX process ids of the group's ranks, in group order (None: some rank is no JAX process)."""
    coll = getattr(runtime.driver(), "collectives", None)
    if coll is None:
        return None
    try:
        ranks = dist.get_process_group_ranks(pg)
    except (ValueError, RuntimeError, KeyError):
        return None
    return ranks if dist.get_world_size() == coll.process_count else None


def plan(pg: Any, method: str | Any, args: tuple) -> Plan | None:
    """The XLA plan for this call, or None (host path); collectives this module covers are listed above."""
    if not isinstance(method, str) or getattr(runtime.driver(), "collectives", None) is None:
        return None
    p = _shape(method, args, pg.size())
    if p is None or p.op == "PREMUL_SUM":
        return None
    tensors = [*p.inputs, *p.outputs]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1 or not all(t.is_contiguous() and t.device.type == "tpu" for t in tensors):
        return None
    from torchtpu.ops.tracing import TORCH_TO_IR

    dtype = TORCH_TO_IR.get(dtypes.pop())
    if dtype is None or not runtime.driver().collectives.supports(p.kind, p.op, dtype):
        return None
    if sum(t.numel() for t in p.inputs) == 0 or process_ranks(pg) is None:
        return None
    return p


def run(pg: Any, p: Plan, device: int, timeout_s: float) -> None:
    """Runs the plan on the device buffers: slices of the input storages in, the result written into the output
    storages; no host copy."""
    drv = runtime.driver()
    coll = drv.collectives
    for fn in runtime.host_access:  # poisoned (never written) inputs fail as a host read would
        for t in p.inputs:
            fn(t, False)
    pieces = [drv.storage_elements(*runtime.storage_of(t), t.storage_offset(), t.numel()) for t in p.inputs]
    local = pieces[0] if len(pieces) == 1 else coll.concat(pieces)
    ranks = process_ranks(pg)
    result = coll.run(p.kind, p.op, local, ranks, device, p.root, timeout_s)
    offset = 0
    for t in p.outputs:
        drv.write_elements(*runtime.storage_of(t), t.storage_offset(), coll.slice(result, offset, t.numel()))
        offset += t.numel()
        for fn in runtime.host_access:
            fn(t, True)
