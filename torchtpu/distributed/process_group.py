"""`TpuProcessGroup`: the c10d process group behind backend "tpu_dist" (one process per simulated chip).

torch 2.13 accepts a Python subclass of `torch._C._distributed_c10d.ProcessGroup` from a backend factory (a Python
`Backend` subclass has no constructor), and then that object is the whole group, for every device. Data moves
through a real gloo group built on the same store (prefix "tpu_dist/gloo/"): every tpu tensor is copied to a
host buffer, the same gloo call a cpu program would make runs on the host buffers (so results are those of gloo
on CPU, bit for bit), and outputs are written back to the tpu tensors. Before moving data the ranks agree on the
collective and exchange their simulated clocks (agree.py); afterwards each rank's clock is charged the simulated
ICI time (clock.py). On the pjrt driver under JAX's distributed runtime, the collectives every rank can run as
XLA collectives on the device buffers go that way instead (xla_route.py); PREMUL_SUM premultiplies (premul.py).

cpu tensors: when the group was made without a backend (`init_process_group()`, which picks "tpu_dist" for
"tpu") or with a "cpu:..." entry ("cpu:gloo,tpu:tpu_dist"), they go straight to the inner gloo group, uncharged,
as they would with gloo. With backend="tpu_dist" alone they are an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist

from torchtpu import runtime
from torchtpu.distributed import BACKEND_NAME, clock, premul, subgroups, topology, xla_route
from torchtpu.distributed.agree import Agreement, Agreer
from torchtpu.distributed.p2p import PointToPoint, host_copy
from torchtpu.distributed.work import TpuWork, describe
from torchtpu.execution import deferred

_LOOPBACK = ("localhost", "::1")


def _gloo_device() -> Any:
    """The gloo transport device: GLOO_SOCKET_IFNAME when set, loopback when MASTER_ADDR is, else gloo's default."""
    gloo = dist.ProcessGroupGloo
    iface = os.environ.get("GLOO_SOCKET_IFNAME")
    if iface:
        return gloo.create_device(interface=iface.split(",")[0])
    host = os.environ.get("MASTER_ADDR", "")
    if host.startswith("127.") or host in _LOOPBACK:
        return gloo.create_device(hostname="127.0.0.1")
    return gloo.create_default_device()


def _inner_gloo(store: dist.Store, rank: int, size: int, timeout: timedelta) -> dist.ProcessGroup:
    """A c10d ProcessGroup with one gloo backend for cpu: the full ProcessGroup API over gloo."""
    opts = dist.ProcessGroupGloo._Options()
    opts._timeout = timeout
    opts._devices = [_gloo_device()]
    backend = dist.ProcessGroupGloo(store, rank, size, opts)
    pg = dist.ProcessGroup(store, rank, size)
    pg._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    pg._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, backend)
    return pg


def _tensors(*args: Any) -> list[torch.Tensor]:
    """Every tensor in `args` (tensors and nested lists of them), in order."""
    out: list[torch.Tensor] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_tensors(*a))
    return out


def _on_host(a: Any, staged: dict[int, torch.Tensor]) -> Any:
    """`a` (an argument of a collective) with its tpu tensors replaced by their staged host buffers. A module
    function: a nested recursive closure would be a reference cycle keeping `staged`, V bytes a call, alive until
    the garbage collector ran (the 256 MiB runs' growing memory)."""
    if isinstance(a, torch.Tensor):
        return staged[id(a)]
    if isinstance(a, list):
        return [_on_host(x, staged) for x in a]
    return a


def _nbytes(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _tensor_index(opts: Any) -> str:
    return f".{opts.rootTensor}" if opts.rootTensor else ""


def _op_name(op: Any) -> str:
    red = getattr(op, "op", op)
    return str(red).rsplit(".", 1)[-1]



def _row_bytes(t: torch.Tensor) -> int:
    """Bytes of one row (one slice along dim 0) of `t`; a 0-d tensor is one row."""
    return t.numel() // max(t.shape[0], 1) * t.element_size() if t.dim() else t.element_size()

class TpuProcessGroup(dist.ProcessGroup):
    """c10d process group for tpu tensors over host gloo, charging simulated ICI time (module docstring)."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        self._my_rank, self._my_size = rank, size
        self._names: dict[str, str] = {}
        self._timeout = timeout
        # torchrun's elastic restarts may hand the new workers the store of the failed attempt: its keys (the dead
        # ranks' gloo addresses, their failure reports) must not be read as this attempt's
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        scope = "" if attempt == "0" else f"attempt{attempt}/"
        self._gloo = _inner_gloo(dist.PrefixStore(f"tpu_dist/gloo/{scope}", store), rank, size, timeout)
        self._agreer = Agreer(self._gloo, dist.PrefixStore(f"tpu_dist/diag/{scope}", store), rank, size,
                              timeout.total_seconds())
        self._agreer.group_name = self.getGroupName
        self._p2p = PointToPoint(self._gloo, rank, size, self)
        self._coalesced: list[TpuWork] | None = None  # the Works of an open _coalescing_manager(device=tpu)
        self._store = store
        self._split_handle = subgroups.SplitHandle(self)

    def getBackendName(self) -> str:  # noqa: N802 - the C++ name the trampoline looks up
        return BACKEND_NAME

    def _get_backend_name(self) -> str:
        return BACKEND_NAME

    # c10d keeps a group's name in its backends; this group has none, so it keeps them itself
    def getGroupName(self) -> str:  # noqa: N802 - C++ names the trampoline looks up
        return self._names.get("name", "")

    def setGroupName(self, name: str) -> None:  # noqa: N802
        self._names["name"] = name

    def getGroupDesc(self) -> str:  # noqa: N802
        return self._names.get("desc", "")

    def setGroupDesc(self, desc: str) -> None:  # noqa: N802
        self._names["desc"] = desc

    # c10d's split path (split_group, DeviceMesh with a device_id): subgroups.py
    def _get_backend(self, device: torch.device) -> Any:
        return subgroups.get_backend(self, device)

    def split_group(self, new_ranks: list[int], timeout: timedelta | None = None, opts: Any = None,
                    group_name: str | None = None, group_desc: str | None = None,
                    device_types: list[torch.device] | None = None) -> TpuProcessGroup | None:
        return subgroups.split(self, new_ranks, timeout, opts, group_name, group_desc, device_types)

    def get_group_store(self) -> dist.Store:
        return self._store

    @property
    def _device_types(self) -> list[torch.device]:
        """c10d's pick for object collectives and barrier: cpu when the group has its gloo side, else tpu."""
        return [torch.device("cpu"), torch.device("tpu")] if self._cpu_allowed() else [torch.device("tpu")]

    def __repr__(self) -> str:
        return f"TpuProcessGroup(rank={self._my_rank}, size={self._my_size})"

    # ------------------------------------------------------------------ the common path
    def _cpu_allowed(self) -> bool:
        from torch.distributed import distributed_c10d

        world = distributed_c10d._world
        entry = world.pg_map.get(self)
        if entry is None:
            return False
        config = str(world.pg_backend_config.get(self, ""))
        return str(entry[0]) == "undefined" or "cpu:" in config or "cpu:" in str(entry[0])

    def _placement(self, kind: str, tensors: Sequence[torch.Tensor]) -> tuple[int | str | None, str]:
        """Where the collective runs: a tpu device index, "cpu" (straight to gloo), or None with an error."""
        types = {t.device.type for t in tensors}
        if not tensors or types == {"tpu"}:
            indices = {t.device.index or 0 for t in tensors} or {torch.tpu.current_device()}
            if len(indices) > 1:
                return None, (f"{kind} got tensors on several tpu devices ({sorted(indices)}); one process drives "
                              "one chip: put them on one device")
            return indices.pop(), ""
        if types == {"cpu"}:
            if self._cpu_allowed():
                return "cpu", ""
            return None, (f"{kind} got a cpu tensor, but this group's backend is 'tpu_dist' alone, which moves "
                          "tpu tensors only. Move the tensors to 'tpu', or create the group with "
                          "init_process_group() (no backend) or backend='cpu:gloo,tpu:tpu_dist' so that cpu "
                          "tensors go through gloo")
        return None, f"{kind} got tensors on {sorted(types)}; all tensors of one collective must be on 'tpu'"

    def _run(self, kind: str, method: str | Callable[..., dist.Work], args: tuple, inputs: Sequence[torch.Tensor],
             outputs: Sequence[torch.Tensor], signature: str, error: str = "",
             nbytes: Callable[[Agreement], float] | None = None, extras: Sequence[int] = (),
             check: Callable[[list[list[int]]], str] | None = None, read_only_inputs: bool = False,
             scale: bool = False) -> dist.Work:
        """One collective: agree, move the host copies through `self._gloo.<method>` (or `method(*host args)`),
        write back, charge (`scale`: plus a premultiply of the inputs, premul.py)."""
        where, placement_error = self._placement(kind, [*inputs, *outputs])
        if where == "cpu":
            return getattr(self._gloo, method)(*args)
        error = placement_error or error
        t0 = time.perf_counter()
        deferred.flush()
        own = clock.local_start(where) if where is not None else 0.0
        # pjrt under JAX's distributed runtime: XLA's own collectives on the device buffers where every rank can
        plan = xla_route.plan(self, method, args) if where is not None and not error else None
        xla_flag = getattr(runtime.driver(), "collectives", None) is not None
        if xla_flag:
            extras = [*extras, int(plan is not None)]
        agreement = self._agreer.agree(kind, signature, error, own, extras, check)
        if xla_flag and all(row[-1] for row in agreement.extras) and plan is not None:
            return self._run_xla(kind, plan, where, agreement, own, t0, nbytes, outputs)
        staged: dict[int, torch.Tensor] = {}
        written = {id(t) for t in outputs}
        for t in inputs:
            # gloo only reads the input of the single-tensor gathers, reduce-scatters and all-to-alls: it reads the
            # device buffer itself (zero-copy for the simulator), saving a host copy of V per call
            zero_copy = read_only_inputs and id(t) not in written and t.is_contiguous()
            staged.setdefault(id(t), runtime.host_tensor(t) if zero_copy else host_copy(t))
        for t in outputs:
            staged.setdefault(id(t), torch.empty(t.shape, dtype=t.dtype))

        what = f"{kind} #{self._agreer.seq}"
        try:
            host_args = [_on_host(a, staged) for a in args]
            if callable(method):
                self._agreer.gloo_wait(what, method(*host_args))
            elif method:
                self._agreer.gloo_wait(what, getattr(self._gloo, method)(*host_args))
            if outputs:
                deferred.flush()
            for t in outputs:
                runtime.write_from_host(t, staged[id(t)])
        finally:
            staged.clear()  # the host copies (V each) go now, not at the next garbage collection
        v = nbytes(agreement) if nbytes is not None else float(_nbytes(outputs or inputs))
        seconds = (clock.collective_seconds(kind, v, self._my_size, clock.chip_of(where), self)
                   if clock.timeline_of(where) is not None else 0.0)  # pjrt: real devices, no simulated clock
        if scale and clock.timeline_of(where) is not None:
            seconds += premul.scale_seconds(float(_nbytes(inputs)), clock.chip_of(where))
        done = clock.charge(where, kind, agreement.start, seconds, v, own, time.perf_counter() - t0,
                            latest=agreement.latest)
        return self._track(TpuWork(list(outputs), done=done))

    def _run_xla(self, kind: str, plan: xla_route.Plan, where: int, agreement: Agreement, own: float, t0: float,
                 nbytes: Callable[[Agreement], float] | None, outputs: Sequence[torch.Tensor]) -> TpuWork:
        """The agreed collective as a compiled XLA collective (xla_route.py); a peer that dies mid-way raises
        the agreer's failure (naming the missing ranks) once the group's timeout has passed."""
        try:
            xla_route.run(self, plan, where, self._timeout.total_seconds())
        except RuntimeError as exc:
            raise self._agreer.failure(f"{kind} #{self._agreer.seq}", exc) from exc
        v = nbytes(agreement) if nbytes is not None else float(_nbytes(outputs))
        done = clock.charge(where, kind, agreement.start, 0.0, v, own, time.perf_counter() - t0,
                            latest=agreement.latest)
        return self._track(TpuWork(list(outputs), done=done))

    def _track(self, work: TpuWork) -> TpuWork:
        """Keeps `work` for the open device coalescing block, if any (`_end_coalescing` returns them as one)."""
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    def _check_dtypes(self, tensors: Sequence[torch.Tensor]) -> str:
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) <= 1:
            return ""
        return f"tensors of one collective must share a dtype, got {sorted(map(str, dtypes))}"

    def _reduction(self, kind: str, method: str, args: tuple, inputs: Sequence[torch.Tensor],
                   outputs: Sequence[torch.Tensor], signature: str, error: str = "", **kw: Any) -> dist.Work:
        """`_run` for a reduction; a `ReduceOp.PREMUL_SUM` on tpu tensors becomes the inputs' host copies times the
        factor, then gloo's SUM (premul.py). args[-1] are the options; args[0] are the inputs of the in-place
        reductions (all_reduce, reduce), args[1] those of the reduce-scatters (read, not written)."""
        opts = args[-1]
        factor = premul.factor_of(opts.reduceOp)
        if factor is None or self._placement(kind, [*inputs, *outputs])[0] == "cpu":
            return self._run(kind, method, args, inputs, outputs, signature, error, **kw)
        error = error or premul.check(factor, [*inputs, *outputs])
        sum_opts = premul.sum_options(opts)
        at = 1 if kind == "reduce_scatter" else 0

        def call(*host: Any) -> dist.Work:
            data = list(host[:-1])
            data[at] = premul.scaled(data[at], factor, in_place=at == 0)
            return getattr(self._gloo, method)(*data, sum_opts)

        return self._run(kind, call, args, inputs, outputs, signature, error, scale=True, **kw)

    # ------------------------------------------------------------------ reductions and broadcasts
    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllreduceOptions()
        sig = f"op={_op_name(opts.reduceOp)} {describe(tensors)}"
        return self._reduction("all_reduce", "allreduce", (tensors, opts), tensors, tensors, sig)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllreduceCoalescedOptions()
        sig = f"coalesced op={_op_name(opts.reduceOp)} {describe(tensors)}"
        return self._reduction("all_reduce", "allreduce_coalesced", (tensors, opts), tensors, tensors, sig,
                               self._check_dtypes(tensors))

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.BroadcastOptions()
        sig = f"root={opts.rootRank}{_tensor_index(opts)} {describe(tensors)}"
        return self._run("broadcast", "broadcast", (tensors, opts), tensors, tensors, sig)

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.ReduceOptions()
        sig = f"root={opts.rootRank}{_tensor_index(opts)} op={_op_name(opts.reduceOp)} {describe(tensors)}"
        return self._reduction("reduce", "reduce", (tensors, opts), tensors, tensors, sig)

    # ------------------------------------------------------------------ gathers and scatters
    def _gather_lists_error(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor]) -> str:
        if len(outputs) != len(inputs):
            return f"{len(outputs)} output lists for {len(inputs)} inputs"
        for outs, inp in zip(outputs, inputs):
            if len(outs) != self._my_size:
                return f"an output list has {len(outs)} tensors, the group has {self._my_size} ranks"
            bad = [describe(o) for o in outs if o.shape != inp.shape or o.dtype != inp.dtype]
            if bad:
                return f"output tensors {bad} do not match the input {describe(inp)}"
        return ""

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllgatherOptions()
        return self._run("all_gather", "allgather", (outputs, inputs, opts), inputs, _tensors(outputs),
                         describe(inputs), self._gather_lists_error(outputs, inputs))

    def allgather_coalesced(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                            opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllgatherOptions()
        error = ""
        if len(outputs) != self._my_size or any(len(o) != len(inputs) for o in outputs):
            error = f"expected {self._my_size} output lists of {len(inputs)} tensors each"
        return self._run("all_gather", "allgather_coalesced", (outputs, inputs, opts), inputs, _tensors(outputs),
                         "coalesced " + describe(inputs), error)

    def _single_error(self, big: torch.Tensor, small: torch.Tensor, what: str) -> str:
        if big.dtype != small.dtype:
            return f"{what}: dtypes differ ({describe(big)} vs {describe(small)})"
        if big.numel() != small.numel() * self._my_size:
            return (f"{what}: {describe(big)} must have world size ({self._my_size}) times the elements of "
                    f"{describe(small)}")
        return ""

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:  # noqa: A002
        opts = opts if opts is not None else c10d.AllgatherOptions()
        return self._run("all_gather", "all_gather_single", (output, input, opts), [input], [output],
                         describe(input), self._single_error(output, input, "all_gather_into_tensor"),
                         read_only_inputs=True)

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                    opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllgatherOptions()
        error = "" if len(outputs) == len(inputs) else f"{len(outputs)} outputs for {len(inputs)} inputs"
        error = error or next((e for o, i in zip(outputs, inputs)
                               if (e := self._single_error(o, i, "all_gather_into_tensor"))), "")
        return self._run("all_gather", "all_gather_single_coalesced", (outputs, inputs, opts), inputs, outputs,
                         "coalesced " + describe(inputs), error)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def reduce_scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]],
                       opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.ReduceScatterOptions()
        error = self._gather_lists_error(inputs, outputs)
        return self._reduction("reduce_scatter", "reduce_scatter", (outputs, inputs, opts), _tensors(inputs),
                               outputs, f"op={_op_name(opts.reduceOp)} {describe(outputs)}", error,
                               nbytes=lambda _: float(_nbytes(_tensors(inputs))))

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:  # noqa: A002
        opts = opts if opts is not None else c10d.ReduceScatterOptions()
        return self._reduction("reduce_scatter", "reduce_scatter_single", (output, input, opts), [input], [output],
                               f"op={_op_name(opts.reduceOp)} {describe(output)}",
                               self._single_error(input, output, "reduce_scatter_tensor"),
                               nbytes=lambda _: float(_nbytes([input])), read_only_inputs=True)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.ReduceScatterOptions()
        error = "" if len(outputs) == len(inputs) else f"{len(outputs)} outputs for {len(inputs)} inputs"
        error = error or next((e for o, i in zip(outputs, inputs)
                               if (e := self._single_error(i, o, "reduce_scatter_tensor"))), "")
        return self._reduction("reduce_scatter", "reduce_scatter_single_coalesced", (outputs, inputs, opts),
                               inputs, outputs, f"coalesced op={_op_name(opts.reduceOp)} {describe(outputs)}", error,
                               nbytes=lambda _: float(_nbytes(inputs)))

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def gather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.GatherOptions()
        error = self._gather_lists_error(outputs, inputs) if outputs else ""
        return self._run("gather", "gather", (outputs, inputs, opts), inputs, _tensors(outputs),
                         f"root={opts.rootRank} {describe(inputs)}", error,
                         nbytes=lambda _: float(_nbytes(inputs) * self._my_size))

    def scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.ScatterOptions()
        error = self._gather_lists_error(inputs, outputs) if inputs else ""
        return self._run("scatter", "scatter", (outputs, inputs, opts), _tensors(inputs), outputs,
                         f"root={opts.rootRank} {describe(outputs)}", error,
                         nbytes=lambda _: float(_nbytes(outputs) * self._my_size))

    # ------------------------------------------------------------------ all-to-all
    def _pairwise(self, all_extras: list[list[int]], unit: str) -> str:
        """Rank r's send count to rank j (extras[r][j]) must be rank j's receive count from r (extras[j][n+r])."""
        n = self._my_size
        for r in range(n):
            for j in range(n):
                if all_extras[r][j] != all_extras[j][n + r]:
                    return (f"rank {r} sends {all_extras[r][j]} {unit} to rank {j}, which expects "
                            f"{all_extras[j][n + r]} from it (input split sizes of one rank must equal the "
                            "output split sizes of its peers)")
        return ""

    def _a2a_volume(self, all_extras: list[list[int]], unit_bytes: float) -> float:
        return float(self._my_size * max(sum(row[:self._my_size]) for row in all_extras) * unit_bytes)

    def all_to_all_single(self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: list[int],  # noqa: A002
                          input_split_sizes: list[int], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllToAllOptions()
        n = self._my_size
        error = "" if output.dtype == input.dtype else f"dtypes differ ({describe(output)} vs {describe(input)})"
        splits = []
        for name, t, given in (("input", input, input_split_sizes), ("output", output, output_split_sizes)):
            rows = t.shape[0] if t.dim() else 1
            if not given:
                if rows % n:
                    error = error or f"{name} {describe(t)}: {rows} rows do not split evenly over {n} ranks"
                given = [rows // n] * n
            if len(given) != n or sum(given) != rows or min(given) < 0:
                error = error or (f"{name} split sizes {list(given)} must be {n} non-negative sizes summing to "
                                  f"its {rows} rows")
                given = [0] * n
            # in bytes, as gloo and NCCL match them: a rank sending no rows may hold an empty 1-d tensor while
            # its peers' rows are wider (TorchRec's sequence all-to-all does)
            splits.extend(int(s) * _row_bytes(t) for s in given)
        return self._run("all_to_all", "all_to_all_single",
                         (output, input, output_split_sizes, input_split_sizes, opts), [input], [output],
                         str(input.dtype), error, extras=splits,
                         check=None if error else (lambda e: self._pairwise(e, "bytes")),
                         nbytes=lambda a: self._a2a_volume(a.extras, 1.0), read_only_inputs=True)

    alltoall_base = all_to_all_single

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else c10d.AllToAllOptions()
        n = self._my_size
        error = ""
        if len(outputs) != n or len(inputs) != n:
            error = f"all_to_all needs {n} input and {n} output tensors, got {len(inputs)} and {len(outputs)}"
        error = error or self._check_dtypes([*inputs, *outputs])
        counts = [t.numel() for t in inputs] + [t.numel() for t in outputs] if not error else [0] * 2 * n
        unit = inputs[0].element_size() if inputs else 0
        return self._run("all_to_all", self._alltoall_flat, (outputs, inputs, opts), inputs, outputs,
                         str(inputs[0].dtype) if inputs else "", error, extras=counts,
                         check=None if error else (lambda e: self._pairwise(e, "elements")),
                         nbytes=lambda a: self._a2a_volume(a.extras, unit))

    def _alltoall_flat(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any) -> dist.Work:
        """List all-to-all of any sizes (gloo's own needs equal ones) as one all_to_all_single of the flattened
        host tensors; data movement only, so the values are those of any exchange."""
        flat_in = torch.cat([t.reshape(-1) for t in inputs])
        flat_out = torch.empty(sum(t.numel() for t in outputs), dtype=flat_in.dtype)
        work = self._gloo.all_to_all_single(flat_out, flat_in, [t.numel() for t in outputs],
                                            [t.numel() for t in inputs], opts)
        work.wait()
        for t, piece in zip(outputs, flat_out.split([t.numel() for t in outputs])):
            t.copy_(piece.view(t.shape))
        return work

    # ------------------------------------------------------------------ barrier and point-to-point
    def barrier(self, opts: Any = None) -> dist.Work:
        return self._run("barrier", "", (), [], [], "", nbytes=lambda _: 0.0)

    def _p2p_device(self, what: str, tensors: list[torch.Tensor]) -> int | str:
        if len(tensors) != 1:
            raise ValueError(f"tpu_dist {what} takes one tensor, got {len(tensors)}")
        where, error = self._placement(what, tensors)
        if error:
            raise ValueError(f"tpu_dist {error}")
        return where

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> dist.Work:
        where = self._p2p_device("send", tensors)
        if where == "cpu":
            return self._gloo.send(tensors, dst, tag)
        return self._track(self._p2p.send(tensors[0], dst, tag, where))

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> dist.Work:
        where = self._p2p_device("recv", tensors)
        if where == "cpu":
            return self._gloo.recv(tensors, src, tag)
        return self._track(self._p2p.recv(tensors[0], src, tag, where))

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int = 0) -> dist.Work:
        """`dist.recv(t)` / `dist.irecv(t)` without `src`: from whichever rank sends first (p2p.py);
        `Work._source_rank()` then names it."""
        where = self._p2p_device("recv", tensors)
        if where == "cpu":
            return self._gloo.recv_anysource(tensors, tag)
        return self._track(self._p2p.recv(tensors[0], None, tag, where))

    # _coalescing_manager(group, device=...): the collectives and point-to-point operations inside the block run
    # as they come (the fast-path ones c10d batches itself run as its coalesced call at the end); the block's
    # Work is all of them. gloo has no such coalescing: cpu devices get gloo's own answer (an error).
    def _start_coalescing(self, device: torch.device) -> None:
        if torch.device(device).type != "tpu":
            return self._gloo._start_coalescing(device)
        if self._coalesced is not None:
            raise ValueError("tpu_dist: _coalescing_manager(device=...) blocks cannot be nested on one group (one "
                             "is already open)")
        self._coalesced = []
        return None

    def _end_coalescing(self, device: torch.device) -> dist.Work:
        if torch.device(device).type != "tpu":
            return self._gloo._end_coalescing(device)
        if self._coalesced is None:
            raise ValueError("tpu_dist: _end_coalescing without a matching _start_coalescing")
        works, self._coalesced = self._coalesced, None
        index = torch.device(device).index
        index = torch.tpu.current_device() if index is None else index

        def finish() -> tuple[int, float] | None:
            ends = [w._done[1] for w in works if w.wait() and w._done is not None]
            return (index, max(ends)) if ends else None

        return TpuWork([t for w in works for t in w.result()], finish, device=index)

def create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> TpuProcessGroup:
    """The factory `Backend.register_backend("tpu_dist", ...)` calls."""
    topology.check_world(size)
    pg = TpuProcessGroup(store, rank, size, timeout)
    pg.bound_device_id = subgroups.requested_device_id()
    return pg
