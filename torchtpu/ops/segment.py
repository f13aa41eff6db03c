"""Lowerings of segment_reduce (lengths or offsets) and its backward.

Each position along `axis` gets its segment id from the (data) lengths or offsets: the number of segment ends at
or before it (positions past the last segment get a spill id). The reduction is one scatter along `axis` into a
(segments + 1) buffer initialized with `initial` (or the reduction's identity); the backward gathers the
output gradient (and output) back per position and applies ATen's CPU rules, including its tie split for
max/min (only positive gradients are divided by the tie count) and the exclusive product for zeros in prod.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
_SCATTER = {"sum": "add", "mean": "add", "max": "amax", "min": "amin", "prod": "multiply"}
_IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf"), "prod": 1.0}


def _wide(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


class _Segments:
    def __init__(self, data: Sym, lengths: Sym | None, offsets: Sym | None, axis: int) -> None:
        axis = P.canon_dim(axis, data.ndim)
        if lengths is not None:
            lens = P.convert(lengths, torch.int64)
            ends = P.emit1("cumulative", [lens], kind="sum", dimension=lens.ndim - 1)
            start = None
        elif offsets is not None:
            off = P.convert(offsets, torch.int64)
            k = off.shape[-1]
            ends = P.slice_dim(off, off.ndim - 1, 1, k)
            start = P.slice_dim(off, off.ndim - 1, 0, 1)
            lens = ends - P.slice_dim(off, off.ndim - 1, 0, k - 1)
        else:
            raise RuntimeError("segment_reduce: one of lengths or offsets must be given on tpu")
        batch = ends.shape[:-1]  # == data.shape[:axis]
        S, n = ends.shape[-1], data.shape[axis]  # noqa: N806
        pos = P.iota((*batch, n, 1), len(batch))
        ends3 = P.broadcast_to(P.reshape(ends, (*batch, 1, S)), (*batch, n, S))
        seg = P.reduce(P.convert(P.compare("LE", ends3, P.broadcast_to(pos, ends3.shape)), torch.int64), "sum",
                       (len(batch) + 1,))  # (*batch, n)
        valid = P.compare("LT", seg, S)
        if start is not None:
            st = P.broadcast_to(start, (*batch, n))
            valid = P.emit1("and", [valid, P.compare("GE", P.reshape(pos, (*batch, n)), st)])
        seg = P.where(valid, seg, P.full(S, seg.shape, torch.int64))
        rest = data.shape[axis + 1:]
        self.index = P.broadcast_to(P.reshape(seg, (*batch, n) + (1,) * len(rest)), data.shape)
        self.inside = P.compare("LT", self.index, S)
        self.lens, self.axis, self.S, self.rest = lens, axis, S, rest
        self.out_shape = (*batch, S + 1, *rest)

    def scatter(self, src: Sym, kind: str, init: float) -> Sym:
        buf = P.full(init, self.out_shape, src.dtype)
        return P.emit1("scatter_axis", [buf, self.index, src], dimension=self.axis, reduce=kind)

    def cut(self, x: Sym) -> Sym:
        return P.slice_dim(x, self.axis, 0, self.S)

    def per_segment(self, x: Sym) -> Sym:
        """A (*batch, S) per-segment value broadcast against the output (*batch, S, *rest)."""
        return P.broadcast_to(P.reshape(x, (*x.shape, *(1,) * len(self.rest))), (*x.shape, *self.rest))

    def back(self, x: Sym) -> Sym:
        """A per-segment tensor (*batch, S, *rest) read back at each data position (spill positions read 0)."""
        pad = list(x.shape)
        pad[self.axis] = 1
        ext = P.concat([x, P.full(0, pad, x.dtype)], self.axis)
        return P.emit1("gather_axis", [ext, self.index], dimension=self.axis)


@lower(aten.segment_reduce.default)
def segment_reduce(data: Sym, reduce: str, *, lengths: Sym | None = None, indices: Sym | None = None,
                   offsets: Sym | None = None, axis: int = 0, unsafe: bool = False, initial: Any = None) -> Sym:
    seg = _Segments(data, lengths, offsets, axis)
    x = _wide(data)
    init = _IDENTITY[reduce] if initial is None else float(initial)
    out = seg.cut(seg.scatter(x, _SCATTER[reduce], init))
    if reduce == "mean":
        n = seg.per_segment(P.convert(seg.lens, x.dtype))
        out = P.where(P.compare("GT", n, 0.0), out / n, P.full(init if initial is not None else float("nan"),
                                                                   out.shape, x.dtype))
    return P.convert(out, data.dtype)


@lower(aten._segment_reduce_backward.default)
def segment_reduce_backward(grad: Sym, output: Sym, data: Sym, reduce: str, *, lengths: Sym | None = None,
                            offsets: Sym | None = None, axis: int = 0, initial: Any = None) -> Sym:
    seg = _Segments(data, lengths, offsets, axis)
    x = _wide(data)
    g = seg.back(_wide(grad))
    if reduce == "sum":
        gi = g
    elif reduce == "mean":
        gi = g / seg.back(seg.per_segment(P.convert(seg.lens, x.dtype)))
    elif reduce in ("max", "min"):
        eq = P.emit1("or", [P.compare("EQ", x, seg.back(_wide(output))), P.compare("NE", x, x)])
        gi = P.where(eq, g, P.zeros_like(g))
        count = seg.back(seg.cut(seg.scatter(P.convert(eq, x.dtype), "add", 0.0)))
        split = P.emit1("and", [P.compare("GE", count, 2.0), P.compare("GT", gi, 0.0)])
        gi = P.where(split, gi / count, gi)
    elif reduce == "prod":
        nan = P.compare("NE", x, x)
        z = P.emit1("or", [nan, P.compare("EQ", x, 0.0)])
        init = 1.0 if initial is None else float(initial)
        nonzero = P.where(z, P.full(1.0, x.shape, x.dtype), x)
        pn = seg.back(seg.cut(seg.scatter(nonzero, "multiply", init)))
        nz = seg.back(seg.cut(seg.scatter(P.convert(z, x.dtype), "add", 0.0)))
        nn = seg.back(seg.cut(seg.scatter(P.convert(nan, x.dtype), "add", 0.0)))
        other_nan = P.compare("GT", nn - P.convert(nan, x.dtype), 0.0)
        excl = P.where(other_nan, P.full(float("nan"), x.shape, x.dtype),
                       P.where(P.compare("GT", nz, 1.0), P.zeros_like(x), pn))
        gi = P.where(z, g * excl, g * seg.back(_wide(output)) / P.where(z, P.full(1.0, x.shape, x.dtype), x))
    else:
        raise RuntimeError(f"segment_reduce: unsupported reduction {reduce!r}")
    return P.convert(P.where(seg.inside, gi, P.zeros_like(gi)), data.dtype)
