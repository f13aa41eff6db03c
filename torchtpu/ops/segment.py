"""Lowerings of segment_reduce (lengths or offsets) and its backward, and of hash_tensor (an XOR reduction).

Each position along `axis` gets its segment id from the (data) lengths or offsets: the number of segment ends at
or before it (positions past the last segment get a spill id). The reduction is one scatter along `axis` into a
(segments + 1) buffer initialized with `initial` (or the reduction's identity); the backward gathers the
output gradient (and output) back per position and applies ATen's CPU rules, including its tie split for
max/min (only positive gradients are divided by the tie count) and the exclusive product for zeros in prod.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import operand_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
_SCATTER = {"sum": "add", "mean": "add", "max": "amax", "min": "amin", "prod": "multiply"}
_IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf"), "prod": 1.0}
_ALIASES = {"amax": "max", "amin": "min"}  # ATen's get_reduction_enum takes both names


def _wide(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


class _Segments:
    def __init__(self, data: Sym, lengths: Sym | None, offsets: Sym | None, axis: int) -> None:
        axis = P.canon_dim(axis, data.ndim)
        if offsets is not None:  # ATen's kernels take the offsets where both are given
            lengths = None
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


@lower(aten.segment_reduce.default, static=("initial",))
def segment_reduce(data: Sym, reduce: str, *, lengths: Sym | None = None, indices: Sym | None = None,
                   offsets: Sym | None = None, axis: int = 0, unsafe: bool = False, initial: Any = None) -> Sym:
    reduce = _ALIASES.get(reduce, reduce)
    seg = _Segments(data, lengths, offsets, axis)
    checked = operand_checks.segment_lengths_check(seg.lens, lengths is not None and offsets is None, unsafe,
                                                   data.shape[seg.axis])
    x = _wide(data)
    init = _IDENTITY[reduce] if initial is None else float(initial)
    out = seg.cut(seg.scatter(x, _SCATTER[reduce], init))
    if reduce == "mean":
        n = seg.per_segment(P.convert(seg.lens, x.dtype))
        out = P.where(P.compare("GT", n, 0.0), out / n, P.full(init if initial is not None else float("nan"),
                                                                   out.shape, x.dtype))
    return operand_checks.tie(P.convert(out, data.dtype), checked)


@lower(aten._segment_reduce_backward.default, static=("initial",))
def segment_reduce_backward(grad: Sym, output: Sym, data: Sym, reduce: str, *, lengths: Sym | None = None,
                            offsets: Sym | None = None, axis: int = 0, initial: Any = None) -> Sym:
    reduce = _ALIASES.get(reduce, reduce)
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


# --- hash_tensor (mode 0: XOR of each element's bits as uint64) ------------------------------------------------------
# ATen reads each element as uint64: integers and bools by value (two's complement), floats by the bits of their
# float64 value. The IR has no bitcast, so the float64 bit pattern is composed arithmetically (sign by copysign,
# exponent from log2 corrected by one step, mantissa scaled to an exact integer); XOR reduces as a halving tree.
# The program yields int64; the kernel views it as uint64 (the IR has no unsigned 64-bit type).

_SIGN_BIT = -(2 ** 63)


def _f64_bits(x: Sym) -> Sym:
    if not x.dtype.is_floating_point:
        return P.convert(x, torch.int64)
    v = P.convert(x, torch.float64)
    shape = v.shape
    f = lambda c: P.full(c, shape, torch.float64)  # noqa: E731
    i = lambda c: P.full(c, shape, torch.int64)  # noqa: E731
    a = P.emit1("abs", [v])
    nan = P.compare("NE", v, v)
    inf = P.compare("EQ", a, float("inf"))
    zero = P.compare("EQ", a, 0.0)
    special = P.emit1("or", [P.emit1("or", [nan, inf]), zero])
    safe = P.where(special, f(1.0), a)
    e = P.emit1("floor", [P.emit1("log2", [safe])])
    m = safe / P.emit1("exp2", [e])
    e = P.where(P.compare("GE", m, 2.0), e + 1.0, P.where(P.compare("LT", m, 1.0), e - 1.0, e))
    sub = P.compare("LT", e, -1022.0)
    e = P.where(sub, f(-1022.0), e)
    m = safe / P.emit1("exp2", [e])  # in [1, 2), or [0, 1) for a subnormal
    mant = P.convert(P.where(sub, m, m - 1.0) * float(2 ** 52), torch.int64)
    expo = P.where(sub, i(0), P.convert(e, torch.int64) + 1023)
    bits = expo * (2 ** 52) + mant
    bits = P.where(zero, i(0), P.where(inf, i(2047 * 2 ** 52), P.where(nan, i(0x7FF8 * 2 ** 48), bits)))
    neg = P.compare("LT", P.emit1("copysign", [f(1.0), v]), 0.0)
    return P.where(neg, P.emit1("or", [bits, i(_SIGN_BIT)]), bits)


def _xor_reduce(x: Sym, dims: tuple[int, ...], keepdim: bool) -> Sym:
    rest = [d for d in range(x.ndim) if d not in dims]
    y = P.transpose(x, (*rest, *dims))
    lead = tuple(x.shape[d] for d in rest)
    n = 1
    for d in dims:
        n *= x.shape[d]
    y = P.reshape(y, (*lead, n))
    if n == 0:
        y = P.full(0, (*lead, 1), torch.int64)
        n = 1
    while n > 1:
        if n % 2:
            y = P.concat([y, P.full(0, (*lead, 1), torch.int64)], len(lead))
            n += 1
        h = n // 2
        y = P.emit1("xor", [P.slice_dim(y, len(lead), 0, h), P.slice_dim(y, len(lead), h, n)])
        n = h
    y = P.reshape(y, lead)
    return P.keep_dims(y, x.shape, dims) if keepdim else y


def _hash_bits(self: Sym, dim: tuple[int, ...] = (), keepdim: bool = False, mode: int = 0) -> Sym:
    if mode != 0:
        raise RuntimeError(f"hash_tensor: unsupported mode {mode}")
    dims = P.canon_dims(list(dim) if dim else None, self.ndim)
    return _xor_reduce(_f64_bits(self), dims, keepdim)


def _hash_int64(self: torch.Tensor, dim: Any, keepdim: bool, mode: int) -> torch.Tensor:
    from torchtpu.execution import eager

    dim = tuple([dim] if isinstance(dim, int) else dim)
    return eager.run("aten::hash_tensor", _hash_bits, (self,), {"dim": dim, "keepdim": keepdim, "mode": mode})


def hash_tensor(self: torch.Tensor, dim: Any = (), *, keepdim: bool = False, mode: int = 0) -> torch.Tensor:
    return _hash_int64(self, dim, keepdim, mode).view(torch.uint64)


def hash_tensor_out(self: torch.Tensor, dim: Any = (), *, keepdim: bool = False, mode: int = 0,
                    out: torch.Tensor) -> torch.Tensor:
    bits = _hash_int64(self, dim, keepdim, mode)
    if tuple(out.shape) != tuple(bits.shape):
        out.resize_(bits.shape)
    out.view(torch.int64).copy_(bits)  # the same bytes: uint64 is not an IR dtype
    return out


def register(kernel: Any) -> None:
    kernel(aten.hash_tensor.default, hash_tensor)
    kernel(aten.hash_tensor.out, hash_tensor_out)
