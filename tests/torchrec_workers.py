"""Rank programs for tests/test_torchrec_dmp.py: `python tests/torchrec_workers.py WORLD PORT OUTDIR TIMEOUT_S`.

Each rank (multiprocessing spawn, chip `tpu:rank` of a simulated TORCHTPU_TOPOLOGY slice, gloo on 127.0.0.1)
shards one EmbeddingBagCollection with TorchRec's DistributedModelParallel over "tpu_dist" (table t0 table-wise,
t1 row-wise, TorchRec's UNFUSED_TPU compute kernel), loads the same weights as the one-chip reference, runs
forward, backward and one SGD step on its own batch, and writes its pooled output, its local shards (with their
offsets), the rows the same tables look up as a sharded EmbeddingCollection, the CPU fallbacks and the
collectives' simulated ICI totals to OUTDIR/rank{r}.pt. A rank that fails
writes its traceback there instead; every collective has a timeout, so a dead rank never hangs the others.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import sys
import traceback
from typing import Any

TABLES = (("t0", "f0", "table_wise"), ("t1", "f1", "row_wise"))
ROWS, DIM, BATCH, LR = 16, 16, 3, 0.5


def tables() -> list[Any]:
    from torchrec.modules.embedding_configs import EmbeddingBagConfig

    return [EmbeddingBagConfig(name=name, embedding_dim=DIM, num_embeddings=ROWS, feature_names=[feature])
            for name, feature, _ in TABLES]


def weights() -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    return {name: torch.randn(ROWS, DIM, generator=g) for name, _, _ in TABLES}


def batch(rank: int) -> tuple[list[int], list[int]]:
    """(values, lengths) of rank's batch: features f0 then f1, BATCH samples each, every row of both tables hit."""
    import torch

    g = torch.Generator().manual_seed(100 + rank)
    lengths = torch.randint(0, 4, (2 * BATCH,), generator=g).tolist()
    return torch.randint(0, ROWS, (sum(lengths),), generator=g).tolist(), lengths


def coefficients(batch_size: int) -> Any:
    import torch

    return torch.linspace(-1.0, 1.0, batch_size * len(TABLES) * DIM).reshape(batch_size, len(TABLES) * DIM)


def rank_main(rank: int, world: int, port: int, outdir: str, timeout_s: float) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    import torch
    import torch.distributed as dist

    import torchtpu

    out: dict[str, Any] = {}
    try:
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.model_parallel import DistributedModelParallel
        from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
        from torchrec.distributed.planner.types import ParameterConstraints
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

        torch.tpu.set_device(rank)
        device = torch.device("tpu", rank)
        dist.init_process_group("cpu:gloo,tpu:tpu_dist", timeout=datetime.timedelta(seconds=timeout_s))
        ebc = EmbeddingBagCollection(tables=tables(), device=torch.device("meta"))
        constraints = {name: ParameterConstraints(sharding_types=[kind], compute_kernels=["unfused_tpu"])
                       for name, _, kind in TABLES}
        planner = EmbeddingShardingPlanner(topology=Topology(world_size=world, compute_device="tpu"),
                                           constraints=constraints)
        sharders = [EmbeddingBagCollectionSharder()]
        plan = planner.collective_plan(ebc, sharders, dist.group.WORLD)
        model = DistributedModelParallel(ebc, device=device, plan=plan, sharders=sharders)
        full = weights()
        shards: dict[str, list[tuple[list[int], Any]]] = {}
        for key, value in model.state_dict().items():
            table = key.split(".")[-2]
            for shard in value.local_shards():
                offsets, sizes = shard.metadata.shard_offsets, shard.metadata.shard_sizes
                shard.tensor.detach().copy_(full[table][offsets[0]:offsets[0] + sizes[0],
                                                        offsets[1]:offsets[1] + sizes[1]])
        values, lengths = batch(rank)
        kjt = KeyedJaggedTensor.from_lengths_sync(keys=[f for _, f, _ in TABLES], values=torch.tensor(values),
                                                  lengths=torch.tensor(lengths)).to(device)
        # TorchRec 1.9.2's UNFUSED_TPU kernel does not hand its tables to the sharded module's named_parameters
        # (they appear there as empty placeholders), so the optimizer takes the lookups' own parameters
        tables_params = [p for lookup in model.module._lookups for p in lookup.parameters()]
        out["optimized"] = [tuple(p.shape) for p in tables_params]
        opt = torch.optim.SGD(tables_params, lr=LR)
        torchtpu.reset_stats()
        pooled = model(kjt).wait()
        out["keys"] = pooled.keys()
        out["pooled"] = pooled.values().cpu()
        (pooled.values() * coefficients(BATCH).to(device)).sum().backward()
        opt.step()
        for key, value in model.state_dict().items():
            shards[key.split(".")[-2]] = [(list(s.metadata.shard_offsets), s.tensor.detach().cpu())
                                          for s in value.local_shards()]
        out["shards"] = shards
        out["sequence"] = _sharded_sequence_lookup(rank, world, device, values, lengths)
        out["fallbacks"] = torchtpu.fallback_counts()
        out["dist stats"] = torchtpu.distributed.stats()
        out["plan"] = str(plan)
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the test reads the traceback
        out["crash"] = traceback.format_exc()
    torch.save(out, os.path.join(outdir, f"rank{rank}.pt"))


def _sharded_sequence_lookup(rank: int, world: int, device: Any, values: list[int], lengths: list[int]
                             ) -> dict[str, Any]:
    """The same tables as an EmbeddingCollection (t0 table-wise, t1 row-wise): its sequence all-to-all has a rank
    sending no rows from an empty 1-d tensor beside its peers' rows of width DIM. The rows looked up, per feature."""
    import torch
    import torch.distributed as dist
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.modules.embedding_configs import EmbeddingConfig
    from torchrec.modules.embedding_modules import EmbeddingCollection
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    configs = [EmbeddingConfig(name=name, embedding_dim=DIM, num_embeddings=ROWS, feature_names=[feature])
               for name, feature, _ in TABLES]
    ec = EmbeddingCollection(tables=configs, device=torch.device("meta"))
    constraints = {name: ParameterConstraints(sharding_types=[kind], compute_kernels=["unfused_tpu"])
                   for name, _, kind in TABLES}
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=world, compute_device="tpu"),
                                       constraints=constraints)
    sharders = [EmbeddingCollectionSharder()]
    model = DistributedModelParallel(ec, device=device, plan=planner.collective_plan(ec, sharders, dist.group.WORLD),
                                     sharders=sharders)
    full = weights()
    for key, value in model.state_dict().items():
        for shard in value.local_shards():
            offsets, sizes = shard.metadata.shard_offsets, shard.metadata.shard_sizes
            shard.tensor.detach().copy_(full[key.split(".")[-2]][offsets[0]:offsets[0] + sizes[0],
                                                                 offsets[1]:offsets[1] + sizes[1]])
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=[f for _, f, _ in TABLES], values=torch.tensor(values),
                                              lengths=torch.tensor(lengths)).to(device)
    looked_up = model(kjt)
    looked_up = looked_up.wait() if hasattr(looked_up, "wait") else looked_up
    return {feature: looked_up[feature].values().cpu() for _, feature, _ in TABLES}


if __name__ == "__main__":
    world, port, outdir, timeout_s = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, world, port, outdir, timeout_s)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout_s + 60)
        if p.is_alive():
            p.kill()
            p.join()
    print([p.exitcode for p in procs])
