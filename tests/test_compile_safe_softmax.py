"""Compiled `_safe_softmax` (scaled_dot_product_attention's math path): the fully-masked-row guard per row
(ops/safe_softmax.py), results bit-identical to eager DEFER_NEVER, fully-masked rows as CPU gives them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchtpu
from torchtpu.compile.backend import _decompositions
from torchtpu.ops import safe_softmax
from torchtpu.ops.registry import TABLE

aten = torch.ops.aten
NEG = float("-inf")


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(a.isnan(), b.isnan())
    assert torch.equal(torch.nan_to_num(a, 0.0, 7.0, -7.0), torch.nan_to_num(b, 0.0, 7.0, -7.0))
    assert torch.equal(torch.signbit(a), torch.signbit(b))


def _eager_and_compiled(fn, *args):
    torch._dynamo.reset()
    tpu = [a.to("tpu") for a in args]
    with torchtpu.eager_mode("DEFER_NEVER"):
        eager = fn(*tpu).cpu()
        compiled = torch.compile(fn, backend="tpu", fullgraph=True)(*tpu).cpu()
    return eager, compiled


def test_graph_lowering_replaces_the_decomposition():
    assert TABLE[aten._safe_softmax.default].graph is safe_softmax.safe_softmax
    assert aten._safe_softmax.default not in _decompositions()


def _scores(dtype: torch.dtype) -> torch.Tensor:
    x = torch.randn(2, 3, 5, 7, generator=torch.Generator().manual_seed(0)).to(dtype)
    x[0, 0, 1] = NEG  # fully masked row
    x[0, 1, 2, :3] = NEG  # partly masked
    x[1, 2, 0] = NEG
    x[1, 2, 0, 4] = float("nan")  # -inf and a NaN: not fully masked, NaN as softmax gives
    x[1, 0, 3, 2] = float("inf")  # +inf: NaN row
    x[1, 1, 4] = float("nan")
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dim", [-1, 2, 0])
def test_safe_softmax_as_eager_and_cpu(dtype, dim):
    x = _scores(dtype)
    eager, compiled = _eager_and_compiled(lambda t: aten._safe_softmax(t, dim), x)
    _same(compiled, eager)
    cpu = aten._safe_softmax(x, dim)
    assert torch.equal(compiled.isnan(), cpu.isnan())
    if dim == -1:
        assert torch.equal(compiled[0, 0, 1], torch.zeros(7, dtype=dtype))
        assert compiled[1, 2, 0].isnan().all()


def test_zero_dim_input():
    for v in (NEG, 1.5, float("nan")):
        x = torch.tensor(v)
        eager, compiled = _eager_and_compiled(lambda t: aten._safe_softmax(t, 0), x)
        _same(compiled, eager)


def test_other_dtype_runs_op_by_op():
    x = _scores(torch.float16)
    eager, compiled = _eager_and_compiled(lambda t: aten._safe_softmax(t, -1, torch.float32), x)
    _same(compiled, eager)


@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_masked_rows_as_eager(causal):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 6, 8, generator=g) for _ in range(3))
    mask = torch.rand(6, 6, generator=g) > 0.4
    mask[2] = False  # a fully masked row: NaN-free zeros on the math path
    attn = None if causal else mask

    def fn(q, k, v, *m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m[0] if m else None, is_causal=causal)

    args = (q, k, v) if causal else (q, k, v, attn)
    eager, compiled = _eager_and_compiled(fn, *args)
    _same(compiled, eager)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        cpu = fn(*args)
    assert torch.equal(compiled.isnan(), cpu.isnan())


def test_sdpa_training_gradients_as_eager():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(3))
    mask = torch.rand(5, 5, generator=g) > 0.5
    mask[1] = False

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m).square().sum()

    grads = []
    for compile_ in (False, True):
        torch._dynamo.reset()
        leaves = [t.to("tpu").requires_grad_() for t in (q, k, v)]
        f = torch.compile(fn, backend="tpu") if compile_ else fn
        with torchtpu.eager_mode("DEFER_NEVER"):
            f(*leaves, mask.to("tpu")).backward()
        grads.append([t.grad.cpu() for t in leaves])
    for a, b in zip(*grads):
        _same(b, a)
