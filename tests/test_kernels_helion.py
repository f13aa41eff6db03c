"""Helion kernels on "tpu" (torchtpu.kernels.helion_op): a `@helion.kernel` run through its Pallas code on either
driver, against the eager op in each eager mode and under compile, and configurations ranked by simulated time
(`TORCHTPU_HELION_AUTOTUNE=sim`) per chip."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HELION_BACKEND", "pallas")  # Helion reads them at import
os.environ.setdefault("HELION_PALLAS_INTERPRET", "1")
helion = pytest.importorskip("helion")
import jax  # noqa: E402

import torchtpu  # noqa: E402
from torchtpu import kernels  # noqa: E402
from torchtpu.kernels.examples.helion_rmsnorm import rms_norm  # noqa: E402
from torchtpu.kernels.helion_ops import sim_autotune  # noqa: E402

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


op = kernels.helion_op(rms_norm, "test_helion::rms_norm", candidates=3)


def _eager(x, w):  # noqa: ANN001, ANN202
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def test_helion_kernel_in_every_mode_and_compiled(monkeypatch):
    monkeypatch.setenv("TORCHTPU_HELION_AUTOTUNE", "sim")
    torch.manual_seed(0)
    x, w = torch.randn(64, 128), torch.randn(128)
    results = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results.append(op(x.to("tpu"), w.to("tpu")).cpu())
    results.append(torch.compile(lambda a, b: op(a, b), backend="tpu", fullgraph=True)(x.to("tpu"), w.to("tpu")).cpu())
    torch.testing.assert_close(results[0], _eager(x, w), atol=1e-5, rtol=1e-5)
    assert all(torch.equal(r, results[0]) for r in results[1:])
    (tuning,) = op.helion.tunings.values()  # one input signature, tuned once on the sim
    assert tuning.best_seconds <= tuning.default_seconds and len(tuning.tried) >= 2


@pytest.mark.sim_only("simulated device time ranks the configurations")
def test_sim_autotune_ranks_configurations_per_chip():
    avals = [jax.ShapeDtypeStruct((256, 512), "float32"), jax.ShapeDtypeStruct((512,), "float32")]
    tunings = {chip: sim_autotune(rms_norm, avals, chip=chip, candidates=3) for chip in ("v5e", "v6e")}
    for chip, t in tunings.items():
        priced = [s for _, s in t.tried if s is not None]
        assert t.best_seconds == min(priced) and t.speedup >= 1.0, chip
    assert tunings["v6e"].best_seconds < tunings["v5e"].best_seconds  # v6e's HBM is faster (chips.json)
    torchtpu.reset_stats()
    op(torch.randn(256, 512, device="tpu"), torch.randn(512, device="tpu"))
    assert torchtpu.stats()["by_op"]["kernel:test_helion::rms_norm"]["seconds"] > 0


def test_helion_op_refuses_what_is_not_a_helion_kernel():
    with pytest.raises(TypeError, match="takes a @helion.kernel function"):
        kernels.helion_op(lambda x: x)
