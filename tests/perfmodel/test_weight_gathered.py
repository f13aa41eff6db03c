"""Weight-gathered serving layout (Pope et al., arXiv:2211.05102 section 3.2.3) against hand-derived values,
and the MaxText v4 configs against their scripts' shapes."""

import pytest
from torchtpu.perfmodel.blocks import Context, layer_plan
from torchtpu.perfmodel.calibration import DEFAULT
from torchtpu.perfmodel.config import load_config
from torchtpu.perfmodel.flops import param_counts
from torchtpu.perfmodel.layout import Layout, assign_axes, default_slice_shape
from torchtpu.perfmodel.serving import serve
from torchtpu.sim.chips import get_chip


def _plan(layout: Layout, seqs: float):
    chip, cfg = get_chip("v4"), load_config("palm-540b")
    axes = assign_axes(chip, layout, default_slice_shape(chip, layout.ici_size))
    ctx = Context(chip=chip, cfg=cfg, layout=layout, axes=axes, seqs=seqs, seq_len=2048, n_slices=1, dcn_bw=None,
                  calibration=DEFAULT, training=False)
    return cfg, axes, layer_plan(ctx, "dense")


def test_weight_gathered_all_gathers_each_layers_weights_once():
    cfg, axes, plan = _plan(Layout(fsdp=64), seqs=8)
    pc = param_counts(cfg)
    layer_bytes = 2 * (pc.attention_per_layer + pc.dense_mlp_per_layer)  # bf16, the whole layer
    # PaLM 540B layer by hand: q,o 2*18432*48*256 + k,v (one head) 2*18432*256 + SwiGLU 3*18432*73728
    assert layer_bytes == pytest.approx(2 * (2 * 18432 * 12288 + 2 * 18432 * 256 + 3 * 18432 * 73728), rel=1e-3)
    ag = [c for c in plan.comms if c.name == "fsdp_ag_w"]
    assert len(ag) == 1 and ag[0].phase == "fwd" and ag[0].nbytes == pytest.approx(layer_bytes, rel=1e-3)
    # all-gather: V (N-1)/N over the summed bidirectional bandwidth of the torus axes it spans (4x4x4 v4)
    bw = sum(a.bandwidth for a in axes["fsdp"] if a.size > 1)
    assert ag[0].seconds == pytest.approx(max(layer_bytes * 63 / 64 / bw, 1e-6), rel=1e-6)
    assert not [c for c in plan.comms if c.axis == "tp"]  # no activation collectives
    _, _, tp_plan = _plan(Layout(tp=64), seqs=512)
    assert not [c for c in tp_plan.comms if c.name == "fsdp_ag_w"]


def test_weight_gathered_prefill_beats_tp64_at_large_batch():
    """1M prompt tokens on 64 v4 chips: gathering 9 GB of weights per layer is cheap next to 150 TFLOP of
    matmuls per chip per layer, while tp=64 all-gathers/reduce-scatters activations in every layer."""
    wg = serve("palm-540b", "v4", 64, tp=1, fsdp=64, batch=512, prompt_len=2048, gen_len=1)
    tp = serve("palm-540b", "v4", 64, tp=64, batch=512, prompt_len=2048, gen_len=1)
    assert wg.replicas == 1 and wg.prefill_seconds < tp.prefill_seconds
    assert wg.breakdown["prefill_exposed_communication"] < 0.05 * wg.breakdown["prefill_compute"]
    assert wg.memory.weights == pytest.approx(param_counts(load_config("palm-540b")).total * 2 / 64, rel=1e-6)
    with pytest.raises(ValueError, match="tp\\*ep\\*fsdp"):
        serve("palm-540b", "v4", 64, tp=1, fsdp=48, batch=512)


def test_maxtext_v4_configs_match_the_scripts():
    c22, c52 = load_config("maxtext-v4-22b"), load_config("maxtext-v4-52b")
    assert (c22.d_model, c22.n_heads, c22.d_ff, c22.n_layers) == (6144, 24, 24576, 48)
    assert (c52.d_model, c52.n_heads, c52.d_ff, c52.n_layers) == (12288, 32, 49152, 32)
