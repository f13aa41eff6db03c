"""`dist.split_group` (and DeviceMesh's split path) for `TpuProcessGroup`: the backend handle c10d asks for, the split.

c10d's `split_group` (and `init_device_mesh` when the default group has a `device_id`) asks the parent group for
its backend on the accelerator (`pg._get_backend(torch.device("tpu"))`) and splits only when that backend says
`supports_splitting`. `TpuProcessGroup` has no C++ backend, so it answers with a `SplitHandle`: the few attributes
c10d reads (`supports_splitting`, `options`, `name()`, the no-op eager connect / sequence-number / no-color split
hooks). The split itself builds a fresh `TpuProcessGroup` of the member ranks over the parent's store under the
split's unique (hashed) group name, so two subgroups never share store keys; non-members get None, as with NCCL.
`dist.new_group` needs none of this: c10d calls the backend factory with the subgroup's ranks.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from torchtpu.distributed import BACKEND_NAME

if TYPE_CHECKING:
    from torchtpu.distributed.process_group import TpuProcessGroup


class SplitHandle:
    """What `TpuProcessGroup._get_backend(tpu)` returns: the backend attributes c10d's split path reads."""

    supports_splitting = True
    supports_coalescing = False
    supports_time_estimate = False

    def __init__(self, pg: TpuProcessGroup) -> None:
        self._pg = pg
        self._splits = 0
        self.options = SimpleNamespace(backend=BACKEND_NAME, timeout=pg._timeout)  # c10d deep-copies it

    def name(self) -> str:
        return BACKEND_NAME

    def eager_connect_single_device(self, device: torch.device | None) -> None:
        """The gloo transport connected when the group was made; nothing to do."""

    def perform_nocolor_split(self, device: torch.device) -> None:
        """A rank outside a new subgroup takes no part in it (no communicator to split)."""

    def _set_sequence_number_for_group(self) -> None:
        """Collectives are numbered by the group's own agreement counter (agree.py)."""

    def comm_split_count(self) -> int:
        return self._splits

    def __repr__(self) -> str:
        return f"SplitHandle({self._pg!r})"


def requested_device_id() -> torch.device | None:
    """The `device_id` given to `init_process_group` / `new_group`, which c10d sets as `bound_device_id` on the
    group it built, but not on a Python ProcessGroup returned by the factory (c10d replaces its group object by
    ours after setting it: a TODO in `_new_process_group_helper`). Read from that function's frame; None when
    called otherwise."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_new_process_group_helper" and "distributed_c10d" in frame.f_code.co_filename:
            device = frame.f_locals.get("device_id")
            return device if isinstance(device, torch.device) and device.type == "tpu" else None
        frame = frame.f_back
    return None


def get_backend(pg: TpuProcessGroup, device: torch.device | str) -> Any:
    """`pg._get_backend(device)`: the split handle for tpu, the inner gloo backend for cpu where cpu is allowed."""
    dev = torch.device(device)
    if dev.type == "tpu":
        return pg._split_handle
    if dev.type == "cpu" and pg._cpu_allowed():
        return pg._gloo._get_backend(dev)
    raise RuntimeError(f"tpu_dist group {pg!r} has no backend for device {dev}; it serves 'tpu' (and 'cpu' when "
                       "made without a backend or with 'cpu:gloo,tpu:tpu_dist')")


def split(pg: TpuProcessGroup, new_ranks: list[int], timeout: timedelta | None = None, opts: Any = None,
          group_name: str | None = None, group_desc: str | None = None,
          device_types: list[torch.device] | None = None) -> TpuProcessGroup | None:
    """`pg.split_group(...)`: a new group of `new_ranks` (ranks of `pg`), or None on a rank not among them."""
    from torchtpu.distributed.process_group import TpuProcessGroup

    ranks = sorted(int(r) for r in new_ranks)
    if len(set(ranks)) != len(ranks) or not ranks or ranks[0] < 0 or ranks[-1] >= pg.size():
        raise ValueError(f"split_group ranks {list(new_ranks)} must be distinct ranks of the parent group "
                         f"(0..{pg.size() - 1})")
    if device_types and any(torch.device(d).type != "tpu" for d in device_types):
        raise ValueError(f"tpu_dist split_group keeps the 'tpu' backend only, got device_types={device_types}")
    pg._split_handle._splits += 1
    if pg.rank() not in ranks:
        return None
    if not group_name:
        raise ValueError("tpu_dist split_group needs the subgroup's group_name (c10d's split_group passes one)")
    store = dist.PrefixStore(f"tpu_dist/split/{group_name}/", pg.get_group_store())
    child = TpuProcessGroup(store, ranks.index(pg.rank()), len(ranks), timeout or pg._timeout)
    child.setGroupName(group_name)
    child.setGroupDesc(group_desc or f"{pg.getGroupDesc()}:split:{pg._split_handle._splits}")
    return child
