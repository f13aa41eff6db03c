"""The sim's int8 / fp8 MXU: which chips have it (sim/data/chips.json mxu_int8, mxu_fp8, from [JAX-info]
is_matmul_supported and the Cloud TPU pages), the rate charged (int8_ops / fp8_flops), the refusal elsewhere; and
a tiny transformer quantized end to end on "tpu" against torchao on CPU."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.sim.chips import CHIPS, MxuDtypeError, get_chip
from torchtpu.sim.cost import CostModel

import torchtpu


def _dot(dtype: str, out: str, m: int = 1024, k: int = 1024, n: int = 1024):
    b = Builder()
    x, w = b.input((m, k), dtype), b.input((k, n), dtype)
    (y,) = b.emit("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,),
                  precision="DEFAULT", out_dtype=out)
    return b.finish([y], name="dot").ops[-1]


def test_the_chip_table_says_who_multiplies_int8_and_fp8():
    assert {n for n, c in CHIPS.items() if c.mxu_int8} == {"v4", "v5e", "v5p", "v6e"}
    assert {n for n, c in CHIPS.items() if "float8_e4m3fn" in c.mxu_fp8} == {"v7x"}
    assert {n for n, c in CHIPS.items() if "float8_e5m2" in c.mxu_fp8} == {"v5p", "v6e", "v7x"}
    for c in CHIPS.values():
        assert c.sources["mxu_int8"] and c.sources["mxu_fp8"]


@pytest.mark.parametrize("chip,dtype,rate", [("v5e", "int8", "int8_ops"), ("v6e", "int8", "int8_ops"),
                                             ("v6e", "float8_e5m2", "fp8_flops"),
                                             ("v7x", "float8_e4m3fn", "fp8_flops")])
def test_quantized_dots_are_charged_at_the_chip_rate(chip, dtype, rate):
    from torchtpu.drivers.ir_costs import DOT_GENERAL

    spec = get_chip(chip)
    model = CostModel(spec)
    q = DOT_GENERAL(model, _dot(dtype, "int32" if dtype == "int8" else "float32"))
    bf = DOT_GENERAL(model, _dot("bfloat16", "float32"))
    assert q.mxu_seconds / bf.mxu_seconds == pytest.approx(spec.bf16_flops / getattr(spec, rate))
    assert q.hbm_bytes < bf.hbm_bytes  # one-byte operands


@pytest.mark.parametrize("chip,dtype", [("v7x", "int8"), ("v5e", "float8_e5m2"), ("v4", "float8_e4m3fn"),
                                        ("v6e", "float8_e4m3fn")])
def test_a_chip_without_the_mxu_type_refuses_naming_it_and_the_chips_with_it(chip, dtype):
    from torchtpu.drivers.ir_costs import DOT_GENERAL

    able = [n for n, c in CHIPS.items() if c.mxu_multiplies(dtype)]
    with pytest.raises(MxuDtypeError, match=rf"\({chip}\) MXU has no {dtype} x {dtype} products.*chips whose MXU "
                                            rf"has them: {', '.join(able)}"):
        DOT_GENERAL(CostModel(get_chip(chip)), _dot(dtype, "int32" if dtype == "int8" else "float32"))


def test_a_wrapping_int8_matmul_runs_on_the_vpu_where_there_is_no_int8_mxu():
    from torchtpu.drivers.ir_costs import DOT_GENERAL

    rec = DOT_GENERAL(CostModel(get_chip("v7x")), _dot("int8", "int8", 64, 64, 64))  # torch.mm of int8 tensors
    assert rec.mxu_seconds == 0 and rec.vpu_seconds > 0


@pytest.mark.sim_only("the int8 MXU's exact int32 sums are the simulator's kernel")
def test_int8_dot_accumulates_exactly_in_int32_with_wraparound():
    from torchtpu.drivers.sim.driver import SimDriver

    a = np.full((2, 70000), -128, np.int8)
    w = np.full((70000, 3), -128, np.int8)  # 70000 * 2**14 wraps int32, as the MXU's int32 accumulator does
    drv = SimDriver(chips=["v6e"])
    b = Builder()
    x, y = b.input(a.shape, "int8"), b.input(w.shape, "int8")
    program = b.finish(b.emit("dot_general", [x, y], lhs_batch=(), rhs_batch=(), lhs_contract=(1,),
                              rhs_contract=(0,), precision="DEFAULT", out_dtype="int32"), name="i8")
    out = np.zeros((2, 3), np.int32)
    drv.execute(drv.compile(program, 0), [a, w], [out], 0)
    assert (out == np.int32(np.int64(70000 * 2**14) - 2**32)).all()


def test_a_tiny_transformer_quantized_end_to_end_matches_torchao_on_cpu(tpu):
    quant = pytest.importorskip("torchao.quantization", reason="extra 'quant' (torchao==0.18.0) not installed")
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT

    warnings.filterwarnings("ignore", module="torchao")
    torch.manual_seed(0)
    cfg = GPTConfig(vocab=64, seq=8, d_model=32, heads=2, layers=1, ffn=64)
    base = TinyGPT(cfg).to(torch.bfloat16).eval()
    idx = torch.randint(0, cfg.vocab, (2, cfg.seq), generator=torch.Generator().manual_seed(1))
    cpu, dev = copy.deepcopy(base), copy.deepcopy(base).to(tpu)
    quant.quantize_(cpu, quant.Int8DynamicActivationInt8WeightConfig())
    quant.quantize_(dev, quant.Int8DynamicActivationInt8WeightConfig())
    with torch.no_grad():
        want = cpu(idx)
        got = dev(idx.to(tpu)).cpu()
        torch._dynamo.reset()
        compiled = torch.compile(dev, backend="tpu")(idx.to(tpu)).cpu()
    torch.testing.assert_close(got, want, rtol=2**-7, atol=2**-6)  # attention's softmax in bf16: within 1-2 ulp
    assert torch.equal(compiled, got)
    assert torchtpu.stats()["by_op"]["aten._int_mm.default"]["count"] > 0
    assert torchtpu.fallback_counts() == {}
