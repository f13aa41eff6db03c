"""Lowerings of grid_sampler_2d / grid_sampler_3d and their backward (F.grid_sample).

Each output point reads a few taps per spatial dim (bilinear 2, bicubic 4, nearest 1); a tap combination is one
gather over the flattened spatial dims, weighted by the product of the per-dim weights (zero outside the
input). The backward scatter-adds the weighted output gradient to the same taps (grad_input) and, for the
grid, sums over channels the tapped values times each dim's weight derivative, chained through ATen's
unnormalization and clip / reflection of the source coordinate (`grid_sampler_compute_source_index_set_grad`).
"""

from __future__ import annotations

import itertools

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.grid_checks import check_grid_sampler
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
_A = -0.75  # bicubic convolution coefficient (as ATen)


def _wide(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


def _unnormalize(c: Sym, size: int, align: bool) -> tuple[Sym, float]:
    if align:
        return (c + 1.0) * ((size - 1) / 2.0), (size - 1) / 2.0
    return ((c + 1.0) * float(size) - 1.0) / 2.0, size / 2.0


def _clip(x: Sym, size: int) -> tuple[Sym, Sym]:
    hi = float(size - 1)
    y = P.emit1("clamp", [P.zeros_like(x), x, P.full(hi, x.shape, x.dtype)])
    inside = P.emit1("and", [P.compare("GT", x, 0.0), P.compare("LT", x, hi)])
    return y, P.convert(inside, x.dtype)


def _reflect(x: Sym, twice_low: int, twice_high: int) -> tuple[Sym, Sym]:
    if twice_low == twice_high:
        return P.zeros_like(x), P.zeros_like(x)
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    v = x - lo
    sgn = P.where(P.compare("LT", v, 0.0), P.full(-1.0, x.shape, x.dtype), P.full(1.0, x.shape, x.dtype))
    v = P.emit1("abs", [v])
    extra = P.emit1("fmod", [v, P.full(span, x.shape, x.dtype)])
    flips = P.emit1("floor", [v / span])
    even = P.compare("EQ", P.emit1("fmod", [flips, P.full(2.0, x.shape, x.dtype)]), 0.0)
    return P.where(even, extra + lo, (span - extra) + lo), P.where(even, sgn, -sgn)


def _pad_coord(x: Sym, size: int, padding: int, align: bool) -> tuple[Sym, Sym | float]:
    """ATen's compute_coordinates with its gradient multiplier."""
    if padding == BORDER:
        return _clip(x, size)
    if padding == REFLECTION:
        y, gr = _reflect(x, 0, 2 * (size - 1)) if align else _reflect(x, -1, 2 * size - 1)
        y, gc = _clip(y, size)
        return y, gr * gc
    return x, 1.0


def _conv1(x: Sym) -> tuple[Sym, Sym]:
    return ((x * (_A + 2) - (_A + 3)) * x) * x + 1.0, (x * (3 * (_A + 2)) - 2 * (_A + 3)) * x


def _conv2(x: Sym) -> tuple[Sym, Sym]:
    return ((x * _A - 5 * _A) * x + 8 * _A) * x - 4 * _A, (x * (3 * _A) - 10 * _A) * x + 8 * _A


class _Tap:
    def __init__(self, index: Sym, weight: Sym, dweight: Sym | None, inside: Sym) -> None:
        self.index, self.weight, self.dweight, self.inside = index, weight, dweight, inside


def _taps(c: Sym, size: int, mode: int, padding: int, align: bool) -> tuple[list[_Tap], Sym | float]:
    """The taps along one spatial dim for normalized coordinates c (N, Q), and d x / d c."""
    def tap(xf: Sym, w: Sym, dw: Sym | None) -> _Tap:
        inside = P.emit1("and", [P.compare("GE", xf, 0.0), P.compare("LE", xf, float(size - 1))])
        idx = P.convert(P.where(inside, xf, P.zeros_like(xf)), torch.int64)
        return _Tap(idx, w, dw, inside)

    x, unit = _unnormalize(c, size, align)
    if mode == BICUBIC:
        x0 = P.emit1("floor", [x])
        t = x - x0
        coeffs = [_conv2(t + 1.0), _conv1(t), _conv1(1.0 - t), _conv2(2.0 - t)]
        signs = [1.0, 1.0, -1.0, -1.0]
        taps = []
        for k, ((w, dw), s) in enumerate(zip(coeffs, signs)):
            xk, _ = _pad_coord(x0 + float(k - 1), size, padding, align)
            taps.append(tap(xk, w, dw * s))
        return taps, unit
    x, g = _pad_coord(x, size, padding, align)
    mult = g * unit if isinstance(g, Sym) else unit
    if mode == NEAREST:
        return [tap(P.emit1("round_nearest_even", [x]), P.full(1.0, x.shape, x.dtype), None)], mult
    x0 = P.emit1("floor", [x])
    x1 = x0 + 1.0
    one = P.full(1.0, x.shape, x.dtype)
    return [tap(x0, x1 - x, -one), tap(x1, x - x0, one)], mult


def _setup(input: Sym, grid: Sym, mode: int, padding: int, align: bool):  # noqa: A002 - ATen's name
    N, C = input.shape[:2]  # noqa: N806
    sizes = input.shape[2:]
    D = len(sizes)  # noqa: N806
    out_sp = grid.shape[1:-1]
    Q = 1  # noqa: N806
    for s in out_sp:
        Q *= s
    g = P.reshape(_wide(grid), (N, Q, D))
    per_dim = []  # by spatial dim: (taps, multiplier)
    for d in range(D):
        comp = D - 1 - d  # grid[..., 0] is x, the last spatial dim
        c = P.reshape(P.slice_dim(g, 2, comp, comp + 1), (N, Q))
        per_dim.append(_taps(c, sizes[d], mode, padding, align))
    strides = [1] * D
    for d in range(D - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    combos = []
    for choice in itertools.product(*[range(len(t)) for t, _ in per_dim]):
        taps = [per_dim[d][0][k] for d, k in enumerate(choice)]
        flat = taps[0].index * strides[0]
        inside = taps[0].inside
        for d in range(1, D):
            flat = flat + taps[d].index * strides[d]
            inside = P.emit1("and", [inside, taps[d].inside])
        combos.append((taps, flat, inside))
    return N, C, Q, out_sp, per_dim, combos


def _gather(x: Sym, flat: Sym) -> Sym:
    N, C, _ = x.shape  # noqa: N806
    idx = P.broadcast_to(P.reshape(flat, (N, 1, flat.shape[1])), (N, C, flat.shape[1]))
    return P.emit1("gather_axis", [x, idx], dimension=2)


def _bc(w: Sym, C: int) -> Sym:  # noqa: N803
    return P.broadcast_to(P.reshape(w, (w.shape[0], 1, w.shape[1])), (w.shape[0], C, w.shape[1]))


def grid_sample(input: Sym, grid: Sym, mode: int, padding: int, align: bool) -> Sym:  # noqa: A002
    N, C, Q, out_sp, _, combos = _setup(input, grid, mode, padding, align)  # noqa: N806
    x = P.reshape(_wide(input), (N, C, -1))
    out = P.full(0.0, (N, C, Q), x.dtype)
    if x.shape[2] == 0 or Q == 0:
        return P.convert(P.reshape(out, (N, C, *out_sp)), input.dtype)
    for taps, flat, inside in combos:
        w = P.convert(inside, x.dtype)
        for t in taps:
            w = w * t.weight
        out = out + _gather(x, flat) * _bc(w, C)
    return P.convert(P.reshape(out, (N, C, *out_sp)), input.dtype)


def grid_sample_backward(grad_output: Sym, input: Sym, grid: Sym, mode: int, padding: int, align: bool,  # noqa: A002
                         output_mask: list[bool]) -> tuple[Sym | None, Sym | None]:
    N, C, Q, _, per_dim, combos = _setup(input, grid, mode, padding, align)  # noqa: N806
    D = len(per_dim)  # noqa: N806
    x = P.reshape(_wide(input), (N, C, -1))
    go = P.reshape(_wide(grad_output), (N, C, Q))
    gin = P.zeros_like(x)
    gcoord = [P.full(0.0, (N, Q), x.dtype) for _ in range(D)]
    want_grid = output_mask[1] and mode != NEAREST
    for taps, flat, inside in combos:
        m = P.convert(inside, x.dtype)
        if output_mask[0]:
            w = m
            for t in taps:
                w = w * t.weight
            idx = P.broadcast_to(P.reshape(flat, (N, 1, Q)), (N, C, Q))
            gin = P.emit1("scatter_axis", [gin, idx, go * _bc(w, C)], dimension=2, reduce="add")
        if want_grid:
            vg = P.reduce(_gather(x, flat) * go, "sum", (1,)) * m  # (N, Q)
            for d in range(D):
                term = vg * taps[d].dweight
                for e in range(D):
                    if e != d:
                        term = term * taps[e].weight
                gcoord[d] = gcoord[d] + term
    grad_input = P.convert(P.reshape(gin, input.shape), input.dtype) if output_mask[0] else None
    grad_grid = None
    if output_mask[1]:
        comps = []
        for k in range(D):  # grid component k is spatial dim D - 1 - k
            d = D - 1 - k
            gc = gcoord[d] * per_dim[d][1] if want_grid else gcoord[d]
            comps.append(P.reshape(gc, (N, Q, 1)))
        grad_grid = P.convert(P.reshape(P.concat(comps, 2), grid.shape), grid.dtype)
    return grad_input, grad_grid


@lower(aten.grid_sampler_2d.default)
def grid_sampler_2d(input: Sym, grid: Sym, interpolation_mode: int, padding_mode: int,  # noqa: A002
                    align_corners: bool) -> Sym:
    check_grid_sampler(input.shape, grid.shape, 2, interpolation_mode, padding_mode)
    return grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


@lower(aten.grid_sampler_3d.default)
def grid_sampler_3d(input: Sym, grid: Sym, interpolation_mode: int, padding_mode: int,  # noqa: A002
                    align_corners: bool) -> Sym:
    check_grid_sampler(input.shape, grid.shape, 3, interpolation_mode, padding_mode)
    return grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


def _backward(nd: int, grad_output: Sym, input: Sym, grid: Sym, interpolation_mode: int,  # noqa: A002
              padding_mode: int, align_corners: bool, output_mask: list[bool]) -> tuple[Sym | None, Sym | None]:
    check_grid_sampler(input.shape, grid.shape, nd, interpolation_mode, padding_mode)
    return grid_sample_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
                                output_mask)


@lower(aten.grid_sampler_2d_backward.default)
def grid_sampler_2d_backward(grad_output: Sym, input: Sym, grid: Sym, interpolation_mode: int,  # noqa: A002
                             padding_mode: int, align_corners: bool, output_mask: list[bool]
                             ) -> tuple[Sym | None, Sym | None]:
    return _backward(2, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)


@lower(aten.grid_sampler_3d_backward.default)
def grid_sampler_3d_backward(grad_output: Sym, input: Sym, grid: Sym, interpolation_mode: int,  # noqa: A002
                             padding_mode: int, align_corners: bool, output_mask: list[bool]
                             ) -> tuple[Sym | None, Sym | None]:
    return _backward(3, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)
