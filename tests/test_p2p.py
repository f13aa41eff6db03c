"""tpu_dist point-to-point: send/recv priced by the route between the two ranks' chips (sim/ici.py `p2p_time`),
their Works ordering the current stream as collectives do, recv from any source and
`_coalescing_manager(device=...)` against gloo on cpu.

Each multi-rank test runs the `route` scenario below on 4 spawned ranks through tests/dist_workers.py (under a
timeout; every rank's store timeout bounded): once on a `TORCHTPU_TOPOLOGY=2x2` slice (rank r on chip r) and once
on the default single host, where the 4 ranks are one line of chips.
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torchtpu.sim.chips import get_chip
from torchtpu.sim.ici import p2p_time, torus_hops
from torchtpu.sim.topology import Topology

HERE = Path(__file__).resolve().parent
LAUNCH_TIMEOUT_S = 420  # the machine is shared: a 4-rank start takes a minute of it
V5E = get_chip("v5e")
NBYTES = 1 << 20  # 1 MiB messages
PAIRS = [(0, 1), (0, 3), (1, 2), (3, 2), (2, 0)]  # (sender, receiver)


# ---------------------------------------------------------------------------- the formula on its own
def test_the_route_formula():
    # [SB-shard] T_min = 1 us per hop; [SB-tpus] v5e one link 4.5e10 B/s each way
    assert p2p_time(4.5e6, 3, 4.5e10) == pytest.approx(3e-6 + 1e-4)
    assert p2p_time(123, 0, 4.5e10) == 0.0
    assert torus_hops((0, 0), (1, 1), (2, 2), (False, False)) == 2
    assert torus_hops((0,), (15,), (16,), (True,)) == 1  # the short way round a wrapped axis
    assert torus_hops((0,), (15,), (16,), (False,)) == 15
    t = Topology.of("v5e", (16, 16))  # a full v5e pod: both axes wrap [SB-tpus]
    assert t.hops(0, 255) == 2 and t.hops(0, 8 * 16 + 8) == 16
    two = Topology.of("v5e", (2, 2), hosts=2)  # two slices joined by DCN
    assert two.p2p_seconds(1e6, 0, 5, 1e-6, 5e-5) == pytest.approx(5e-5 + 1e6 / V5E.dcn_bw)
    with pytest.raises(ValueError, match="one entry per axis"):
        torus_hops((0,), (1, 1), (2, 2), (False, False))


# ---------------------------------------------------------------------------- rank program
def route(rank: int, world: int) -> dict[str, Any]:
    """Sends along PAIRS with the charged records, stream waits, any-source receives and device coalescing, each
    compared with what it must be (clock) or with a plain gloo group on cpu (values)."""
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _coalescing_manager

    import torchtpu
    from torchtpu import streams

    device = rank % torch.tpu.device_count()
    torch.tpu.set_device(device)
    ref = dist.new_group(backend="gloo")
    out: dict[str, Any] = {"pairs": {}}
    tl = streams.timeline(device)

    def now() -> float:
        return tl.stream_clock(torch.tpu.current_stream().stream_id)

    def last(op: str) -> dict[str, Any]:
        return [r for r in torchtpu.timeline_records(device) if r["op"] == op][-1]

    x = torch.arange(NBYTES // 4, dtype=torch.float32, device="tpu") * (rank + 1)
    for a, b in PAIRS:
        if rank == a:
            dist.send(x, b)
            rec = last("send")
            out["pairs"][(a, b)] = (rec["seconds"], rec["end"], now())
        elif rank == b:
            got = torch.empty_like(x)
            dist.recv(got, a)
            rec = last("recv")
            sent = torch.arange(NBYTES // 4, dtype=torch.float32) * (a + 1)
            out["pairs"][(a, b)] = (rec["seconds"], rec["end"], now(), bool(torch.equal(got.cpu(), sent)))
    # an irecv overlaps compute on the current stream until its wait; its future orders the stream as well
    dist.all_reduce(torch.ones(1, device="tpu"))  # every rank's current stream at the same time
    if rank in (0, 1):
        peer = 1 - rank
        if rank == 0:
            y = torch.randn(256, 256, device="tpu")
            dist.isend(x, peer).wait()
            work = dist.irecv(torch.empty_like(x), peer)
            before = now()
            for _ in range(60):  # far longer than the receive's wait for its sender
                y = y @ y
            busy = now()
            work.wait()
            out["overlap"] = (before, busy, now(), last("recv")["start"], last("recv")["end"])
            fut_work = dist.irecv(torch.empty_like(x), peer)
            fut_work.get_future().wait()
            out["future"] = (now(), last("recv")["end"])
        else:
            got = torch.empty_like(x)
            dist.recv(got, peer)
            dist.send(x, peer)
            dist.send(x, peer)
    # recv from any source, against gloo's recv_anysource on cpu tensors
    tag = 7
    for name, group, dev in (("tpu", None, "tpu"), ("gloo", ref, "cpu")):
        if rank == 0:
            got = []
            for _ in range(world - 1):
                t = torch.zeros(5, dtype=torch.int64, device=dev)
                src = dist.recv(t, group=group, tag=tag)
                got.append((src, t.cpu()))
            out[f"any {name}"] = sorted(got, key=lambda p: p[0])
            if name == "tpu":
                out["any charge"] = (last("recv")["seconds"], got[-1][0])  # the last receive's charge, its source
        else:
            dist.send(torch.arange(5, dtype=torch.int64, device=dev) * (rank + 10), 0, group=group, tag=tag)
    # _coalescing_manager(device=tpu): a ring of isend/irecv plus coalesced all-reduces; reference: gloo without
    # a device (gloo has no device coalescing: it refuses device="cpu")
    results = {}
    for name, group, dev in (("tpu", None, torch.device("tpu", device)), ("gloo", ref, None)):
        kind = "tpu" if name == "tpu" else "cpu"
        a = torch.arange(6, dtype=torch.int64, device=kind) + rank
        b = torch.arange(4, dtype=torch.int64, device=kind) * (rank + 3)
        ring_in = torch.full((3,), rank * 100 + 1, dtype=torch.int64, device=kind)
        ring_out = torch.zeros(3, dtype=torch.int64, device=kind)
        with _coalescing_manager(group=group, device=dev, async_ops=True) as cm:
            p2p = [dist.isend(ring_in, (rank + 1) % world, group=group),
                   dist.irecv(ring_out, (rank - 1) % world, group=group)]
            dist.all_reduce(a, group=group)
            dist.all_reduce(b, group=group)
        cm.wait()  # on tpu the block's one Work covers the isend/irecv too
        if name == "gloo":
            for w in p2p:
                w.wait()
        results[name] = [a.cpu(), b.cpu(), ring_out.cpu(), len(cm.works)]
        if name == "tpu":
            out["coalesced clock"] = (now(), max(r["end"] for r in torchtpu.timeline_records(device)
                                                  if r["op"] in ("all_reduce", "send", "recv")))
    out["coalesced"] = results
    try:
        with _coalescing_manager(group=ref, device=torch.device("cpu")):
            pass
        out["cpu coalescing"] = "no error"
    except RuntimeError as exc:
        out["cpu coalescing"] = str(exc)
    dist.destroy_process_group()
    return out


SCENARIOS = {"route": (route, None, 30)}


# ---------------------------------------------------------------------------- the tests
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, **env: str) -> list[dict[str, Any]]:
    import torch

    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_") or k == "TORCHTPU_CACHE_DIR"}
    done = subprocess.run([sys.executable, str(HERE / "dist_workers.py"), "test_p2p:route", "4", str(_free_port()),
                           str(tmp_path), str(LAUNCH_TIMEOUT_S - 30)],
                          env={**base, "MASTER_ADDR": "127.0.0.1", **env}, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == [0] * 4, done.stderr[-3000:]
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(4)]
    for r, res in enumerate(results):
        assert "crash" not in res, f"rank {r}:\n{res['crash']}"
    return results


@pytest.fixture(scope="module", params=["2x2", "line"])
def ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list]:
    env = {"TORCHTPU_TOPOLOGY": "2x2"} if request.param == "2x2" else {"TORCHTPU_NUM_DEVICES": "1"}
    return request.param, _run(tmp_path_factory.mktemp(request.param), **env)


def _hops(layout: str, a: int, b: int) -> int:
    if layout == "2x2":  # rank r at (r // 2, r % 2); 2-chip v5e axes do not wrap
        return abs(a // 2 - b // 2) + abs(a % 2 - b % 2)
    return abs(a - b)  # the default: the group's ranks are one line of chips (4 v5e chips do not wrap)


def test_send_and_recv_are_charged_by_the_route_between_the_chips(ranks):
    layout, results = ranks
    for a, b in PAIRS:
        # [SB-shard] 1 us per hop + V / one link's one-way bandwidth [SB-tpus]
        expected = _hops(layout, a, b) * 1e-6 + NBYTES / V5E.ici_link_bw_oneway
        sent, got = results[a]["pairs"][(a, b)], results[b]["pairs"][(a, b)]
        assert sent[0] == pytest.approx(expected, rel=1e-9) and got[0] == pytest.approx(expected, rel=1e-9)
        assert got[3], f"{a}->{b}: wrong data"
    assert _hops(layout, 0, 3) == (2 if layout == "2x2" else 3)


def test_point_to_point_works_make_the_current_stream_wait(ranks):
    _, results = ranks
    for a, b in PAIRS:  # after a blocking send/recv the current stream stands at the transfer's end
        for r in (a, b):
            _, end, stream_clock = results[r]["pairs"][(a, b)][:3]
            assert stream_clock == end
    before, busy, after, recv_start, recv_end = results[0]["overlap"]
    assert recv_start < busy  # the receive ran on the comm stream while the matmuls ran on the current one
    assert after == max(busy, recv_end) and after > before
    assert results[0]["future"][0] == results[0]["future"][1]  # the device future's wait orders the stream too


def test_recv_from_any_source_matches_gloo(ranks):
    layout, results = ranks
    got, ref = results[0]["any tpu"], results[0]["any gloo"]
    assert [s for s, _ in got] == [s for s, _ in ref] == [1, 2, 3]
    for (_, g), (_, e) in zip(got, ref):
        assert g.dtype == e.dtype and g.tolist() == e.tolist()
    seconds, src = results[0]["any charge"]
    assert seconds == pytest.approx(_hops(layout, src, 0) * 1e-6 + 40 / V5E.ici_link_bw_oneway, rel=1e-9)


def test_device_coalescing_matches_gloo_and_orders_the_stream(ranks):
    _, results = ranks
    for res in results:
        tpu, ref = res["coalesced"]["tpu"], res["coalesced"]["gloo"]
        for g, e in zip(tpu[:3], ref[:3]):
            assert g.dtype == e.dtype and g.tolist() == e.tolist()
        assert tpu[3] == ref[3] == 1  # one Work for the whole block
        clock, last_end = res["coalesced clock"]
        assert clock >= last_end
        assert "gloo does not implement startCoalescing" in res["cpu coalescing"]
