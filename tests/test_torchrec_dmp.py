"""TorchRec's DistributedModelParallel on 2 ranks over "tpu_dist" (tests/torchrec_workers.py): one
EmbeddingBagCollection with a table-wise and a row-wise sharded table, forward, backward and an SGD step, equal to
the same EmbeddingBagCollection on one chip fed both ranks' batches; the same tables as a sharded
EmbeddingCollection look up each rank's rows; zero CPU fallbacks; the embedding all-to-alls
(and the row-wise reduce-scatter) charged on the simulated ICI."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
from pathlib import Path

import torch
from torchrec.modules.embedding_modules import EmbeddingBagCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

import torchtpu

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torchrec_workers as W  # noqa: E402

LAUNCH_TIMEOUT_S = 420  # the machine is shared: a 2-rank start takes ~40 s of it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_chip(world: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The unsharded collection on one chip, fed every rank's batch (features f0 then f1, rank-major samples)."""
    ebc = EmbeddingBagCollection(tables=W.tables(), device=torch.device("tpu"))
    ebc.load_state_dict({f"embedding_bags.{k}.weight": v for k, v in W.weights().items()})
    per_rank = [W.batch(r) for r in range(world)]
    values, lengths = [], []
    for f in range(len(W.TABLES)):
        for vals, lens in per_rank:
            start = sum(lens[:f * W.BATCH])
            values += vals[start:start + sum(lens[f * W.BATCH:(f + 1) * W.BATCH])]
            lengths += lens[f * W.BATCH:(f + 1) * W.BATCH]
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=[f for _, f, _ in W.TABLES], values=torch.tensor(values),
                                              lengths=torch.tensor(lengths)).to("tpu")
    opt = torch.optim.SGD(ebc.parameters(), lr=W.LR)
    pooled = ebc(kjt).values()
    # TorchRec divides the sharded tables' gradients by the world size (comm_ops.set_gradient_division, on by
    # default: each rank's loss is a share of the mean, as DDP's averaged dense gradients): the mean over ranks
    coef = torch.cat([W.coefficients(W.BATCH)] * world).to("tpu") / world
    (pooled * coef).sum().backward()
    opt.step()
    return pooled.detach().cpu(), {name: ebc.embedding_bags[name].weight.detach().cpu() for name, _, _ in W.TABLES}


def test_dmp_table_wise_and_row_wise_on_two_ranks_equal_one_chip(tmp_path: Path) -> None:
    world = 2
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "TORCHTPU_TOPOLOGY": str(world)}
    env.pop("TORCHTPU_NUM_DEVICES", None)
    done = subprocess.run([sys.executable, str(Path(W.__file__)), str(world), str(_free_port()), str(tmp_path),
                           str(LAUNCH_TIMEOUT_S - 60)], env=env, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    for r, res in enumerate(results):
        assert "crash" not in res, f"rank {r} crashed:\n{res['crash']}"
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == [0] * world
    pooled, updated = _one_chip(world)
    assert torchtpu.fallback_counts() == {}
    for r, res in enumerate(results):
        assert "table_wise" in res["plan"] and "row_wise" in res["plan"]
        assert res["fallbacks"] == {}, res["fallbacks"]
        assert res["keys"] == ["f0", "f1"]
        torch.testing.assert_close(res["pooled"], pooled[r * W.BATCH:(r + 1) * W.BATCH], rtol=1e-5, atol=1e-6)
        values, lengths = W.batch(r)  # the sharded EmbeddingCollection's rows are the tables' own rows
        starts = [0, sum(lengths[:W.BATCH])]
        for f, (table, feature, _) in enumerate(W.TABLES):
            ids = values[starts[f]:starts[f] + sum(lengths[f * W.BATCH:(f + 1) * W.BATCH])]
            torch.testing.assert_close(res["sequence"][feature], W.weights()[table][ids], rtol=0, atol=0)
        stats = res["dist stats"]
        assert stats["all_to_all"]["count"] >= 2 and stats["all_to_all"]["ici_seconds"] > 0, stats
        assert stats["reduce_scatter"]["count"] >= 1 and stats["reduce_scatter"]["ici_seconds"] > 0, stats
    rows_seen = {name: 0 for name, _, _ in W.TABLES}
    for res in results:
        for name, shards in res["shards"].items():
            for (row, col), tensor in shards:
                want = updated[name][row:row + tensor.shape[0], col:col + tensor.shape[1]]
                torch.testing.assert_close(tensor, want, rtol=1e-5, atol=1e-6)
                rows_seen[name] += tensor.shape[0]
    assert rows_seen == {name: W.ROWS for name, _, _ in W.TABLES}  # every row of both tables checked once
    assert not torch.equal(updated["t0"], W.weights()["t0"])  # the step moved the weights
