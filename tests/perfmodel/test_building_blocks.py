"""Roofline, op costs and collectives: the equations of tpu-facts section 2 on the chip table."""

import math

import pytest
from torchtpu.perfmodel.collectives import Axis, collective_time, dcn_collective_terms, dcn_collective_time
from torchtpu.perfmodel.ops import attention_cost, elementwise_cost, matmul_cost, precision_passes
from torchtpu.perfmodel.roofline import chip_roofline, roofline_table
from torchtpu.sim.chips import get_chip


@pytest.mark.parametrize("chip,crit", [("v4", 229), ("v5e", 240), ("v5p", 166), ("v6e", 560), ("v7x", 312)])
def test_hbm_critical_intensity_matches_tpu_facts(chip, crit):
    assert chip_roofline(chip).hbm_critical_intensity == pytest.approx(crit, abs=1.0)


@pytest.mark.parametrize("chip,crit", [("v4", 3056), ("v5e", 2189), ("v5p", 2550), ("v6e", 5100)])
def test_ici_critical_intensity_matches_tpu_facts(chip, crit):
    assert chip_roofline(chip).ici_critical_intensity() == pytest.approx(crit, rel=0.01)


def test_roofline_bound_and_table():
    r = chip_roofline("v5e")
    assert r.bound(1e12, 1e6) == "compute" and r.bound(1e6, 1e9) == "hbm"
    assert r.attainable(1.0) == pytest.approx(r.hbm_bw)
    assert r.attainable(1e6) == r.peak
    assert "TPU v6e" in roofline_table()


def test_matmul_padding_and_intensity():
    big = matmul_cost("v5e", 4096, 4096, 4096)
    assert big.bound == "compute"
    assert big.mxu_seconds == pytest.approx(2 * 4096**3 / 197e12)
    # K = 100 pads to 128 on a 128-wide MXU, to 256 on v6e's 256-wide one
    assert matmul_cost("v5e", 4096, 4096, 100).mxu_seconds == pytest.approx(2 * 4096 * 4096 * 128 / 197e12)
    assert matmul_cost("v6e", 4096, 4096, 100).mxu_seconds == pytest.approx(2 * 4096 * 4096 * 256 / 918e12)
    # batch-1 matmul-vector is HBM-bound: intensity ~ 1 FLOP/byte
    small = matmul_cost("v5e", 1, 8192, 8192)
    assert small.bound == "memory" and small.intensity < 2


def test_precision_passes():
    assert [precision_passes(p) for p in ("DEFAULT", "HIGH", "HIGHEST")] == [1, 3, 6]
    assert precision_passes("HIGHEST", in_bytes=2) == 1  # bf16 operands ignore precision
    t = {p: matmul_cost("v5p", 8192, 8192, 8192, in_bytes=4, out_bytes=4, precision=p).mxu_seconds
         for p in ("DEFAULT", "HIGH", "HIGHEST")}
    assert t["HIGH"] == pytest.approx(3 * t["DEFAULT"]) and t["HIGHEST"] == pytest.approx(6 * t["DEFAULT"])
    with pytest.raises(ValueError):
        precision_passes("MEDIUM")


def test_attention_causal_and_flash_vs_naive():
    full = attention_cost("v5p", 4, 16, 4096, 4096, 128, causal=False)
    causal = attention_cost("v5p", 4, 16, 4096, 4096, 128, causal=True)
    assert 0.5 < causal.flops / full.flops < 0.6  # half the blocks plus the diagonal
    naive = attention_cost("v5p", 4, 16, 4096, 4096, 128, causal=True, kind="naive")
    assert naive.hbm_bytes > 10 * causal.hbm_bytes  # scores go through HBM
    bwd = attention_cost("v5p", 4, 16, 4096, 4096, 128, backward=True)
    assert bwd.flops == pytest.approx(2.5 * causal.flops)
    # head_dim 128 wastes half of v6e's 256-wide MXU, not v5p's
    eff = {c: attention_cost(c, 4, 16, 4096, 4096, 128).flops / attention_cost(c, 4, 16, 4096, 4096, 128)
           .mxu_seconds / get_chip(c).bf16_flops for c in ("v5p", "v6e")}
    assert eff["v6e"] < 0.6 * eff["v5p"]


def test_elementwise_is_hbm_bound():
    c = elementwise_cost("v5e", 1e8, n_inputs=2, n_outputs=1, bytes_per_element=2, vpu_ops=1)
    assert c.bound == "memory" and c.seconds == pytest.approx(6e8 / 820e9)


def test_all_gather_scaling_book_formulas():
    w = 9e10  # v5e bidirectional link [SB-tpus]
    ring = Axis(16, True, w)
    line = Axis(16, False, w)
    v = 2 * 2048 * 8192  # bf16[2048, 8192]
    t_ring = collective_time("all_gather", v, [ring])
    assert t_ring == pytest.approx(v / w * 15 / 16)  # V/W, independent of |X| up to (n-1)/n
    assert collective_time("all_gather", v, [line]) == pytest.approx(2 * t_ring)  # no wraparound doubles
    assert collective_time("all_reduce", v, [ring]) == pytest.approx(2 * t_ring)
    assert collective_time("all_to_all", v, [ring]) == pytest.approx(t_ring / 4)
    # two axes: bandwidths add
    assert collective_time("all_gather", v, [ring, ring]) < 0.6 * t_ring
    # latency floor: 1 us per hop, |X|/2 hops on a ring
    assert collective_time("all_gather", 1.0, [ring]) == pytest.approx(8e-6)
    assert collective_time("all_gather", v, []) == 0.0
    with pytest.raises(ValueError):
        collective_time("broadcast", v, [ring])


def test_scaling_book_measured_check():
    """[SB-shard]: v5e {X:8,Y:4}, AllGather_Y of bf16[2048,8192]: 377 us predicted (ring), 560 us no wrap."""
    v = 2 * 2048 * 8192
    t_line = collective_time("all_gather", v, [Axis(4, False, 4.5e10 * 2)])
    assert 1e6 * t_line == pytest.approx(560, rel=0.01)


def test_dcn_terms():
    bw, lat = dcn_collective_terms("all_reduce", 1e9, 4, 3.125e9, 5e-5)
    assert bw == pytest.approx(2 * 0.75 * 1e9 / 3.125e9)
    assert lat == pytest.approx(6 * 5e-5)
    assert dcn_collective_time("all_reduce", 1e9, 1, 3.125e9, 5e-5) == 0.0
    assert dcn_collective_time("all_gather", 1e9, 4, 3.125e9, 0.0, count=3) == pytest.approx(3 * 0.75 * 0.32)
    with pytest.raises(ValueError):
        dcn_collective_time("all_reduce", 1e9, 2, None, 1e-5)
    assert math.isfinite(bw)


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce", "all_to_all"])
@pytest.mark.parametrize("chip,sizes", [("v5e", (16,)), ("v5e", (16, 16)), ("v5p", (8, 8, 8)), ("v6e", (4,))])
def test_collectives_agree_with_the_simulator(kind, chip, sizes):
    """One formula (torchtpu.sim.ici): the simulator's CostModel.collective and the perfmodel agree exactly."""
    from torchtpu.sim.cost import CostModel

    c = get_chip(chip)
    v = 256e6
    axes = [Axis(n, c.has_wraparound(n), c.ici_link_bw_bidi) for n in sizes]
    ours = collective_time(kind, v, axes)
    sim = CostModel(chip).collective(kind, v, sizes).ici_seconds
    assert ours == pytest.approx(sim, rel=1e-12)
