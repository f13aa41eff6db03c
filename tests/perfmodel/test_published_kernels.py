"""Published kernel measurements and designs (`perfmodel.kernels`) against hand-derived values: the measured
splash-attention table on TPU7x, tokamax's grouped-matmul tiling heuristic, the tile-visit count of ragged groups,
the double-buffered MXU schedule the grouped-matmul tiles are costed with, and how attention and MoE ops use them."""

import math

import pytest
from torchtpu.perfmodel import kernels, simcost
from torchtpu.perfmodel.calibration import DEFAULT
from torchtpu.perfmodel.ops import attention_cost
from torchtpu.perfmodel.training import train_step
from torchtpu.sim.chips import get_chip
from torchtpu.sim.systolic import mxu_schedule

V7X_VMEM = 64 * 2**20  # per TensorCore (tpu-facts section 1)


def test_splash_table_points_interpolation_and_limits():
    # measured points [TKX-splash]: hd 128 at 8k forward 24.87%, backward 30.15%; qk 192 / v 128 at 4k 25.42%
    assert kernels.splash_mfu("v7x", 8192, 128, 128) == pytest.approx(0.2487)
    assert kernels.splash_mfu("v7x", 8192, 128, 128, backward=True) == pytest.approx(0.3015)
    assert kernels.splash_mfu("v7x", 4096, 192, 128) == pytest.approx(0.2542)
    # 16k is halfway between 8k and 32k in log2: the mean of 24.87% and 30.91%
    assert kernels.splash_mfu("v7x", 16384, 128, 128) == pytest.approx((0.2487 + 0.3091) / 2)
    assert kernels.splash_mfu("v7x", 1 << 20, 128, 128) == pytest.approx(0.3426)  # above the table: last value
    # no measurement: other chips, head widths outside the table, shorter than the first measured length
    assert kernels.splash_mfu("v6e", 8192, 128, 128) is None
    assert kernels.splash_mfu("v7x", 8192, 64, 64) is None
    assert kernels.splash_mfu("v7x", 2048, 128, 128) is None


def test_attention_cost_uses_the_measured_kernel_by_hand():
    """Causal 8k self-attention, 64 heads of 128 on v7x: useful FLOPs 0.5 * 64 * 8192^2 * (2*128 + 2*128) at
    24.87% of 2307 TFLOP/s (backward 2.5x the FLOPs at 30.15%); the calibration's efficiency does not apply."""
    chip = get_chip("v7x")
    useful = 0.5 * 64 * 8192**2 * 512
    f = attention_cost("v7x", 1, 64, 8192, 8192, 128, n_kv_heads=8, block_q=2048, block_kv=2048)
    b = attention_cost("v7x", 1, 64, 8192, 8192, 128, n_kv_heads=8, block_q=2048, block_kv=2048, backward=True)
    assert f.measured and f.seconds == pytest.approx(useful / (chip.bf16_flops * 0.2487))
    assert b.measured and b.seconds == pytest.approx(2.5 * useful / (chip.bf16_flops * 0.3015))
    assert f.calibrated_seconds(DEFAULT) == f.seconds
    # outside the table the simulator's block model stays, divided by the calibration efficiency
    for other in (attention_cost("v6e", 1, 64, 8192, 8192, 128, n_kv_heads=8),
                  attention_cost("v7x", 1, 64, 8192, 8192, 128, n_kv_heads=8, window=128),
                  attention_cost("v7x", 1, 64, 8192, 8192, 64, n_kv_heads=8)):
        assert not other.measured
        assert other.calibrated_seconds(DEFAULT) == pytest.approx(other.seconds / DEFAULT.efficiency)


def test_gmm_tiling_heuristic_by_hand():
    """tokamax TPU7x heuristic, budget 0.75 x 64 MiB / 2 = 24 MiB. DeepSeek-V3 gate matmul per device: rows
    8 x 4096 x 8 = 262144, k 7168, n 2048. tile_m 1024 -> 512 -> 256 -> 128 (inputs 2 x 2 B x (128 x 7168 +
    7168 x 2048) = 62.4 MB still too big), then tile_n 2048 -> 1024 (33.7 MB) -> 512: 2 x 2 x (128 x 7168 +
    7168 x 512) + 3 x 2 x 128 x 512 = 18.7 MB fits. The weight-gradient kernel deflates k first: 7168 -> 3584 ->
    1792 -> 896: 2 x 2 x (1024 x 896 + 1024 x 2048) + 3 x 2 x 896 x 2048 = 23.1 MB fits, tile_m stays 1024."""
    assert kernels.gmm_tiling(262144, 7168, 2048, V7X_VMEM) == (128, 7168, 512)
    assert kernels.gmm_tiling(262144, 7168, 2048, V7X_VMEM, transposed=True) == (1024, 896, 2048)
    assert kernels.gmm_tiling(300, 256, 256, V7X_VMEM) == (300, 256, 256)  # small: whole dimensions
    # other chips: MaxText's megablox tiles, clipped to the dimensions
    assert kernels.gmm_chip_tiling("v5p", 262144, 4096, 768) == (512, 1024, 768)


def test_gmm_tile_visits_by_hand():
    """make_group_metadata: tiles_m <= visits <= tiles_m + groups - 1; with random loads every boundary falls
    inside a tile: 262144 rows / 128 = 2048 tiles, 256 experts -> 2048 + 255 visits."""
    assert kernels.gmm_visit_factor(262144, 256, 128) == pytest.approx((2048 + 255) / 2048)
    assert kernels.gmm_visit_factor(262144, 256, 1024) == pytest.approx((256 + 255) / 256)
    assert kernels.gmm_visit_factor(1000, 1, 128) == 1.0
    assert kernels.devices_per_chip("v7x") == 2 and kernels.devices_per_chip("v5p") == 1


def test_double_buffered_mxu_schedule_by_hand():
    """Weight tiles shifted in while the previous one streams: max(T, R) per fold, one load R and one skew +
    drain R + C - 2 per schedule. 8 tiles [128, 7168] @ [7168, 512] on 8 MXUs of 256 x 256: 8 x 28 x 2 = 448
    folds, 56 rounds: 256 + 56 x 256 + 510 = 15102 cycles (the per-fold model: 56 x (2 x 256 + 256 + 128 - 2))."""
    assert mxu_schedule(8, 128, 512, 7168, 256, 256, 8, double_buffered=True).cycles == 15102
    assert mxu_schedule(8, 128, 512, 7168, 256, 256, 8).cycles == 56 * 894
    assert mxu_schedule(8, 1024, 512, 7168, 256, 256, 8, double_buffered=True).cycles == 256 + 56 * 1024 + 510


def test_moe_experts_cost_the_grouped_matmul_tiles():
    """DeepSeek-V3 on 128 v7x chips (16 sequences of 4096 per chip, 2 devices): the gate and up matmuls of one
    MoE layer are 2 devices x 2 calls x (2048 + 255) visits x 4 n-tiles of [128, 7168] @ [7168, 512]."""
    chip = get_chip("v7x")
    r = train_step("deepseek-v3", "v7x", 128, "fsdp=128", global_batch=2048, seq_len=4096, remat="full",
                   offload=True, block_q=2048, block_kv=2048)
    experts_in = next(c for phase, c in r.ops if phase == "fwd" and c.name == "experts_in")
    tiles = 2 * 2 * (2048 + 255) * 4
    per_layer = simcost.mxu_seconds(chip, tiles, 128, 512, 7168, double_buffered=True)
    assert experts_in.mxu_seconds == pytest.approx(58 * per_layer, rel=1e-9)  # 58 MoE layers
    assert math.isclose(experts_in.flops, 58 * 2 * 7168 * 4096 * 16 * 4096 * 8, rel_tol=1e-9)
