"""Bounded dynamism under `torch.compile(dynamic=True)`: a conv + attention + RMSNorm model trained over 24
sequence lengths compiles one forward and one backward Program per bucket, with outputs and gradients equal to
eager's at every length (padded keys masked before softmax, padded queries and tokens dropped, the batch x
sequence rows of the linears padded factor by factor); `bounded(buckets="max")` with a declared bound compiles
one; what padding would change (a sort along the padded axis, a slice from inside it) runs at its exact shape."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchtpu
from torchtpu.compile import bounded


class ConvAttention(nn.Module):
    def __init__(self, d: int = 16, causal: bool = False) -> None:
        super().__init__()
        self.causal = causal
        self.conv = nn.Conv1d(d, d, 3, padding=1)
        self.qkv = nn.Linear(d, 3 * d)
        self.norm = nn.RMSNorm(d)
        self.out = nn.Linear(d, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        q, k, v = self.qkv(h).view(b, t, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.out(self.norm(h + a.transpose(1, 2).reshape(b, t, d)))


def _fresh() -> None:
    torch._dynamo.reset()
    torchtpu.reset_stats()


def test_training_over_24_lengths_compiles_one_program_per_bucket(tpu):
    _fresh()
    torch.manual_seed(0)
    model = ConvAttention().to(tpu)
    f = torch.compile(model, backend="tpu", dynamic=True)
    params = list(model.parameters())
    for n in range(5, 29):  # buckets 8, 16, 32
        x = torch.randn(3, n, 16)
        outs, grads = [], []
        for run in (f, model):
            xt = x.to(tpu).requires_grad_()
            out = run(xt)
            got = torch.autograd.grad(out.square().mean(), [xt, *params])
            outs.append(out.detach().cpu())
            grads.append([g.cpu() for g in got])
        assert outs[0].shape == (3, n, 8)
        assert torch.equal(outs[0], outs[1]), n
        # the padded program sums the conv weight's gradient over the bucket's length in another blocking than
        # eager (one bf16 pass, fp32 accumulation): within 5e-6 of each other, both ~2e-5 from float64's result;
        # a wrong mask would differ by the gradient's own size
        for g, ref in zip(*grads):
            torch.testing.assert_close(g, ref, rtol=1e-4, atol=1e-5)
    stats = torchtpu.stats()["compile"]
    assert stats["exact_shape_fallbacks"] == 0, stats
    assert stats["programs"] == 6, stats  # forward and backward x 3 buckets


def test_causal_attention_and_declared_bound_give_one_program(tpu):
    _fresh()
    torch.manual_seed(1)
    model = ConvAttention(causal=True).to(tpu)
    f = torch.compile(model, backend=bounded(buckets="max"), dynamic=True)
    with torch.no_grad():
        for n in (3, 7, 12, 20, 31):
            x = torch.randn(2, n, 16).to(tpu)
            torch._dynamo.mark_dynamic(x, 1, min=2, max=32)
            assert torch.equal(f(x).cpu(), model(x).cpu()), n
    stats = torchtpu.stats()["compile"]
    assert stats["programs"] == 1 and stats["exact_shape_fallbacks"] == 0, stats


def test_what_padding_would_change_runs_exact(tpu):
    _fresh()
    def g(a):
        return a[:, 1:].softmax(-1) * a.shape[1]

    f = torch.compile(g, backend="tpu", dynamic=True)
    for n in (5, 6, 7):
        x = torch.randn(2, n).to(tpu)
        assert torch.equal(f(x).cpu(), g(x).cpu())
    stats = torchtpu.stats()["compile"]
    assert stats["exact_shape_fallbacks"] == 3 and stats["programs"] == 3, stats


def test_size_dependent_constants_become_inputs(tpu):
    """A mean over the padded axis divides by the real count, and an int read as a value keeps its value: one
    Program for the bucket, fed each call's constants."""
    _fresh()
    def g(a, n):
        return a.mean(-1) + a.logsumexp(-1) + n

    f = torch.compile(g, backend="tpu", dynamic=True)
    for n in (5, 6, 7):
        x = torch.randn(3, n).to(tpu)
        assert torch.equal(f(x, n).cpu(), g(x, n).cpu())
    stats = torchtpu.stats()["compile"]
    assert stats["programs"] == 1 and stats["exact_shape_fallbacks"] == 0, stats


@pytest.mark.parametrize("buckets", ["big", [], [0, 8]])
def test_bounded_rejects_a_bad_policy(buckets):
    with pytest.raises(ValueError, match="valid: pow2, none, max"):
        bounded(buckets=buckets)
