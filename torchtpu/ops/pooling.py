"""Lowerings of max pooling (with indices; 2d/3d, dilation, padding, ceil_mode), adaptive max pooling, their
backward, and max_unpool.

A window reduction is a gather: at trace time each output position's window is listed as K flat input positions
(a dense constant of shape (K, outputs), with a validity mask for padding and the ragged windows of adaptive
pooling); the kernel gathers the K candidates, takes max and argmax over them (as ATen: the first max, but the
last NaN), and the argmax picks the flat input index. Backward and unpooling scatter by those indices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch

from torchtpu.ops import fractional_checks, pool_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.resize import _pool_out
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _flat_index(coords: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    flat = np.zeros_like(coords[0])
    for c, n in zip(coords, sizes):
        flat = flat * n + c
    return flat


def _window_grid(sizes: Sequence[int], windows: Sequence[list[tuple[np.ndarray, np.ndarray]]]
                 ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """windows[d]: per kernel offset along dim d, (input coordinate per output position, valid mask).
    Returns (K, n_out) flat positions (0 where invalid), the (K, n_out) mask, and the output sizes."""
    outs = tuple(len(windows[d][0][0]) for d in range(len(sizes)))
    positions, masks = [], []
    for combo in itertools.product(*[range(len(w)) for w in windows]):
        grids = np.meshgrid(*[windows[d][k][0] for d, k in enumerate(combo)], indexing="ij")
        valid = np.ones(outs, bool)
        for d, k in enumerate(combo):
            shape = [1] * len(sizes)
            shape[d] = outs[d]
            valid = valid & windows[d][k][1].reshape(shape)
        flat = _flat_index([np.clip(g, 0, n - 1) for g, n in zip(grids, sizes)], sizes)
        positions.append(np.where(valid, flat, 0).reshape(-1))
        masks.append(valid.reshape(-1))
    return np.stack(positions), np.stack(masks), outs


def _window_max(x: Sym, nd: int, grid: np.ndarray, valid: np.ndarray, outs: tuple[int, ...]) -> tuple[Sym, Sym]:
    lead = x.shape[:x.ndim - nd]
    b = 1
    for s in lead:
        b *= s
    n_in = x.numel() // max(b, 1)
    k, n_out = grid.shape
    flat = P.reshape(x, (b, n_in))
    if b == 0 or n_out == 0:
        return P.full(0, (*lead, *outs), x.dtype), P.full(0, (*lead, *outs), torch.int64)
    cand = P.emit1("index_select", [flat, P.dense(grid.reshape(-1), torch.int64)], dimension=1)
    cand = P.reshape(cand, (b, k, n_out))
    if not valid.all():
        low = float("-inf") if x.dtype.is_floating_point else (False if x.dtype == torch.bool else
                                                                 torch.iinfo(x.dtype).min)
        mask = P.broadcast_to(P.reshape(P.dense(valid, torch.bool), (1, k, n_out)), cand.shape)
        cand = P.where(mask, cand, P.full(low, cand.shape, x.dtype))
    values = P.reduce(cand, "max", (1,)) if x.dtype != torch.bool else P.reduce(cand, "or", (1,))
    arg = P.emit1("argreduce", [P.convert(cand, torch.float32) if x.dtype == torch.bool else cand], kind="max",
                  dimension=1)  # (b, n_out): which candidate
    if x.dtype.is_floating_point:  # ATen's `val > maxval || isnan(val)`: the first max, but the last NaN
        after = P.where(P.compare("NE", cand, cand), P.iota((b, k, n_out), 1, torch.int64) + 1,
                        P.full(0, (b, k, n_out), torch.int64))
        last_nan = P.reduce(after, "max", (1,))
        arg = P.where(P.compare("GT", last_nan, 0), last_nan - 1, P.convert(arg, torch.int64))
    picked = P.emit1("gather_axis", [P.broadcast_to(P.reshape(P.dense(grid, torch.int64), (1, k, n_out)),
                                                    (b, k, n_out)), P.reshape(arg, (b, 1, n_out))], dimension=1)
    return P.reshape(values, (*lead, *outs)), P.reshape(picked, (*lead, *outs))


def _pool_windows(sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                  dilation: Sequence[int], ceil_mode: bool) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    windows = []
    for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        o = _pool_out(n, k, s, p, d, ceil_mode)
        start = np.arange(o) * s - p
        windows.append([(start + j * d, (start + j * d >= 0) & (start + j * d < n)) for j in range(k)])
    return windows


def _max_pool(nd: int):  # noqa: ANN202
    def forward(self: Sym, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
                dilation: Sequence[int] = (1,), ceil_mode: bool = False) -> tuple[Sym, Sym]:
        k, s, p, d = pool_checks.params("max", nd, self.shape, kernel_size, stride, padding, dilation, ceil_mode)
        sizes = self.shape[self.ndim - nd:]
        windows = _pool_windows(sizes, k, s, p, d, ceil_mode)
        grid, valid, outs = _window_grid(sizes, windows)
        return _window_max(self, nd, grid, valid, outs)

    return forward


def _in_plane(indices: Sym, plane: int, what: str) -> Sym:
    """`indices` (int64, (b, n)) checked when the program runs: 0 <= i < plane, else IndexError. CPU's backward
    kernels write grad_input[i] unchecked (a bad index corrupts its heap); tpu refuses rather than wrap a
    negative one Python-style into a plausible gradient."""
    return P.check_index(indices, plane, f"{what}: index {{}} is out of bounds for an input plane of size {plane}")


def _scatter_back(grad_output: Sym, self: Sym, indices: Sym, nd: int, what: str) -> Sym:
    lead = self.shape[:self.ndim - nd]
    b = 1
    for s in lead:
        b *= s
    n_in = self.numel() // max(b, 1)
    acc = torch.float64 if grad_output.dtype == torch.float64 else torch.float32
    zeros = P.full(0, (b, n_in), acc)
    if grad_output.numel() == 0:
        return P.convert(P.reshape(zeros, self.shape), grad_output.dtype)
    g = P.reshape(P.convert(grad_output, acc), (b, -1))
    idx = _in_plane(P.reshape(P.convert(indices, torch.int64), (b, -1)), n_in, what)
    out = P.emit1("scatter_axis", [zeros, idx, g], dimension=1, reduce="add")
    return P.convert(P.reshape(out, self.shape), grad_output.dtype)


def _max_pool_backward(nd: int):  # noqa: ANN202
    def backward(grad_output: Sym, self: Sym, kernel_size: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool, indices: Sym) -> Sym:
        pool_checks.params("max", nd, self.shape, kernel_size, stride, padding, dilation, ceil_mode, backward=True)
        pool_checks.long_indices(indices)
        return _scatter_back(grad_output, self, indices, nd, f"max_pool{nd}d_with_indices_backward()")

    return backward


for _nd in (2, 3):
    lower(getattr(aten, f"max_pool{_nd}d_with_indices").default)(_max_pool(_nd))
    lower(getattr(aten, f"max_pool{_nd}d_with_indices_backward").default)(_max_pool_backward(_nd))


def _adaptive_windows(sizes: Sequence[int], outs: Sequence[int]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    windows = []
    for n, o in zip(sizes, outs):
        start = (np.arange(o) * n) // o
        end = ((np.arange(o) + 1) * n + o - 1) // o
        width = int((end - start).max()) if o else 0
        windows.append([(start + j, start + j < end) for j in range(width)])
    return windows


def _adaptive_max(nd: int):  # noqa: ANN202
    def forward(self: Sym, output_size: Sequence[int]) -> tuple[Sym, Sym]:
        pool_checks.adaptive("max", nd, self.shape, output_size)
        sizes = self.shape[self.ndim - nd:]
        grid, valid, outs = _window_grid(sizes, _adaptive_windows(sizes, list(output_size)))
        return _window_max(self, nd, grid, valid, outs)

    return forward


def _adaptive_max_backward(nd: int):  # noqa: ANN202
    def backward(grad_output: Sym, self: Sym, indices: Sym) -> Sym:
        pool_checks.adaptive_max_backward(nd, grad_output, self, indices)
        what = f"adaptive_max_pool{nd}d_backward()"
        planes = math.prod(grad_output.shape[:grad_output.ndim - nd])
        n_in = math.prod(self.shape[self.ndim - nd:])
        if planes != math.prod(self.shape[:self.ndim - nd]) and 0 < planes * n_in <= self.numel():
            # ATen's kernel counts the planes of grad_output (grad_input's are taken as that many images of the
            # input's last nd sizes, its later elements left 0): grad (2, 5, 1) into an input (3, 3, 2)
            image = P.reshape(P.full(0, (planes * n_in,), self.dtype), (planes, *self.shape[self.ndim - nd:]))
            flat = P.reshape(_scatter_back(grad_output, image, indices, nd, what), (planes * n_in,))
            if planes * n_in < self.numel():
                flat = P.concat([flat, P.full(0, (self.numel() - planes * n_in,), flat.dtype)], 0)
            return P.reshape(flat, self.shape)
        return _scatter_back(grad_output, self, indices, nd, what)

    return backward


for _nd in (2, 3):
    lower(getattr(aten, f"adaptive_max_pool{_nd}d").default)(_adaptive_max(_nd))
    lower(getattr(aten, f"adaptive_max_pool{_nd}d_backward").default)(_adaptive_max_backward(_nd))


def _unpool(self: Sym, indices: Sym, output_size: Sequence[int]) -> Sym:
    nd = len(output_size)
    lead = self.shape[:self.ndim - nd]
    b = 1
    for s in lead:
        b *= s
    n_out = 1
    for s in output_size:
        n_out *= s
    zeros = P.full(0, (b, n_out), self.dtype)
    pool_checks.unpool_kernel(nd, self.dtype, b * n_out)
    if self.numel() == 0 or b * n_out == 0:  # CPU runs no kernel (and no index check) for an empty output
        return P.reshape(zeros, (*lead, *output_size))
    vals = P.reshape(self, (b, -1))
    # CPU's kernel checks 0 <= i < plane (RuntimeError, its words)
    planes = "x".join(str(s) for s in output_size)
    idx = P.check_index(P.reshape(P.convert(indices, torch.int64), (b, -1)), n_out,
                        f"Found an invalid max index: {{}} (output volumes are of size {planes})", error="RuntimeError")
    return P.reshape(P.emit1("scatter_axis", [zeros, idx, vals], dimension=1, reduce="replace"),
                     (*lead, *output_size))


@lower(aten.max_unpool2d.default)
def max_unpool2d(self: Sym, indices: Sym, output_size: Sequence[int]) -> Sym:
    pool_checks.unpool(2, self.shape, indices, output_size)
    return _unpool(self, indices, output_size)


@lower(aten.max_unpool3d.default)
def max_unpool3d(self: Sym, indices: Sym, output_size: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int]) -> Sym:
    pool_checks.unpool(3, self.shape, indices, output_size, stride, padding)
    return _unpool(self, indices, output_size)


# --- fractional max pooling (deterministic given `random_samples`) ------------------------------------------------

def _intervals(sample: Sym, in_size: int, out_size: int, pool: int) -> Sym:
    """ATen's generate_intervals for (N, C) samples: (N, C, out_size) int64 window starts, computed in the
    input's dtype as on CPU (each operation rounded to it)."""
    n, c = sample.shape
    last = P.full(in_size - pool, (n, c, 1), torch.int64)
    if out_size <= 1:
        return last if out_size == 1 else P.full(0, (n, c, 0), torch.int64)
    dt = sample.dtype
    alpha = (torch.tensor(float(in_size - pool), dtype=dt) / torch.tensor(float(out_size - 1), dtype=dt)).item()
    s = P.broadcast_to(P.reshape(sample, (n, c, 1)), (n, c, out_size))
    i = P.convert(P.iota((n, c, out_size), 2), dt)
    first = P.convert(P.emit1("trunc", [(i + s) * alpha]), torch.int64)
    base = P.convert(P.emit1("trunc", [s * alpha]), torch.int64)
    starts = first - base
    return P.concat([P.slice_dim(starts, 2, 0, out_size - 1), last], 2)


def _fractional_max_pool(nd: int, self: Sym, kernel_size: list[int], output_size: list[int],
                         random_samples: Sym) -> tuple[Sym, Sym]:
    D = nd  # noqa: N806
    fractional_checks.check(nd, self.shape, self.dtype, kernel_size, output_size, random_samples.shape,
                            random_samples.dtype)
    batched = self.ndim == D + 2
    x = self if batched else P.reshape(self, (1, *self.shape))
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    comp = [1, 0] if D == 2 else [0, 1, 2]  # random_samples[..., 0] is W in 2-D, T in 3-D
    samples = P.slice_dim(random_samples, 0, 0, n)  # CPU reads the first N rows (1 unbatched), ignores the rest
    starts = [_intervals(P.reshape(P.slice_dim(samples, 2, comp[d], comp[d] + 1), (n, c)), sizes[d],
                         output_size[d], kernel_size[d]) for d in range(D)]
    q = 1
    for o in output_size:
        q *= o
    flat_x = P.reshape(x, (n, c, -1))
    strides = [1] * D
    for d in range(D - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    best = best_idx = None
    for offs in itertools.product(*[range(k) for k in kernel_size]):
        idx = None
        for d in range(D):
            shape = [n, c] + [1] * D
            shape[2 + d] = output_size[d]
            pos = P.broadcast_to(P.reshape(starts[d] + offs[d], shape), (n, c, *output_size)) * strides[d]
            idx = pos if idx is None else idx + pos
        idx = P.reshape(idx, (n, c, q))
        val = P.emit1("gather_axis", [flat_x, idx], dimension=2)
        if best is None:
            best, best_idx = val, idx
        else:
            take = P.emit1("or", [P.compare("GT", val, best), P.compare("NE", val, val)])
            best, best_idx = P.where(take, val, best), P.where(take, idx, best_idx)
    out_shape = (n, c, *output_size) if batched else (c, *output_size)
    return P.reshape(best, out_shape), P.reshape(best_idx, out_shape)


@lower(aten.fractional_max_pool2d.default)
def fractional_max_pool2d(self: Sym, kernel_size: list[int], output_size: list[int], random_samples: Sym
                          ) -> tuple[Sym, Sym]:
    return _fractional_max_pool(2, self, list(kernel_size), list(output_size), random_samples)


@lower(aten.fractional_max_pool3d.default)
def fractional_max_pool3d(self: Sym, kernel_size: list[int], output_size: list[int], random_samples: Sym
                          ) -> tuple[Sym, Sym]:
    return _fractional_max_pool(3, self, list(kernel_size), list(output_size), random_samples)


@lower(aten.fractional_max_pool2d_backward.default, aten.fractional_max_pool3d_backward.default)
def fractional_max_pool_backward(grad_output: Sym, self: Sym, kernel_size: list[int], output_size: list[int],
                                 indices: Sym) -> Sym:
    D = len(kernel_size)  # noqa: N806
    fractional_checks.check_backward(D, grad_output.shape, self.shape, output_size, indices.shape)
    lead = self.shape[:self.ndim - D]
    m = 1
    for s in lead:
        m *= s
    g = P.reshape(P.convert(grad_output, torch.float64 if self.dtype == torch.float64 else torch.float32), (m, -1))
    plane = self.numel() // max(m, 1)
    idx = _in_plane(P.reshape(P.convert(indices, torch.int64), (m, -1)), plane,
                    f"fractional_max_pool{D}d_backward()")
    buf = P.full(0.0, (m, plane), g.dtype)
    out = P.emit1("scatter_axis", [buf, idx, g], dimension=1, reduce="add")
    return P.convert(P.reshape(out, self.shape), self.dtype)
