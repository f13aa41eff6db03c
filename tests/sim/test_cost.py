"""Tests for torchtpu.sim.cost / systolic: SCALE-Sim golden case, roofline, passes, padding, ICI formulas."""

import pytest
from torchtpu.sim.chips import CHIPS, get_chip
from torchtpu.sim.cost import CostModel, CostRecord, systolic_cycles, systolic_report
from torchtpu.sim.systolic import mxu_schedule


def test_scalesim_golden_alexnet_conv1():
    """32x32 WS, AlexNet conv1 (224^2, 11x11x3, 96 filters, stride 4): golden 112,283 cycles [SS2]."""
    ofmap = -(-(224 - 11 + 4) // 4)  # ceil((H - F + S) / S) [SS2 topology_utils.py]
    assert ofmap == 55
    cycles = systolic_cycles(32, 32, sr=11 * 11 * 3, sc=96, t=ofmap * ofmap, dataflow="ws")
    assert abs(cycles - 112_283) / 112_283 < 1e-3
    rep = systolic_report(32, 32, 363, 96, 3025, "ws")
    assert round(rep.overall_util * 100, 2) == pytest.approx(91.68, abs=0.01)
    assert round(rep.mapping_eff * 100, 2) == 94.53
    assert round(rep.compute_util * 100, 2) == 90.78


def test_systolic_dataflows():
    assert systolic_cycles(8, 8, 8, 8, 10, "os") == 8 + 8 + 10 - 2
    assert systolic_cycles(8, 8, 9, 8, 10, "is") == 2 * (16 + 8 + 10 - 2)
    with pytest.raises(ValueError, match="ws, is, os"):
        systolic_cycles(8, 8, 8, 8, 8, "xs")


def test_4096_cubed_bf16_on_v5e_near_roofline():
    rec = CostModel("v5e").matmul(1, 4096, 4096, 4096, "bfloat16", "bfloat16", "DEFAULT")
    roof = 2 * 4096**3 / 197e12
    assert isinstance(rec, CostRecord)
    assert rec.bound == "mxu"
    assert roof <= rec.seconds <= 1.10 * roof
    assert rec.flops == 2 * 4096**3
    assert rec.hbm_bytes == 3 * 4096 * 4096 * 2
    assert rec.cycles == pytest.approx(rec.seconds * 1.5e9)


@pytest.mark.parametrize("chip", list(CHIPS))
def test_large_matmul_within_15pct_of_peak_on_every_chip(chip):
    c = get_chip(chip)
    n = 8192
    rec = CostModel(c).matmul(1, n, n, n, "bfloat16", "bfloat16", "DEFAULT")
    assert 2 * n**3 / c.bf16_flops <= rec.mxu_seconds <= 1.15 * 2 * n**3 / c.bf16_flops


def test_highest_is_six_times_default_mxu_time():
    cm = CostModel("v5e")
    d = cm.matmul(2, 1024, 1024, 1024, "float32", "float32", "DEFAULT")
    h = cm.matmul(2, 1024, 1024, 1024, "float32", "float32", "HIGH")
    x = cm.matmul(2, 1024, 1024, 1024, "float32", "float32", "HIGHEST")
    assert h.mxu_seconds == pytest.approx(3 * d.mxu_seconds)
    assert x.mxu_seconds == pytest.approx(6 * d.mxu_seconds)
    assert x.vpu_seconds > h.vpu_seconds > d.vpu_seconds > 0  # splitting work on the VPU
    assert x.flops == d.flops and x.padded_flops == 6 * d.padded_flops
    bf = cm.matmul(2, 1024, 1024, 1024, "bfloat16", "float32", "HIGHEST")
    assert bf.mxu_seconds == pytest.approx(d.mxu_seconds)  # bf16 inputs: one pass whatever the precision
    assert bf.vpu_seconds == 0


def test_k130_pays_for_padding_to_256():
    cm = CostModel("v5e")
    k130 = cm.matmul(1, 1024, 1024, 130, "bfloat16", "float32")
    k256 = cm.matmul(1, 1024, 1024, 256, "bfloat16", "float32")
    k128 = cm.matmul(1, 1024, 1024, 128, "bfloat16", "float32")
    assert k130.mxu_seconds == k256.mxu_seconds > 1.5 * k128.mxu_seconds
    assert k130.padded_flops == 2 * 1024 * 1024 * 256
    assert k130.flops == 2 * 1024 * 1024 * 130
    # v6e's 256-wide array pads K=130 to 256 as well, and N=300 to 512
    v6e = CostModel("v6e").matmul(1, 512, 300, 130, "bfloat16", "float32")
    assert v6e.padded_flops == 2 * 512 * 512 * 256


def test_small_op_is_launch_bound_and_large_elementwise_hbm_bound():
    cm = CostModel("v5e")
    small = cm.matmul(1, 8, 8, 8, "bfloat16", "float32")
    assert small.bound == "launch" and small.seconds < cm.launch_seconds()
    add = cm.vpu("add", 1 << 24, 1.0, 2 * 4 << 24, 4 << 24)
    assert add.bound == "hbm" and add.seconds == pytest.approx(3 * 4 * 2**24 / 8.2e11)
    tiny_add = cm.vpu("add", 16, 1.0, 128, 64)
    assert tiny_add.bound == "launch"


def test_int8_runs_at_twice_bf16_rate_on_v5e():
    cm = CostModel("v5e")
    i8 = cm.matmul(1, 4096, 4096, 4096, "int8", "int32")
    bf = cm.matmul(1, 4096, 4096, 4096, "bfloat16", "float32")
    assert i8.mxu_seconds == pytest.approx(bf.mxu_seconds * 197 / 393)


def test_vpu_transcendental_and_data_movement():
    cm = CostModel("v5e")
    e = cm.vpu("exp", 1 << 20, 1.0, 4 << 20, 4 << 20, transcendental=True)
    assert e.transcendentals == 1 << 20 and e.vpu_seconds == pytest.approx((1 << 20) / (512 * 1.5e9))
    mv = cm.data_movement("transpose", 1000, 1000)
    assert mv.hbm_bytes == 2000 and mv.flops == 0 and mv.mxu_seconds == 0


def test_conv_gemm_view():
    cm = CostModel("v5e")
    rec = cm.conv(n=8, c_in=64, c_out=128, out_spatial=(56, 56), kernel_spatial=(3, 3), in_spatial=(56, 56))
    gemm = cm.matmul(1, 8 * 56 * 56, 128, 64 * 9, "bfloat16", "float32")
    assert rec.flops == gemm.flops and rec.mxu_seconds == gemm.mxu_seconds
    assert rec.hbm_bytes == 8 * 64 * 56 * 56 * 2 + 128 * 64 * 9 * 2 + 8 * 128 * 56 * 56 * 4
    g = cm.conv(n=1, c_in=32, c_out=32, out_spatial=(10,), kernel_spatial=(3,), groups=32)
    assert g.flops == 2 * 10 * 32 * 3


def test_fuse_keeps_intermediates_on_chip():
    cm = CostModel("v5e")
    mm = cm.matmul(1, 2048, 2048, 2048, "bfloat16", "bfloat16")
    act = cm.vpu("tanh", 2048 * 2048, 1.0, 2048 * 2048 * 2, 2048 * 2048 * 2, transcendental=True)
    fused = cm.fuse([mm, act], external_bytes=3 * 2048 * 2048 * 2)
    assert fused.hbm_bytes == 3 * 2048 * 2048 * 2
    assert fused.seconds < mm.seconds + act.seconds
    assert fused.flops == mm.flops + act.flops and fused.transcendentals == act.transcendentals


def test_collectives_match_scaling_book_example():
    """v5e {X:8, Y:4}, AllGather_Y of bf16[2048, 8192]: book predicts 377 us (ring, V/W without the exact (N-1)/N
    ring factor, which torchtpu.sim.ici keeps: 3/4 of it) / 560 us (no wrap, where 2(N-1)/N already is exact)."""
    cm = CostModel("v5e")
    v = 2048 * 8192 * 2
    ring = cm.collective("all_gather", v, (4,), wraparound=True)
    line = cm.collective("all_gather", v, (4,))  # axis 4 < 16: no wraparound on v5e
    assert ring.seconds == pytest.approx(377e-6 * 3 / 4, rel=0.02) and ring.bound == "ici"
    assert line.seconds == pytest.approx(560e-6, rel=0.01)
    assert cm.collective("all_reduce", v, (4,), True).seconds == pytest.approx(2 * ring.seconds)
    assert cm.collective("reduce_scatter", v, (4,), True).seconds == pytest.approx(ring.seconds)
    assert cm.collective("all_to_all", v, (4,), True).seconds == pytest.approx(ring.seconds / 4)
    two = cm.collective("all_gather", v, (16, 16))
    assert two.seconds == pytest.approx(v * 255 / 256 / (9e10 * 2))
    tiny = cm.collective("all_gather", 1024, (16,))
    assert tiny.ici_seconds == pytest.approx(8e-6)  # latency floor: 1 us x 16/2 hops
    assert cm.collective("permute", 9e6, (4,)).seconds == pytest.approx(9e6 / 4 / 4.5e10)  # a V/n shard one way
    assert cm.collective("all_reduce", v, (1,)).seconds == 0
    with pytest.raises(ValueError, match="all_reduce"):
        cm.collective("broadcast", v, (4,))


def test_published_tpu_measurements_scalesim_validation():
    """[SSV] measured JAX matmul fusions (likely v5e, us): the model should be within 30% on big shapes."""
    cm = CostModel("v5e")
    measured = {(2048, 2048, 2048): 141.69, (4096, 4096, 4096): 966.63, (4096, 4096, 2048): 524.38}
    for (m, n, k), us in measured.items():
        pred = cm.matmul(1, m, n, k, "bfloat16", "float32").seconds * 1e6
        assert 0.7 * us <= pred <= 1.3 * us, (m, n, k, pred, us)


def test_mxu_schedule_splits_rows_when_few_folds():
    s = mxu_schedule(1, 1024, 128, 128, 128, 128, 4)  # one fold, 4 MXUs: rows split 4 ways ([AYK])
    assert s.folds == 1 and s.rows_streamed == 256 and s.cycles == 2 * 128 + 128 + 256 - 2
    assert mxu_schedule(0, 5, 5, 5, 128, 128, 4).cycles == 0


def test_bad_precision():
    with pytest.raises(ValueError, match="DEFAULT, HIGH, HIGHEST"):
        CostModel().matmul(1, 2, 2, 2, "float32", "float32", "EXTREME")
