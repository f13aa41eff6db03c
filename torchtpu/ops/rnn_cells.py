"""Lowerings of ATen's fused RNN cells, the ops `lstm_cell` / `gru_cell` (nn.LSTMCell, nn.GRUCell, nn.LSTM, nn.GRU)
call on a PrivateUse1 device (CPU runs its own composite, so these ops have no CPU kernel to fall back to).

ATen's semantics (aten/src/ATen/native/cuda/RNN.cu): the gates are (batch, k * hidden) with the chunks in the
order i, f, g, o (LSTM) or r, z, n (GRU); the biases are optional (both or neither). The LSTM workspace holds the
four activated gates, the GRU workspace (batch, 5 * hidden) holds r, z, n, hx and the hidden n-gate plus its bias;
the backward ops read only the workspace (and cx, cy). Arithmetic is in float32 (float64 stays float64), rounded
once per output as the CUDA kernels do; the sums are in CPU's composite's order ((h W + b_hh) + (x W + b_ih)).
"""

from __future__ import annotations

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import kernel, lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _acc(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


def _numel(x: Sym) -> int:
    n = 1
    for s in x.shape:
        n *= s
    return n


def _check_sizes(input_gates: Sym, hidden_gates: Sym, input_bias: Sym | None, hidden_bias: Sym | None, factor: int,
                 prev_hidden: Sym) -> None:
    """ATen's rnn checkSizes (the meta kernel's words)."""
    if input_gates.ndim != 2:
        raise RuntimeError(f"{input_gates.ndim} != 2")
    if tuple(input_gates.shape) != tuple(hidden_gates.shape):
        raise RuntimeError(f"{torch.Size(input_gates.shape)} != {torch.Size(hidden_gates.shape)}")
    gates_size = input_gates.shape[1]
    if input_bias is not None:
        if input_bias.ndim != 1:
            raise RuntimeError(f"{input_bias.ndim} != 1")
        if _numel(input_bias) != gates_size:
            raise RuntimeError(f"{_numel(input_bias)} != {gates_size}")
        if hidden_bias is None or tuple(input_bias.shape) != tuple(hidden_bias.shape):
            other = torch.Size(hidden_bias.shape) if hidden_bias is not None else "None"
            raise RuntimeError(f"{torch.Size(input_bias.shape)} != {other}")
    if prev_hidden.ndim != 2:
        raise RuntimeError(f"{prev_hidden.ndim} != 2")
    expected = input_gates.shape[0] * gates_size // factor
    if _numel(prev_hidden) != expected:
        raise RuntimeError(f"{_numel(prev_hidden)} != {input_gates.shape[0]} * {gates_size} // {factor} "
                           f"(aka {expected})")


def _chunks(x: Sym, k: int) -> list[Sym]:
    h = x.shape[1] // k
    return [P.slice_dim(x, 1, j * h, (j + 1) * h) for j in range(k)]


def _gate_sums(input_gates: Sym, hidden_gates: Sym, input_bias: Sym | None, hidden_bias: Sym | None
               ) -> tuple[Sym, Sym]:
    """(x W + b_ih, h W + b_hh) in the accumulation dtype, each (batch, k * hidden)."""
    ig, hg = _acc(input_gates), _acc(hidden_gates)
    if input_bias is not None:
        ig = ig + P.broadcast_to(P.reshape(_acc(input_bias), (1, ig.shape[1])), ig.shape)
        hg = hg + P.broadcast_to(P.reshape(_acc(hidden_bias), (1, hg.shape[1])), hg.shape)
    return ig, hg


def _sigmoid(x: Sym) -> Sym:
    return P.emit1("logistic", [x])


def _tanh(x: Sym) -> Sym:
    return P.emit1("tanh", [x])


@lower(aten._thnn_fused_lstm_cell.default)
def fused_lstm_cell(input_gates: Sym, hidden_gates: Sym, cx: Sym, input_bias: Sym | None = None,
                    hidden_bias: Sym | None = None) -> tuple[Sym, Sym, Sym]:
    _check_sizes(input_gates, hidden_gates, input_bias, hidden_bias, 4, cx)
    ig, hg = _gate_sums(input_gates, hidden_gates, input_bias, hidden_bias)
    i, f, g, o = _chunks(hg + ig, 4)
    i, f, g, o = _sigmoid(i), _sigmoid(f), _tanh(g), _sigmoid(o)
    c = P.reshape(_acc(cx), i.shape)
    cy = f * c + i * g
    hy = o * _tanh(cy)
    dtype = input_gates.dtype
    workspace = P.convert(P.concat([i, f, g, o], 1), dtype)
    return (P.reshape(P.convert(hy, dtype), cx.shape), P.reshape(P.convert(cy, dtype), cx.shape), workspace)


@lower(aten._thnn_fused_lstm_cell_backward_impl.default)
def fused_lstm_cell_backward_impl(grad_hy: Sym | None, grad_cy: Sym | None, cx: Sym, cy: Sym, workspace: Sym,
                                  has_bias: bool) -> tuple[Sym | None, Sym | None, Sym | None]:
    if grad_hy is None and grad_cy is None:
        return None, None, None
    defined = grad_hy if grad_hy is not None else grad_cy
    size = tuple(defined.shape)
    if (defined.ndim != 2 or any(t is not None and tuple(t.shape) != size for t in (grad_hy, grad_cy, cx, cy))
            or workspace.ndim != 2 or _numel(workspace) != _numel(defined) * 4):
        raise RuntimeError("_thnn_fused_lstm_cell_backward_impl: the gradients, cx, cy and workspace sizes do not "
                           "match")
    i, f, g, o = _chunks(_acc(workspace), 4)
    c, y = _acc(cx), _acc(cy)
    go = _acc(grad_hy) if grad_hy is not None else P.zeros_like(c)
    gc = _acc(grad_cy) if grad_cy is not None else P.zeros_like(c)
    t = _tanh(y)
    gog = go * t
    gcx = go * o * (1 - t * t) + gc
    gig = gcx * g * (1 - i) * i
    gfg = gcx * c * (1 - f) * f
    gcg = gcx * i * (1 - g * g)
    gog = gog * (1 - o) * o
    grad_gates = P.convert(P.concat([gig, gfg, gcg, gog], 1), workspace.dtype)
    grad_cx = P.convert(gcx * f, cx.dtype)
    grad_bias = P.convert(P.reduce(_acc(grad_gates), "sum", (0,)), workspace.dtype) if has_bias else None
    return grad_gates, grad_cx, grad_bias


@lower(aten._thnn_fused_gru_cell.default)
def fused_gru_cell(input_gates: Sym, hidden_gates: Sym, hx: Sym, input_bias: Sym | None = None,
                   hidden_bias: Sym | None = None) -> tuple[Sym, Sym]:
    _check_sizes(input_gates, hidden_gates, input_bias, hidden_bias, 3, hx)
    ig, hg = _gate_sums(input_gates, hidden_gates, input_bias, hidden_bias)
    ir, iz, in_ = _chunks(ig, 3)
    hr, hz, hn = _chunks(hg, 3)
    r = _sigmoid(hr + ir)
    z = _sigmoid(hz + iz)
    n = _tanh(in_ + hn * r)
    h = P.reshape(_acc(hx), r.shape)
    hy = (h - n) * z + n
    dtype = input_gates.dtype
    workspace = P.convert(P.concat([r, z, n, h, hn], 1), dtype)
    return P.reshape(P.convert(hy, dtype), hx.shape), workspace


@lower(aten._thnn_fused_gru_cell_backward.default)
def fused_gru_cell_backward(grad_hy: Sym, workspace: Sym, has_bias: bool
                            ) -> tuple[Sym, Sym, Sym, Sym | None, Sym | None]:
    if grad_hy.ndim != 2 or workspace.ndim != 2 or _numel(workspace) != _numel(grad_hy) * 5:
        raise RuntimeError(f"_thnn_fused_gru_cell_backward: workspace of size {list(workspace.shape)} does not "
                           f"match grad_hy of size {list(grad_hy.shape)}")
    r, z, n, h, hn = _chunks(_acc(workspace), 5)
    go = _acc(grad_hy)
    gig = go * (h - n) * (1 - z) * z
    ghx = go * z
    gin = go * (1 - z) * (1 - n * n)
    ghn = gin * r
    grg = gin * hn * (1 - r) * r
    dtype = workspace.dtype
    grad_input_gates = P.convert(P.concat([grg, gig, gin], 1), dtype)
    grad_hidden_gates = P.convert(P.concat([grg, gig, ghn], 1), dtype)
    grad_hx = P.convert(ghx, grad_hy.dtype)
    if not has_bias:
        return grad_input_gates, grad_hidden_gates, grad_hx, None, None
    bias_i = P.convert(P.reduce(_acc(grad_input_gates), "sum", (0,)), dtype)
    bias_h = P.convert(P.reduce(_acc(grad_hidden_gates), "sum", (0,)), dtype)
    return grad_input_gates, grad_hidden_gates, grad_hx, bias_i, bias_h


def _gru_meta(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
              input_bias: torch.Tensor | None = None, hidden_bias: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Meta kernel (ATen defines none for the GRU cell; compiled graphs' fake tensors need one)."""
    _check_sizes(input_gates, hidden_gates, input_bias, hidden_bias, 3, hx)
    workspace = input_gates.new_empty((input_gates.shape[0], input_gates.shape[1] // 3 * 5))
    return torch.empty_like(hx, memory_format=torch.contiguous_format), workspace


def _gru_backward_meta(grad_hy: torch.Tensor, workspace: torch.Tensor, has_bias: bool
                       ) -> tuple[torch.Tensor, ...]:
    gates = workspace.new_empty((workspace.shape[0], workspace.shape[1] // 5 * 3))
    grad_hx = torch.empty_like(grad_hy, memory_format=torch.contiguous_format)
    if not has_bias:
        return gates, torch.empty_like(gates), grad_hx, None, None
    return gates, torch.empty_like(gates), grad_hx, gates.new_empty(gates.shape[1:]), gates.new_empty(gates.shape[1:])


kernel(aten._thnn_fused_gru_cell.default, _gru_meta, key="Meta")
kernel(aten._thnn_fused_gru_cell_backward.default, _gru_backward_meta, key="Meta")
