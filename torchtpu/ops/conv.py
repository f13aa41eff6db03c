"""Lowerings of convolutions (1d/2d/3d, grouped, dilated, transposed) and their backward onto the IR's
`convolution` (stablehlo.convolution with fixed NC* / OI* layouts, run on the MXU).

PyTorch reaches a non-CPU/CUDA backend through `convolution_overrideable` and
`convolution_backward_overrideable`; everything else (conv1d..3d, conv_transpose*, the autograd formula) is
upstream. Each gradient is itself one convolution:
- grad_input of a convolution is a transposed convolution of grad_output (lhs_dilation = stride, flipped and
  in/out-swapped kernel), and the grad_input of a transposed convolution is a plain convolution;
- grad_weight contracts over the batch: the batch becomes the feature dimension (lhs = input with N and C
  swapped, rhs = grad_output with N and O swapped, window stride = dilation, rhs_dilation = stride).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.matmul import mxu_dtypes
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _conv(x: Sym, w: Sym, strides: Sequence[int], padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int],
          rhs_dilation: Sequence[int], groups: int, out_dtype: torch.dtype) -> Sym:
    from torchtpu.precision import current_precision

    return P.emit1("convolution", [x, w], window_strides=tuple(strides),
                   padding=tuple((int(lo), int(hi)) for lo, hi in padding), lhs_dilation=tuple(lhs_dilation),
                   rhs_dilation=tuple(rhs_dilation), feature_group_count=int(groups),
                   precision=current_precision().name, out_dtype=P.TORCH_TO_IR[out_dtype])


def _expand(v: Sequence[int], n: int) -> tuple[int, ...]:
    v = tuple(v)
    return v * n if len(v) == 1 else v


def _fit(y: Sym, sizes: Sequence[int]) -> Sym:
    """Crops or zero-pads the spatial dims of y (N, C, *spatial) to `sizes` at the high end."""
    for i, want in enumerate(sizes):
        d = 2 + i
        have = y.shape[d]
        if have > want:
            y = P.slice_dim(y, d, 0, want)
        elif have < want:
            low, high = [0] * y.ndim, [0] * y.ndim
            high[d] = want - have
            y = P.emit1("pad", [y], value=0, low=tuple(low), high=tuple(high), interior=(0,) * y.ndim)
    return y


def _transposed_kernel(w: Sym, groups: int) -> Sym:
    """(A, B/g, *k) -> (B, A/g, *k) with flipped taps: the kernel of the transposed (adjoint) convolution."""
    a, bg = w.shape[:2]
    k = w.shape[2:]
    w = P.emit1("reverse", [w], dimensions=tuple(range(2, w.ndim)))
    w = P.reshape(w, (groups, a // groups, bg, *k))
    w = P.transpose(w, (0, 2, 1, *range(3, w.ndim)))
    return P.reshape(w, (groups * bg, a // groups, *k))


def _adjoint(gy: Sym, w: Sym, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
             groups: int, in_sizes: Sequence[int], dtype: torch.dtype) -> Sym:
    """The adjoint of conv(., w, stride, padding, dilation): maps (N, O, *out) to (N, C, *in_sizes)."""
    wt = _transposed_kernel(w, groups)
    k = w.shape[2:]
    pads, lows = [], []
    for i, size in enumerate(in_sizes):
        lo = dilation[i] * (k[i] - 1) - padding[i]
        hi = size - (gy.shape[2 + i] - 1) * stride[i] - 1 + padding[i]
        pads.append((max(lo, 0), max(hi, 0)))
        lows.append(max(-lo, 0))
    y = _conv(gy, wt, (1,) * len(k), pads, stride, dilation, groups, dtype)
    for i, cut in enumerate(lows):
        if cut:
            y = P.slice_dim(y, 2 + i, cut, y.shape[2 + i])
    return _fit(y, in_sizes)


def _weight_grad(x: Sym, gy: Sym, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 groups: int, k: Sequence[int], dtype: torch.dtype) -> Sym:
    """d conv(x, w) / d w for w of shape (O, C/g, *k): one convolution contracting over the batch."""
    n, c = x.shape[:2]
    o = gy.shape[1]
    sp = x.shape[2:]
    cg, og = c // groups, o // groups
    lhs = P.reshape(P.transpose(P.reshape(x, (n, groups, cg, *sp)), (2, 1, 0, *range(3, 3 + len(sp)))),
                    (cg, groups * n, *sp))
    osp = gy.shape[2:]
    rhs = P.reshape(P.transpose(P.reshape(gy, (n, groups, og, *osp)), (1, 2, 0, *range(3, 3 + len(osp)))),
                    (groups * og, n, *osp))
    pads = []
    for i in range(len(sp)):
        hi = (k[i] - 1) * dilation[i] + (osp[i] - 1) * stride[i] + 1 - sp[i] - padding[i]
        pads.append((padding[i], hi))
    gw = _conv(lhs, rhs, dilation, pads, (1,) * len(sp), stride, groups, dtype)  # (Cg, G*Og, *k')
    gw = _fit(gw, k)
    gw = P.reshape(gw, (cg, groups, og, *k))
    return P.reshape(P.transpose(gw, (1, 2, 0, *range(3, 3 + len(k)))), (o, cg, *k))


def _out_dtype(x: Sym, w: Sym) -> torch.dtype:
    _, result = P.result_dtype(x, w)
    return result


def _check_output_padding(op: list[int], stride: list[int], dilation: list[int]) -> None:
    """CPU's transposed-convolution shape check (slow_conv_transpose*_shape_check); a 1-D one runs as 2-D."""
    if all(o < s or o < d for o, s, d in zip(op, stride, dilation)):
        return
    names = {1: ["height", "width"], 2: ["height", "width"], 3: ["depth", "height", "width"]}[len(op)]
    if len(op) == 1:
        op, stride, dilation = [0, *op], [1, *stride], [1, *dilation]
    got = [f"{kind}_{name}: {v}" for kind, values in (("output_padding", op), ("stride", stride),
                                                     ("dilation", dilation)) for name, v in zip(names, values)]
    raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(got))


def _check_backward(grad_output: Sym, input: Sym, weight: Sym, stride: Sequence[int],  # noqa: A002
                    padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                    output_padding: Sequence[int], groups: int) -> None:
    """What CPU's convolution_backward refuses past upstream's shape checks (its kernel's errors): a grad_output
    that is not the forward's output shape, grad_output / input / weight of different dtypes, and (transposed) an
    output padding not smaller than stride or dilation."""
    n = weight.ndim - 2
    dtypes = (grad_output.dtype, input.dtype, weight.dtype)
    if len(set(dtypes)) > 1:
        from torchtpu.ops.tracing import aten_type_name

        raise RuntimeError("convolution_backward: expected grad_output, input and weight of one dtype, but got "
                           + ", ".join(aten_type_name(d) for d in dtypes))
    if transposed:
        _check_output_padding(list(_expand(output_padding, n)), list(stride), list(dilation))
        sizes = [(input.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (weight.shape[2 + i] - 1)
                 + _expand(output_padding, n)[i] + 1 for i in range(n)]
        channels = weight.shape[1] * groups
    else:
        sizes = [(input.shape[2 + i] + 2 * padding[i] - dilation[i] * (weight.shape[2 + i] - 1) - 1) // stride[i] + 1
                 for i in range(n)]
        channels = weight.shape[0]
    want = [input.shape[0], channels, *sizes]
    if list(grad_output.shape) != want:
        raise RuntimeError(f"convolution_backward: expected grad_output of shape {want} (the convolution's output for "
                           f"input {list(input.shape)} and weight {list(weight.shape)}), but got grad_output of shape "
                           f"{list(grad_output.shape)}")


@lower(aten.convolution_overrideable.default)
@lower(aten.convolution.default, graph_only=True)
def convolution(input: Sym, weight: Sym, bias: Sym | None, stride: list[int], padding: list[int],  # noqa: A002
                dilation: list[int], transposed: bool, output_padding: list[int], groups: int) -> Sym:
    mxu_dtypes("aten::convolution", input, weight, bias)
    n = weight.ndim - 2
    stride, padding, dilation = _expand(stride, n), _expand(padding, n), _expand(dilation, n)
    dtype = _out_dtype(input, weight)
    x, w = P.convert(input, dtype), P.convert(weight, dtype)
    if not transposed:
        y = _conv(x, w, stride, [(p, p) for p in padding], (1,) * n, dilation, groups, dtype)
    else:
        op = _expand(output_padding, n)
        _check_output_padding(op, stride, dilation)
        sizes = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w.shape[2 + i] - 1) + op[i] + 1
                 for i in range(n)]
        y = _adjoint(x, w, stride, padding, dilation, groups, sizes, dtype)
    if bias is not None:
        y = y + P.reshape(P.convert(bias, dtype), (1, -1) + (1,) * n)
    return y


@lower(aten.convolution_backward_overrideable.default)
def convolution_backward(grad_output: Sym, input: Sym, weight: Sym, stride: list[int],  # noqa: A002
                         padding: list[int], dilation: list[int], transposed: bool, output_padding: list[int],
                         groups: int, output_mask: list[bool]) -> tuple[Sym | None, Sym | None, Sym | None]:
    mxu_dtypes("aten::convolution_backward", grad_output, input, weight)
    n = weight.ndim - 2
    stride, padding, dilation = _expand(stride, n), _expand(padding, n), _expand(dilation, n)
    _check_backward(grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups)
    dtype = _out_dtype(input, weight)
    gy, x, w = (P.convert(t, dtype) for t in (grad_output, input, weight))
    k = w.shape[2:]
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if not transposed:
            grad_input = _adjoint(gy, w, stride, padding, dilation, groups, x.shape[2:], dtype)
        else:
            y = _conv(gy, w, stride, [(p, p) for p in padding], (1,) * n, dilation, groups, dtype)
            grad_input = _fit(y, x.shape[2:])
    if output_mask[1]:
        if not transposed:
            grad_weight = _weight_grad(x, gy, stride, padding, dilation, groups, k, dtype)
        else:  # y = adjoint(x): the roles of input and grad_output swap
            grad_weight = _weight_grad(gy, x, stride, padding, dilation, groups, k, dtype)
    if output_mask[2]:
        grad_bias = P.convert(P.reduce(P.convert(gy, torch.float32) if dtype == torch.bfloat16 else gy, "sum",
                                       (0, *range(2, gy.ndim))), dtype)
    return grad_input, grad_weight, grad_bias


# --- eager layouts ---------------------------------------------------------------------------------------------------
# ATen gives an "overrideable" backend contiguous operands and takes its results as they are, where CPU (and CUDA)
# lay a convolution's output out channels_last when its input or weight is (issue 17: no silent differences from
# CPU). These kernels run ATen's own composite (checks, the overrideable lowerings above), then lay the results out
# as CPU does; a contiguous call is left as it is.
_COMPOSITE = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)
_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def _channels_last(t: torch.Tensor | None) -> torch.memory_format | None:
    """t's channels_last format when ATen's suggest_memory_format would pick it (dense NHWC / NDHWC strides)."""
    if t is None or t.is_contiguous():
        return None
    fmt = _CHANNELS_LAST.get(t.dim())
    return fmt if fmt is not None and t.is_contiguous(memory_format=fmt) else None


def _laid_out(t: torch.Tensor | None, fmt: torch.memory_format | None) -> torch.Tensor | None:
    return t if t is None or fmt is None or t.is_contiguous(memory_format=fmt) else t.contiguous(memory_format=fmt)


def _convolution_kernel(input: torch.Tensor, weight: torch.Tensor, *args: Any) -> torch.Tensor:  # noqa: A002
    y = aten.convolution.default.redispatch(_COMPOSITE, input, weight, *args)
    fmt = _channels_last(input) or _channels_last(weight)
    if fmt is torch.channels_last_3d and y.dtype != torch.float32:
        fmt = None  # CPU's 3-d kernel for other dtypes (slow_conv3d) writes contiguous results
    return _laid_out(y, fmt)


def _convolution_backward_kernel(grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor,  # noqa: A002
                                 *args: Any) -> tuple[torch.Tensor | None, ...]:
    gi, gw, gb = aten.convolution_backward.default.redispatch(_COMPOSITE, grad_output, input, weight, *args)
    return _laid_out(gi, _channels_last(input)), _laid_out(gw, _channels_last(weight)), gb


def register(kernel: Callable[..., Any]) -> None:
    kernel(aten.convolution.default, _convolution_kernel)
    kernel(aten.convolution_backward.default, _convolution_backward_kernel)
