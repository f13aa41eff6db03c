"""ATen's fused RNN cells on tpu (`_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` and their backward ops, which
lstm_cell / gru_cell call on a PrivateUse1 device): values, workspace and gradients against CPU's own composite
cells, in every eager mode (bit-identical across modes) and under torch.compile(backend="tpu")."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
TOL = {torch.float32: 2e-6, torch.float64: 1e-12, torch.bfloat16: 2e-2}


def _inputs(kind: str, dtype: torch.dtype, bias: bool, device: str) -> list[torch.Tensor | None]:
    g = torch.Generator().manual_seed(3)
    k = 4 if kind == "lstm" else 3
    batch, hidden = 5, 6
    made = [torch.randn(batch, k * hidden, generator=g, dtype=torch.float64) * 2 for _ in range(2)]
    made.append(torch.randn(batch, hidden, generator=g, dtype=torch.float64))
    made += [torch.randn(k * hidden, generator=g, dtype=torch.float64) for _ in range(2)] if bias else [None, None]
    return [t.to(dtype).to(device).requires_grad_() if t is not None else None for t in made]


def _reference(kind: str, ig: torch.Tensor, hg: torch.Tensor, h: torch.Tensor, bi: torch.Tensor | None,
               bh: torch.Tensor | None) -> list[torch.Tensor]:
    """CPU's lstm_cell / gru_cell composite (aten/src/ATen/native/RNN.cpp) on precomputed gates."""
    if bi is not None:
        ig, hg = ig + bi, hg + bh
    if kind == "lstm":
        i, f, c, o = (hg + ig).chunk(4, 1)
        i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
        cy = f * h + i * c
        return [o * cy.tanh(), cy]
    ir, iz, in_ = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (hr + ir).sigmoid(), (hz + iz).sigmoid()
    n = (in_ + hn * r).tanh()
    return [(h - n) * z + n]


def _fused(kind: str) -> Callable[..., tuple[torch.Tensor, ...]]:
    return torch.ops.aten._thnn_fused_lstm_cell if kind == "lstm" else torch.ops.aten._thnn_fused_gru_cell


def _run_fused(kind: str, args: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """Outputs, workspace, then the gradients of every defined input (through the fused backward op)."""
    out = _fused(kind)(*args)
    outs = list(out[:-1])
    weights = torch.linspace(-1, 1, outs[0].numel(), dtype=torch.float64).reshape(outs[0].shape)
    loss = sum((o.double() * weights.to(o.device) * (j + 1)).sum() for j, o in enumerate(outs))
    grads = torch.autograd.grad(loss, [a for a in args if a is not None])
    return [t.detach().cpu() for t in (*out, *grads)]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_cell_matches_cpu_composite_in_every_mode(tpu, kind, dtype, bias):
    want_args = _inputs(kind, dtype, bias, "cpu")
    outs = _reference(kind, *want_args)
    weights = torch.linspace(-1, 1, outs[0].numel(), dtype=torch.float64).reshape(outs[0].shape)
    loss = sum((o.double() * weights * (j + 1)).sum() for j, o in enumerate(outs))
    want = [o.detach() for o in outs] + list(torch.autograd.grad(loss, [a for a in want_args if a is not None]))
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = _run_fused(kind, _inputs(kind, dtype, bias, "tpu"))
    tol = TOL[dtype]
    first = got["DEFER_NEVER"]
    n_out = len(outs)
    for g, w in zip(first[:n_out] + first[n_out + 1:], want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=tol, atol=tol * 4)
    hidden = want_args[2].shape[1]
    workspace = first[n_out]
    assert workspace.shape == (5, (4 if kind == "lstm" else 5) * hidden) and workspace.dtype == dtype
    for mode in MODES[1:]:
        for a, b in zip(got[mode], first):
            assert torch.equal(a, b), mode


def test_lstm_workspace_is_the_activated_gates(tpu):
    ig, hg, cx, bi, bh = _inputs("lstm", torch.float64, True, "cpu")
    _, _, ws = _fused("lstm")(*(t.detach().to("tpu") for t in (ig, hg, cx, bi, bh)))
    i, f, c, o = ((hg + bh) + (ig + bi)).detach().chunk(4, 1)
    torch.testing.assert_close(ws.cpu(), torch.cat([i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()], 1))


def test_gru_workspace_layout(tpu):
    ig, hg, hx, bi, bh = (t.detach() for t in _inputs("gru", torch.float64, True, "cpu"))
    _, ws = _fused("gru")(*(t.to("tpu") for t in (ig, hg, hx, bi, bh)))
    hidden = hx.shape[1]
    torch.testing.assert_close(ws.cpu()[:, 3 * hidden:4 * hidden], hx)  # hx, then the hidden n-gate with its bias
    torch.testing.assert_close(ws.cpu()[:, 4 * hidden:], (hg + bh)[:, 2 * hidden:])


def test_lstm_backward_with_one_gradient_undefined(tpu):
    args = _inputs("lstm", torch.float32, True, "cpu")
    targs = _inputs("lstm", torch.float32, True, "tpu")
    want = torch.autograd.grad(_reference("lstm", *args)[1].sum(), args)  # only cy used: grad_hy undefined
    got = torch.autograd.grad(_fused("lstm")(*targs)[1].sum(), targs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, rtol=2e-6, atol=1e-5)


def test_size_check_raises_like_meta(tpu):
    ig, hg, cx = (t.detach() for t in _inputs("lstm", torch.float32, False, "cpu")[:3])
    with pytest.raises(RuntimeError, match="!= 5 \\* 24 // 4"):
        _fused("lstm")(ig.to("tpu"), hg.to("tpu"), cx[:, :3].to("tpu"))


def _modules(dtype: torch.dtype, device: str) -> list[torch.nn.Module]:
    torch.manual_seed(0)
    mods = [torch.nn.LSTMCell(3, 4), torch.nn.GRUCell(3, 4, bias=False), torch.nn.LSTM(3, 4, num_layers=2),
            torch.nn.GRU(3, 4, bidirectional=True)]
    return [m.to(dtype).to(device) for m in mods]


def _module_run(dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    x = torch.linspace(-2, 2, 2 * 5 * 3, dtype=dtype).reshape(2, 5, 3).to(device).requires_grad_()
    results = []
    for m in _modules(dtype, device):
        out = m(x[0]) if isinstance(m, torch.nn.RNNCellBase) else m(x)[0]
        out = out[0] if isinstance(out, tuple) else out
        loss = (out.double() * torch.arange(out.numel(), dtype=torch.float64, device=device).reshape(out.shape)
                ).sum()
        grads = torch.autograd.grad(loss, [x, *m.parameters()])
        results += [t.detach().cpu() for t in (out, *grads)]
    return results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_rnn_modules_match_cpu_in_every_mode(tpu, dtype):
    want = _module_run(dtype, "cpu")
    got = {}
    with torch.tpu.precision("highest"):
        for mode in MODES:
            with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
                got[mode] = _module_run(dtype, "tpu")
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    for g, w in zip(got["DEFER_NEVER"], want):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)
    for mode in MODES[1:]:
        for a, b in zip(got[mode], got["DEFER_NEVER"]):
            assert torch.equal(a, b), mode


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_compiled_cell_matches_eager(tpu, kind):
    cell = (torch.nn.LSTMCell if kind == "lstm" else torch.nn.GRUCell)(3, 4).to("tpu")

    def step(x: torch.Tensor) -> torch.Tensor:
        out = cell(x)
        out = out[0] + 2 * out[1] if isinstance(out, tuple) else out
        return out.sum()

    x = torch.linspace(-2, 2, 15).reshape(5, 3).to("tpu").requires_grad_()
    want_loss = step(x)
    want = torch.autograd.grad(want_loss, [x, *cell.parameters()])
    got_loss = torch.compile(step, backend="tpu")(x)
    got = torch.autograd.grad(got_loss, [x, *cell.parameters()])
    assert torch.equal(got_loss.cpu(), want_loss.cpu())
    for g, w in zip(got, want):
        assert torch.equal(g.cpu(), w.cpu())
