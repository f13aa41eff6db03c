"""Lowerings added for OpInfo conformance and the Wav2Vec2 model (issues #4, #5), forward and gradients against
CPU PyTorch, with no CPU fallback."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchtpu


def _no_fallback() -> None:
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,dim,gshape", [((4, 3, 5), 0, (4, 1, 1)), ((4, 3, 5), 2, (1, 1, 5))])
def test_weight_norm_interface(tpu, dtype, shape, dim, gshape):
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(*shape, generator=gen).to(dtype).requires_grad_()
    g = torch.randn(*gshape, generator=gen).to(dtype).requires_grad_()
    gw = torch.randn(*shape, generator=gen).to(dtype)
    w, n = torch._weight_norm_interface(v, g, dim)
    (w.float() * gw.float()).sum().backward()
    vt, gt = v.detach().to(tpu).requires_grad_(), g.detach().to(tpu).requires_grad_()
    wt, nt = torch._weight_norm_interface(vt, gt, dim)
    (wt.float() * gw.to(tpu).float()).sum().backward()
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    for got, want in ((wt, w), (nt, n), (vt.grad, v.grad), (gt.grad, g.grad)):
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want, **tol)
    _no_fallback()


def test_weight_norm_module(tpu):
    """torch.nn.utils.weight_norm on a Conv1d over the last dim, as Wav2Vec2's positional convolution."""
    torch.manual_seed(0)
    conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 4, 3, padding=1, groups=2), dim=2)
    x = torch.randn(2, 4, 7)
    conv(x).square().sum().backward()
    want = [p.grad.clone() for p in conv.parameters()]
    conv.zero_grad()
    conv.to(tpu)
    with torch.tpu.precision("highest"):  # the convolution itself at f32 accuracy
        conv(x.to(tpu)).square().sum().backward()
    for p, w in zip(conv.parameters(), want):
        torch.testing.assert_close(p.grad.cpu(), w, rtol=1e-4, atol=1e-5)
    _no_fallback()


CTC_CASES = [
    (6, 3, 5, 3, [6, 5, 4], [3, 2, 0], "none", False, False),
    (6, 3, 5, 3, [6, 5, 4], [3, 2, 1], "mean", True, True),  # concatenated 1-D targets
    (5, 2, 4, 4, [5, 2], [2, 4], "none", True, False),  # the second target cannot fit: inf, zeroed
    (12, 2, 6, 5, [12, 9], [5, 3], "sum", False, False),
]


@pytest.mark.parametrize("case", CTC_CASES)
def test_ctc_loss(tpu, case):
    T, B, C, S, il, tl, reduction, zero_infinity, flat = case  # noqa: N806
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(T, B, C, generator=gen).log_softmax(2).requires_grad_()
    tg = torch.randint(1, C, (B, S), generator=gen)
    tg[0, :2] = 2  # a repeated label: the skip transition is forbidden there
    if flat:
        tg = torch.cat([tg[b, :tl[b]] for b in range(B)])
    loss = F.ctc_loss(x, tg, il, tl, reduction=reduction, zero_infinity=zero_infinity)
    loss.sum().backward()
    xt = x.detach().to(tpu).requires_grad_()
    got = F.ctc_loss(xt, tg.to(tpu), torch.tensor(il, device=tpu), torch.tensor(tl, device=tpu),
                     reduction=reduction, zero_infinity=zero_infinity)
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), loss)
    torch.testing.assert_close(xt.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
    _no_fallback()


GRID_CASES = [(d, m, p, a) for d in (2, 3) for m in ("bilinear", "nearest", "bicubic")
              for p in ("zeros", "border", "reflection") for a in (False, True) if not (d == 3 and m == "bicubic")]


@pytest.mark.parametrize("case", GRID_CASES, ids=lambda c: "-".join(map(str, c)))
def test_grid_sample(tpu, case):
    dim, mode, padding, align = case
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, *(5, 6, 4)[:dim], generator=gen).requires_grad_()
    grid = (torch.rand(2, 3, 4, *((2,) if dim == 3 else ()), dim, generator=gen) * 2.6 - 1.3).requires_grad_()
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
    go = torch.randn(out.shape, generator=gen)
    (out * go).sum().backward()
    xt, gt = x.detach().to(tpu).requires_grad_(), grid.detach().to(tpu).requires_grad_()
    got = F.grid_sample(xt, gt, mode=mode, padding_mode=padding, align_corners=align)
    (got * go.to(tpu)).sum().backward()
    torch.testing.assert_close(got.cpu(), out)
    torch.testing.assert_close(xt.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gt.grad.cpu(), grid.grad, rtol=1e-4, atol=1e-4)
    _no_fallback()


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("kind", ["lengths", "offsets"])
def test_segment_reduce_ties_and_zeros(tpu, reduce, kind):
    """Ties (max/min split the gradient), zeros (prod's exclusive product) and empty segments."""
    data = torch.tensor([[1.0, 3.0, 3.0, 0.0, 2.0, 0.0, 5.0], [2.0, -1.0, -1.0, 4.0, 0.0, 1.0, 7.0]])
    lengths = torch.tensor([[3, 0, 4], [1, 2, 4]])
    seg = {"lengths": lengths} if kind == "lengths" else {
        "offsets": torch.cat([torch.zeros(2, 1, dtype=torch.long), lengths.cumsum(1)], 1)}
    for initial in (None, 2.0):
        x = data.clone().requires_grad_()
        out = torch.segment_reduce(x, reduce, axis=1, initial=initial, **seg)
        go = torch.tensor([[1.0, -2.0, 0.5], [-1.0, 2.0, 3.0]])
        out.backward(go)
        xt = data.to(tpu).requires_grad_()
        got = torch.segment_reduce(xt, reduce, axis=1, initial=initial, **{k: v.to(tpu) for k, v in seg.items()})
        got.backward(go.to(tpu))
        torch.testing.assert_close(got.cpu(), out, equal_nan=True)
        torch.testing.assert_close(xt.grad.cpu(), x.grad, equal_nan=True)
    _no_fallback()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,kernel,out", [((2, 3, 9, 11), (2, 3), (4, 5)), ((3, 10, 7), (3, 2), (5, 3)),
                                              ((2, 2, 7, 8, 9), (2, 2, 3), (3, 4, 5))])
def test_fractional_max_pool(tpu, dtype, shape, kernel, out):
    """Deterministic given `_random_samples`: values, indices and gradients equal CPU's."""
    gen = torch.Generator().manual_seed(3)
    d = len(kernel)
    x = torch.randn(*shape, generator=gen).to(dtype).requires_grad_()
    samples = torch.rand(shape[0] if len(shape) == d + 2 else 1, shape[-d - 1], d, generator=gen).to(dtype)
    f = F.fractional_max_pool2d if d == 2 else F.fractional_max_pool3d
    o1, i1 = f(x, kernel, output_size=out, return_indices=True, _random_samples=samples)
    go = torch.randn(o1.shape, generator=gen).to(dtype)
    (o1 * go).sum().backward()
    xt = x.detach().to(tpu).requires_grad_()
    o2, i2 = f(xt, kernel, output_size=out, return_indices=True, _random_samples=samples.to(tpu))
    (o2 * go.to(tpu)).sum().backward()
    torch.testing.assert_close(o2.cpu(), o1)
    assert torch.equal(i2.cpu(), i1)
    torch.testing.assert_close(xt.grad.cpu(), x.grad)
    _no_fallback()


def test_histogramdd(tpu):
    """Counted bins (data range and explicit range), given edges (unsorted edges follow std::upper_bound), weights
    and density."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(40, 3, generator=gen) * 3
    w = torch.rand(40, generator=gen)
    edges = [torch.tensor([-4.0, -1.0, 0.5, 3.0]), torch.tensor([2.0, -3.0, 4.0]), torch.tensor([-9.0, 9.0])]
    for bins in ((2, 3, 4), edges):
        for weight in (None, w):
            for density in (False, True):
                want = torch.histogramdd(x, bins, weight=weight, density=density)
                got = torch.histogramdd(x.to(tpu), [b.to(tpu) for b in bins] if isinstance(bins, list) else bins,
                                        weight=None if weight is None else weight.to(tpu), density=density)
                torch.testing.assert_close(got.hist.cpu(), want.hist, equal_nan=True)
                for a, b in zip(got.bin_edges, want.bin_edges):
                    torch.testing.assert_close(a.cpu(), b)
    want = torch.histogramdd(x[:, :2], (3, 4), range=[-1.0, 1.0, 0.0, 2.0])
    got = torch.histogramdd(x[:, :2].to(tpu), (3, 4), range=[-1.0, 1.0, 0.0, 2.0])
    torch.testing.assert_close(got.hist.cpu(), want.hist)
    _no_fallback()


def test_histogram_with_edges_that_do_not_increase(tpu):
    """histogram(bins=tensor) as ATen's histogramdd: only values in [edges[0], edges[-1]] count (edges that fall
    then rise held none on CPU and one on the tpu), the bin by std::upper_bound over the given order."""
    x = torch.tensor([0.0199, -1.5039, 0.5492, -1.2327, 0.095, 0.1])
    for edges in (torch.tensor([0.1034, 0.0898, -0.0878, 0.1023]), torch.tensor([-2.0, 0.5, -1.0, 0.2, 1.0]),
                  torch.tensor([-2.0, -1.0, 0.0, 0.1, 1.0])):
        for density in (False, True):
            want = torch.histogram(x, edges, density=density)
            got = torch.histogram(x.to(tpu), edges.to(tpu), density=density)
            torch.testing.assert_close(got.hist.cpu(), want.hist, equal_nan=True)
    _no_fallback()


@pytest.mark.parametrize("shape,scale", [((3, 3), 1.0), ((2, 4, 4), 3.0), ((5, 5), 0.1), ((2, 0, 0), 1.0),
                                         ((4, 4), 20.0)])
def test_matrix_exp(tpu, shape, scale):
    gen = torch.Generator().manual_seed(5)
    a = (torch.randn(*shape, generator=gen) * scale).double().requires_grad_()
    e = torch.linalg.matrix_exp(a)
    g = torch.randn(e.shape, generator=gen).double()
    (e * g).sum().backward()
    at = a.detach().float().to(tpu).requires_grad_()
    with torch.tpu.precision("highest"):
        et = torch.linalg.matrix_exp(at)
        (et * g.float().to(tpu)).sum().backward()
    big = e.abs().amax().item() if e.numel() else 1.0  # f32 accuracy relative to the largest entry
    torch.testing.assert_close(et.cpu().double(), e.detach(), rtol=1e-5, atol=1e-5 * big)
    torch.testing.assert_close(at.grad.cpu().double(), a.grad, rtol=1e-4, atol=1e-5 * max(big, 1.0) * 10)
    # bfloat16: CPU's own bf16 result is inf/NaN here, so the reference is float64 rounded
    if e.numel() and scale <= 3.0:
        eb = torch.linalg.matrix_exp(a.detach().bfloat16().to(tpu)).cpu()
        torch.testing.assert_close(eb.double(), torch.linalg.matrix_exp(a.detach().bfloat16().double()),
                                   rtol=4e-2, atol=4e-2 * big)
    _no_fallback()


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
@pytest.mark.parametrize("shape", [(5, 5), (5, 2), (2, 5), (3, 4, 3)])
def test_householder_family(tpu, dtype, shape):
    """geqrf in LAPACK's compact format, householder_product (orgqr) and ormqr in all four modes."""
    gen = torch.Generator().manual_seed(6)
    a0 = torch.randn(*shape, dtype=dtype, generator=gen)
    a, tau = torch.geqrf(a0)
    at, taut = torch.geqrf(a0.to(tpu))
    torch.testing.assert_close(at.cpu(), a, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(taut.cpu(), tau, rtol=1e-4, atol=1e-5)
    if shape[-2] >= shape[-1]:
        q = torch.linalg.householder_product(a, tau)
        torch.testing.assert_close(torch.linalg.householder_product(a.to(tpu), tau.to(tpu)).cpu(), q,
                                   rtol=1e-4, atol=1e-5)
    m = shape[-2]
    for left in (True, False):
        for transpose in (True, False):
            c = torch.randn(*shape[:-2], *((m, 3) if left else (3, m)), dtype=dtype, generator=gen)
            want = torch.ormqr(a, tau, c, left, transpose)
            got = torch.ormqr(a.to(tpu), tau.to(tpu), c.to(tpu), left, transpose)
            torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
    _no_fallback()


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(tpu, driver):
    gen = torch.Generator().manual_seed(7)
    for sa, sb in [((2, 3), (2, 3)), ((4, 3), (4, 3)), ((2, 4, 3), (2, 4, 2)), ((5, 3), (5,))]:
        a = torch.randn(*sa, generator=gen).requires_grad_()
        b = torch.randn(*sb, generator=gen).requires_grad_()
        want = torch.linalg.lstsq(a, b, driver=driver)
        want.solution.sum().backward()
        at, bt = a.detach().to(tpu).requires_grad_(), b.detach().to(tpu).requires_grad_()
        with torch.tpu.precision("highest"):  # the backward's matmuls at f32 accuracy
            got = torch.linalg.lstsq(at, bt, driver=driver)
            got.solution.sum().backward()
        for x, y in zip(got, want):
            assert x.shape == y.shape and x.dtype == y.dtype
            torch.testing.assert_close(x.cpu(), y, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(at.grad.cpu(), a.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(bt.grad.cpu(), b.grad, rtol=1e-4, atol=1e-4)
    _no_fallback()


def test_hash_tensor(tpu):
    """Bit-exact: float64 bit patterns composed without a bitcast (signed zero, inf, NaN, f64 subnormals)."""
    gen = torch.Generator().manual_seed(8)
    xs = [torch.randn(3, 4, generator=gen),
          torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -2.5, 3.0]),
          torch.randn(2, 3, generator=gen).bfloat16(), torch.randint(-9, 9, (3, 5), generator=gen),
          torch.rand(4, generator=gen) > 0.5, torch.tensor([5e-320, -1e-310, 1.5], dtype=torch.float64)]
    for x in xs:
        for kw in ({}, {"dim": 0, "keepdim": True}, {"dim": -1}):
            want = torch.hash_tensor(x, **kw)
            got = torch.hash_tensor(x.to(tpu), **kw)
            assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
            out = torch.empty(0, dtype=torch.uint64, device=tpu)
            torch.hash_tensor(x.to(tpu), **kw, out=out)
            assert torch.equal(out.cpu(), want)
    _no_fallback()
