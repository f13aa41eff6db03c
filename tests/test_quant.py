"""torchao quantization on "tpu", unmodified: its configs' tensor subclasses dispatch to the quantized matmuls
(torchtpu/ops/quantized.py) and fp8 converts, against torchao on CPU, in every eager mode and under torch.compile,
with zero CPU fallbacks; the quantized ATen ops themselves against CPU; float8 tensors as storage."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchtpu

torchao_quant = pytest.importorskip("torchao.quantization", reason="extra 'quant' (torchao==0.18.0) not installed")

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
# (config, exact vs torchao on CPU?). int8 weight-only, int8 dynamic and float8 weight-only are bit-equal; intx
# weight-only goes through addmm in bf16, whose bias add rounds once more on "tpu" than CPU's fused kernel: within
# one bf16 ulp of the output.
CONFIGS = {
    "int8_weight_only": (lambda: torchao_quant.Int8WeightOnlyConfig(), True),
    "int8_dynamic": (lambda: torchao_quant.Int8DynamicActivationInt8WeightConfig(), True),
    "intx_weight_only": (lambda: torchao_quant.IntxWeightOnlyConfig(), False),
    "float8_weight_only": (lambda: torchao_quant.Float8WeightOnlyConfig(), True),
}


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 32)).to(torch.bfloat16)


def _close(got: torch.Tensor, want: torch.Tensor, exact: bool) -> None:
    if exact:
        assert torch.equal(got, want), (got.float() - want.float()).abs().max()
    else:
        torch.testing.assert_close(got, want, rtol=2**-7, atol=2**-7)


@pytest.fixture(scope="module")
def quantized():
    """Per config: (the model quantized on CPU, the same model quantized on "tpu", an input)."""
    warnings.filterwarnings("ignore", module="torchao")
    x = torch.randn(16, 64, dtype=torch.bfloat16, generator=torch.Generator().manual_seed(1))
    out = {}
    for name, (make, exact) in CONFIGS.items():
        cpu, dev = _model(), _model().to("tpu")
        torchao_quant.quantize_(cpu, make())
        torchao_quant.quantize_(dev, make())
        out[name] = (cpu, dev, x, exact)
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_config_matches_torchao_on_cpu_in_every_eager_mode(quantized, tpu, name):
    cpu, dev, x, exact = quantized[name]
    want = cpu(x)
    results = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results.append(dev(x.to(tpu)).cpu())
    _close(results[0], want, exact)
    for r in results[1:]:
        assert torch.equal(r, results[0])  # bit-identical across eager modes
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_quantized_model_equals_eager_in_one_program(quantized, tpu, name):
    _, dev, x, _ = quantized[name]
    eager = dev(x.to(tpu)).cpu()
    torch._dynamo.reset()
    torchtpu.reset_stats()
    compiled = torch.compile(dev, backend="tpu")
    assert torch.equal(compiled(x.to(tpu)).cpu(), eager)
    stats = torchtpu.stats()["compile"]
    assert stats["programs"] == 1 and stats["eager_graphs"] == 0, stats
    assert torchtpu.fallback_counts() == {}


def test_int8_dynamic_runs_int_mm_on_the_mxu(quantized, tpu):
    """torchao's out_dtype(mm, int32) reaches aten._int_mm here, as on CUDA (not two int32 operands)."""
    _, dev, x, _ = quantized["int8_dynamic"]
    torchtpu.reset_stats()
    dev(x.to(tpu)).cpu()
    assert torchtpu.stats()["by_op"]["aten._int_mm.default"]["count"] == 2  # one per Linear


@pytest.mark.parametrize("mode", MODES)
def test_int_mm_is_exact_int32_accumulation(tpu, mode):
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (24, 1152), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (1152, 40), dtype=torch.int8, generator=g)
    a[0], b[:, 0] = -128, -128  # 1152 * 2**14 = 18874368 > 2**24: exact only with integer accumulation
    with torch.tpu.eager_mode(mode):
        got = torch._int_mm(a.to(tpu), b.to(tpu)).cpu()
    want = torch._int_mm(a, b)
    assert got.dtype == torch.int32 and torch.equal(got, want) and want[0, 0] == 18874368
    assert torchtpu.fallback_counts() == {}


def test_int_mm_refuses_what_cpu_refuses(tpu):
    a = torch.ones(8, 32, dtype=torch.int8, device=tpu)
    with pytest.raises(RuntimeError, match="self.size\\(1\\) needs to match mat2.size\\(0\\) but got 32 and 16"):
        torch._int_mm(a, torch.ones(16, 8, dtype=torch.int8, device=tpu))
    with pytest.raises(RuntimeError, match="Expected self dtype to be int8"):
        torch._int_mm(a.to(torch.int32), torch.ones(32, 8, dtype=torch.int8, device=tpu))


def test_weight_int8pack_mm_matches_cpu(tpu):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 64, generator=g).to(torch.bfloat16)
    w = torch.randint(-128, 128, (48, 64), dtype=torch.int8, generator=g)
    s = torch.rand(48, generator=g).to(torch.bfloat16)
    want = torch._weight_int8pack_mm(x, w, s)
    assert torch.equal(torch._weight_int8pack_mm(x.to(tpu), w.to(tpu), s.to(tpu)).cpu(), want)
    with pytest.raises(RuntimeError, match="scales of shape \\(48,\\)"):
        torch._weight_int8pack_mm(x.to(tpu), w.to(tpu), s[:8].to(tpu))
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_storage_and_converts_match_cpu(tpu, fp8):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, generator=g) * torch.logspace(-12, 18, 4096, base=2.0)
    x[:6] = torch.tensor([float("inf"), -float("inf"), float("nan"), 1e30, 449.0, 464.0])
    want = x.to(fp8)  # e4m3fn saturates at +-448 (c10), e5m2 overflows to inf
    for src in (x, x.to(torch.bfloat16), x.to(torch.float16)):
        got = src.to(tpu).to(fp8)
        assert got.dtype == fp8 and got.device.type == "tpu"  # equal values; a NaN's sign bit may differ (CPU's
        torch.testing.assert_close(got.cpu().float(), src.to(fp8).float(), rtol=0, atol=0, equal_nan=True)  # own do)
    on_dev = want.to(tpu)  # host bytes in, back out unchanged
    assert torch.equal(on_dev.cpu().view(torch.uint8), want.view(torch.uint8))
    for dtype in (torch.float32, torch.bfloat16):
        torch.testing.assert_close(on_dev.to(dtype).cpu(), want.to(dtype), rtol=0, atol=0, equal_nan=True)
    assert torch.equal(on_dev.reshape(64, 64).t().contiguous().cpu().view(torch.uint8),
                       want.reshape(64, 64).t().contiguous().view(torch.uint8))
    with pytest.raises(NotImplementedError, match=f"dtype {fp8} is not supported.*float8 tensors take only"):
        on_dev + on_dev  # as on CPU, no arithmetic on fp8
    torch._dynamo.reset()
    with pytest.raises(NotImplementedError, match=f"aten.add.Tensor: dtype {fp8} is not supported"):
        torch.compile(lambda a: a + a, backend="tpu")(on_dev)  # nor in a compiled graph
    idx = torch.tensor([5, 0, 4095])
    for got, ref in ((torch.cat([on_dev[:7], on_dev[-3:]]), torch.cat([want[:7], want[-3:]])),
                     (on_dev.index_select(0, idx.to(tpu)), want.index_select(0, idx)),
                     (torch.full((3,), 0.3, dtype=fp8, device=tpu), torch.full((3,), 0.3, dtype=fp8))):
        assert torch.equal(got.cpu().view(torch.uint8), ref.view(torch.uint8))
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type c10::{str(fp8)[6:].capitalize()} "
                                           "without overflow"):
        on_dev.fill_(-1e9)  # as CPU refuses it
    assert torchtpu.fallback_counts() == {}


@pytest.mark.sim_only("the chip table's fp8 MXU formats are the simulator's refusal")
def test_scaled_mm_refused_on_a_chip_without_fp8_mxu(tpu):
    from torchtpu.sim.chips import MxuDtypeError

    a = torch.ones(16, 32, dtype=torch.float8_e4m3fn, device=tpu)
    one = torch.tensor(1.0, device=tpu)
    with pytest.raises(MxuDtypeError, match=r"the TPU v5e \(v5e\) MXU has no float8_e4m3fn.*chips whose MXU has "
                                            r"them: v7x"):
        torch._scaled_mm(a, a.t(), one, one, out_dtype=torch.float32)


_SCALED_MM_ON_V7X = r"""
import torch, torchtpu
g = torch.Generator().manual_seed(0)
a = (torch.randn(16, 64, generator=g) * 4).to(torch.float8_e4m3fn)
b = (torch.randn(24, 64, generator=g) * 4).to(torch.float8_e4m3fn).t()
cases = [(torch.tensor(0.5), torch.tensor(2.0), None, torch.bfloat16),
         (torch.rand(16, 1, generator=g), torch.rand(1, 24, generator=g), torch.randn(24, generator=g), torch.float32),
         (torch.tensor(0.25), torch.tensor(1.0), None, None)]
for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
    for sa, sb, bias, out in cases:
        want = torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out)
        with torch.tpu.eager_mode(mode):
            got = torch._scaled_mm(a.to("tpu"), b.to("tpu"), sa.to("tpu"), sb.to("tpu"),
                                   bias=None if bias is None else bias.to("tpu"), out_dtype=out).cpu()
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        torch.testing.assert_close(got.float(), want.float(), rtol=2**-7 if out != torch.float32 else 1e-5,
                                   atol=1e-5)
assert torchtpu.fallback_counts() == {}
print("ok")
"""

_FP8_STEP_COMPILED_ON_V7X = r"""
import torch, torchtpu
g = torch.Generator().manual_seed(0)
b = (torch.randn(24, 64, generator=g) * 4).to(torch.float8_e4m3fn).t()


def step(x, w, sw):  # an fp8 linear as torchao's float8 dynamic config runs it: quantize x, then _scaled_mm
    sx = (x.abs().amax() / 448.0).reshape(())
    return torch._scaled_mm((x / sx).to(torch.float8_e4m3fn), w, sx, sw, out_dtype=torch.bfloat16)
x = torch.randn(16, 64, generator=g)
eager = step(x.to("tpu"), b.to("tpu"), torch.tensor(0.5).to("tpu")).cpu()
compiled = torch.compile(step, backend="tpu")(x.to("tpu"), b.to("tpu"), torch.tensor(0.5).to("tpu")).cpu()
assert torch.equal(compiled, eager)
torch.testing.assert_close(eager.float(), step(x, b, torch.tensor(0.5)).float(), rtol=2**-7, atol=1e-5)
assert torchtpu.fallback_counts() == {}
print("ok")
"""


def _on_v7x(script: str) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHTPU_CHIP="v7x")  # the chip is chosen per process
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_scaled_mm_matches_cpu_on_a_chip_with_fp8():
    _on_v7x(_SCALED_MM_ON_V7X)


@pytest.mark.slow
def test_a_compiled_fp8_linear_step_equals_eager_on_a_chip_with_fp8():
    _on_v7x(_FP8_STEP_COMPILED_ON_V7X)
