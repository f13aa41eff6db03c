"""The device issue's op list, forward and backward, against CPU PyTorch with zero CPU fallbacks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchtpu

R = torch.Generator().manual_seed(0)


def _x(*shape):
    return torch.randn(*shape, generator=R)


CASES = {
    "add": lambda a, b: a + b * 2, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1), "pow": lambda a, b: a.abs() ** 1.5, "neg": lambda a, b: -a,
    "exp": lambda a, b: a.exp(), "log": lambda a, b: (a.abs() + 1).log(), "sqrt": lambda a, b: (a.abs() + 1).sqrt(),
    "rsqrt": lambda a, b: (a.abs() + 1).rsqrt(), "relu": lambda a, b: F.relu(a), "gelu": lambda a, b: F.gelu(a),
    "gelu_tanh": lambda a, b: F.gelu(a, approximate="tanh"), "silu": lambda a, b: F.silu(a),
    "tanh": lambda a, b: a.tanh(), "sigmoid": lambda a, b: a.sigmoid(), "where": lambda a, b: torch.where(a > b, a, b),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, 0.5), "clamp": lambda a, b: a.clamp(-0.5, 0.5),
    "sum": lambda a, b: a.sum(), "sum_dim": lambda a, b: a.sum(1, keepdim=True), "mean": lambda a, b: a.mean(0),
    "amax": lambda a, b: a.amax(1), "var": lambda a, b: a.var(1), "std": lambda a, b: a.std(),
    "mm": lambda a, b: a @ b.t(), "matmul_bcast": lambda a, b: a.unsqueeze(0).expand(2, 4, 6) @ b.t(),
    "linear": lambda a, b: F.linear(a, b, b[:, 0]), "addmm": lambda a, b: torch.addmm(a[:, :4], a, b.t()),
    "bmm": lambda a, b: torch.bmm(a.reshape(2, 2, 6), b.reshape(2, 6, 2)),
    "baddbmm": lambda a, b: torch.baddbmm(a[:2, :2].reshape(1, 2, 2), a.reshape(1, 4, 6)[:, :2],
                                          b.reshape(1, 6, 4)[..., :2]),
    "softmax": lambda a, b: a.softmax(-1), "log_softmax": lambda a, b: F.log_softmax(a, 0),
    "layer_norm": lambda a, b: F.layer_norm(a, (6,), b[0], b[1]),
    "cross_entropy": lambda a, b: F.cross_entropy(a, torch.tensor([0, 5, 2, 1], device=a.device)),
    "cat": lambda a, b: torch.cat([a, b], 1), "stack": lambda a, b: torch.stack([a, b], 0),
    "index_select": lambda a, b: a.index_select(1, torch.tensor([0, 2, 2], device=a.device)),
    "gather": lambda a, b: a.gather(1, torch.tensor([[0, 1], [2, 3], [4, 5], [0, 0]], device=a.device)),
    "scatter": lambda a, b: torch.zeros(4, 6, device=a.device).scatter(1, torch.tensor([[0], [1], [2], [3]],
                                                                                          device=a.device), a[:, :1]),
    "embedding": lambda a, b: F.embedding(torch.tensor([[0, 3], [1, 1]], device=a.device), a),
    "views": lambda a, b: a.t().reshape(3, 8)[1:, ::2].permute(1, 0).unsqueeze(0).squeeze(0),
    "argmax": lambda a, b: a.argmax(1), "compare": lambda a, b: (a > b) & (a <= 0.5) | (a == b),
    "index": lambda a, b: a[torch.tensor([3, 0], device=a.device)],
    "bool_index": lambda a, b: a[a > 0],
}
NON_DIFF = {"argmax", "compare"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_cpu_forward_and_backward(tpu, name):
    fn = CASES[name]
    a_cpu, b_cpu = _x(4, 6), _x(4, 6)
    diff = name not in NON_DIFF
    a1, b1 = a_cpu.clone().requires_grad_(diff), b_cpu.clone().requires_grad_(diff)
    a2, b2 = a_cpu.to(tpu).requires_grad_(diff), b_cpu.to(tpu).requires_grad_(diff)
    with torchtpu.precision("HIGHEST"):
        out_cpu, out_tpu = fn(a1, b1), fn(a2, b2)
        assert out_tpu.device.type == "tpu"
        torch.testing.assert_close(out_tpu.cpu(), out_cpu, rtol=1e-5, atol=1e-5)
        if diff:
            out_cpu.float().square().sum().backward()
            out_tpu.float().square().sum().backward()
            for g_cpu, g_tpu in ((a1.grad, a2.grad), (b1.grad, b2.grad)):
                if g_cpu is None:
                    assert g_tpu is None
                else:
                    torch.testing.assert_close(g_tpu.cpu(), g_cpu, rtol=1e-4, atol=1e-5)
    assert torchtpu.fallback_counts() == {}


FACTORIES = {
    "empty": lambda d: torch.empty(3, 2, device=d).shape, "zeros": lambda d: torch.zeros(3, 2, device=d),
    "ones": lambda d: torch.ones(3, dtype=torch.int64, device=d), "full": lambda d: torch.full((2, 2), 7.5, device=d),
    "arange": lambda d: torch.arange(1, 10, 3, device=d), "arange_f": lambda d: torch.arange(0, 1, 0.25, device=d),
    "linspace": lambda d: torch.linspace(-1, 1, 7, device=d), "zeros_like": lambda d: torch.zeros_like(
        torch.ones(2, device=d)),
    "eye": lambda d: torch.eye(3, device=d), "tril": lambda d: torch.ones(3, 3, device=d).tril(),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_match_cpu(tpu, name):
    out = FACTORIES[name](tpu)
    ref = FACTORIES[name]("cpu")
    if isinstance(out, torch.Tensor):
        torch.testing.assert_close(out.cpu(), ref)
    else:
        assert out == ref
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int64, torch.int32, torch.bool, torch.float16])
def test_dtypes_elementwise_and_reductions(tpu, dtype):
    x = (_x(5, 7) * 4).to(dtype)
    y = (_x(5, 7) * 4).to(dtype)
    for fn in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: torch.maximum(a, b), lambda a, b: a == b,
               lambda a, b: a.sum(0), lambda a, b: a.amax(1), lambda a, b: torch.where(a > b, a, b)):
        if dtype == torch.bool and fn(x, y).dtype != torch.bool and fn(x, y).dtype != torch.int64:
            continue
        torch.testing.assert_close(fn(x.to(tpu), y.to(tpu)).cpu(), fn(x, y))
    assert torchtpu.fallback_counts() == {}


def test_expanded_empty_views_read_nothing():
    # An empty storage expanded to (1, 0) -> (3, 0), and the nuclear norm's backward over a (0, 5) input, once
    # built a slice of one element out of a zero-element storage in a region program (pjrt refused to compile it).
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        with torchtpu.eager_mode(mode):
            e = torch.ones(1, 0, device="tpu").expand(3, 0)
            assert (e + 1).cpu().shape == (3, 0)
            x = torch.zeros(0, 5, device="tpu", requires_grad=True)
            y = torch.linalg.norm(x, "nuc")
            y.backward()
            assert y.item() == 0.0 and x.grad.shape == (0, 5)


@pytest.mark.parametrize("name,fn", [
    ("mH@", lambda a, b: a.mH @ b),
    ("bmm", lambda a, b: torch.bmm(a[None].mH, b[None].conj())),
    ("addmm", lambda a, b: torch.addmm(b, a.conj(), b.mT.conj())),
    ("dot", lambda a, b: torch.dot(a[0].conj(), b[1])),
    ("vdot", lambda a, b: torch.vdot(a[0], b[1].conj())),
    ("neg", lambda a, b: torch._neg_view(a.real) @ b.real),
])
def test_conjugate_and_negative_views_reach_kernels_resolved(tpu, name, fn):
    # mm, bmm, addmm, dot, vdot are fallthroughs of ATen's Conjugate/Negative keys: the kernel sees the lazy bit
    torch.manual_seed(0)
    a, b = torch.randn(3, 3, dtype=torch.complex64), torch.randn(3, 3, dtype=torch.complex64)
    with torch.tpu.precision("highest"):
        got = fn(a.to(tpu), b.to(tpu)).cpu()
    torch.testing.assert_close(got, fn(a, b), rtol=1e-5, atol=1e-5)
