"""TorchTitan's own trainer (`torchrun -m torchtitan.train`) on "tpu": the llama3 debug model through
`torchtpu.titan_spec` (SDPA attention registered through TorchTitan's `--module/--config` mechanism).

Runs only where torchtitan is installed: `scripts/ci_torchtitan.sh` makes that venv (.venv-titan) and runs this
file. Every run starts from one seed checkpoint written on cpu, so cpu and tpu train the same weights on the same
data; the 2-rank FSDP2 run reads identical halves of the data set (make_debug_assets), so its curve must equal
the 1-chip curve.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchtitan", reason="torchtitan is not installed here: scripts/ci_torchtitan.sh (the "
                    "TorchTitan CI step) creates .venv-titan with it and runs this file")

STEPS = 5
TIMEOUT_S = 600
_LOSS = re.compile(r"step:\s*(\d+)\s+loss:\s*([0-9.]+)")
_MFU = re.compile(r"mfu:\s*([0-9.]+)%")


def _torchrun(tmp: Path, name: str, nproc: int, *extra: str, device: str = "tpu") -> subprocess.CompletedProcess:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", PYTHONUNBUFFERED="1", LOG_RANK="0")
    if device == "cpu":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    assets = tmp / "assets"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "--master-addr",
           "127.0.0.1", "--master-port", "0" if nproc == 1 else str(29500 + os.getpid() % 1000),
           "-m", "torchtitan.train", "--module", "torchtpu.titan_spec", "--config", "llama3_debugmodel_sdpa",
           "--hf_assets_path", str(assets / "tokenizer"), "--dataloader.dataset_path", str(assets / "c4_test"),
           "--dump_folder", str(tmp / name), "--training.seq_len", "64", "--training.local_batch_size", "2",
           "--training.steps", str(STEPS), "--debug.seed", "0", "--activation_checkpoint.mode", "none",
           "--validator.enable", "False", "--metrics.log_freq", "1", *extra]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode != 0:
        raise AssertionError(f"{name} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


def _losses(proc: subprocess.CompletedProcess) -> list[float]:
    text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    found = {int(s): float(v) for s, v in _LOSS.findall(text)}
    return [found[s] for s in sorted(found)]


@pytest.fixture(scope="module")
def titan(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from torchtpu.titan_spec import make_debug_assets

    tmp = tmp_path_factory.mktemp("titan")
    make_debug_assets(tmp / "assets")
    _torchrun(tmp, "seed", 1, "--checkpoint.enable", "True", "--checkpoint.create_seed_checkpoint", "True",
              device="cpu")
    seed = tmp / "seed" / "checkpoint" / "step-0"
    assert seed.is_dir(), f"no seed checkpoint at {seed}"
    load = ("--checkpoint.enable", "True", "--checkpoint.initial_load_path", str(seed),
            "--checkpoint.interval", "1000")
    runs = {"tmp": tmp, "load": load}
    runs["cpu"] = _torchrun(tmp, "cpu", 1, *load, device="cpu")
    runs["tpu"] = _torchrun(tmp, "tpu", 1, *load)
    return runs


def test_one_chip_loss_equals_cpu(titan: dict) -> None:
    cpu, tpu = _losses(titan["cpu"]), _losses(titan["tpu"])
    assert len(cpu) == STEPS and len(tpu) == STEPS, (cpu, tpu)
    assert cpu[-1] < cpu[0]  # it trains
    for c, t in zip(cpu, tpu):
        assert abs(c - t) <= 2e-3 * abs(c), (cpu, tpu)


def test_mfu_uses_the_tpu_name_and_peak_flops(titan: dict) -> None:
    import torch
    from torchtitan.tools.utils import get_peak_flops

    name = torch.tpu.get_device_name()
    assert name.startswith("TPU v"), name
    peak = get_peak_flops(name)
    assert peak != 312e12, f"torchtitan fell back to A100 for {name!r}"
    text = titan["tpu"].stdout + titan["tpu"].stderr
    assert f"Peak FLOPS used for computing MFU: {peak:.3e}" in text
    assert _MFU.search(re.sub(r"\x1b\[[0-9;]*m", "", text))


def test_two_ranks_fsdp2_equal_one_chip(titan: dict) -> None:
    proc = _torchrun(titan["tmp"], "fsdp2", 2, *titan["load"], "--parallelism.data_parallel_shard_degree", "2")
    one, two = _losses(titan["tpu"]), _losses(proc)
    assert len(two) == STEPS, two
    for a, b in zip(one, two):
        assert abs(a - b) <= 1e-4 * abs(a), (one, two)
