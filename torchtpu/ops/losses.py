"""Lowerings of further losses and NN ops: multi-margin and multilabel-margin losses, shrink backward, PReLU,
RReLU (random slopes in training), channel shuffle, pairwise distances (pdist / cdist and backward),
embedding_bag and its backward, bincount / histc, put, index_fill, repeat_interleave, equal, vdot."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits
from torchtpu.execution import eager
from torchtpu.ops import arg_checks, backward_checks, host_index, index_checks, loss_checks, operand_checks
from torchtpu.ops import prims as P
from torchtpu.ops.elementwise import promoted
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def _wide(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


def _times_grad_output(grad: Sym, grad_output: Sym, n: int, reduction: int, self: Sym) -> Sym:
    """A per-sample loss's (n, c) input gradient times grad_output (per sample, or the reduced scalar; mean
    divides by n), as `self`'s shape and dtype."""
    g = _wide(grad_output)
    if reduction == 0:
        g = P.broadcast_to(P.reshape(g, (n, 1)), grad.shape)
    else:
        g = P.broadcast_to(P.reshape(g, (1, 1)), grad.shape)
        if reduction == 1:
            g = g / float(n)
    return P.convert(P.reshape(grad * g, self.shape), self.dtype)


def _reduce_loss(loss: Sym, reduction: int, dtype: torch.dtype) -> Sym:
    if reduction == 0:
        return P.convert(loss, dtype)
    total = P.reduce(loss, "sum", tuple(range(loss.ndim)))
    if reduction == 1:
        total = total / float(max(loss.numel(), 1)) if loss.numel() else total * float("nan")
    return P.convert(total, dtype)


def _margin_terms(self: Sym, target: Sym, p: Any, margin: Any, weight: Sym | None) -> tuple[Sym, Sym, Sym]:
    x = _wide(self if self.ndim == 2 else P.reshape(self, (1, -1)))
    n, c = x.shape
    tgt = P.check_index(P.reshape(P.convert(target, torch.int64), (n, 1)), c,
                         "target out of range", error="RuntimeError")
    picked = P.emit1("gather_axis", [x, tgt], dimension=1)  # (n, 1)
    z = float(margin) - P.broadcast_to(picked, x.shape) + x
    hit = P.compare("EQ", P.iota((n, c), 1), P.broadcast_to(tgt, (n, c)))
    active = P.emit1("and", [P.compare("GT", z, 0.0), P.emit1("not", [hit])])
    h = P.where(active, z if p == 1 else z * z, P.zeros_like(z))
    if weight is not None:
        w = P.emit1("index_select", [_wide(P.reshape(weight, (-1,))), P.reshape(tgt, (n,))], dimension=0)
        h = h * P.broadcast_to(P.reshape(w, (n, 1)), h.shape)
    return h, active, z


@lower(aten.multi_margin_loss.default, static=("p", "margin"))  # _margin_terms reads both
def multi_margin_loss(self: Sym, target: Sym, p: Any = 1, margin: Any = 1, weight: Sym | None = None,
                      reduction: int = 1) -> Sym:
    loss_checks.check_multi_margin(self, target, weight)
    if self.numel():  # the kernel's dispatch over float/double, then its target.data_ptr<int64_t>()
        if self.dtype not in (torch.float32, torch.float64):
            raise NotImplementedError(f'"multi_margin_loss_cpu_kernel" not implemented for '
                                      f"'{aten_type_name(self.dtype)}'")
        if target.dtype != torch.int64:
            raise RuntimeError(f"expected scalar type Long but found {aten_type_name(target.dtype)}")
    h, _, _ = _margin_terms(self, target, p, margin, weight)
    per = P.reduce(h, "sum", (1,)) / float(h.shape[1])
    if reduction == 0:  # ATen's output: (nframe,) for a target with dims, else 0-d (whatever the input's rank)
        return P.convert(P.reshape(per, per.shape if target.ndim > 0 else ()), self.dtype)
    return _reduce_loss(per, reduction, self.dtype)


@lower(aten.multi_margin_loss_backward.default, static=("p", "margin"))
def multi_margin_loss_backward(grad_output: Sym, self: Sym, target: Sym, p: Any, margin: Any,
                               weight: Sym | None = None, reduction: int = 1) -> Sym:
    loss_checks.check_multi_margin(self, target, weight)
    if target.dtype != torch.int64:  # the kernel's target.data_ptr<int64_t>(), after p's check and the dispatch
        raise RuntimeError(f"expected scalar type Long but found {aten_type_name(target.dtype)}")
    _, active, z = _margin_terms(self, target, p, margin, weight)
    n, c = z.shape
    d = P.where(active, P.full(1.0, z.shape, z.dtype) if p == 1 else z * 2.0, P.zeros_like(z)) / float(c)
    if weight is not None:
        tgt = P.reshape(P.convert(target, torch.int64), (n,))
        w = P.emit1("index_select", [_wide(P.reshape(weight, (-1,))), tgt], dimension=0)
        d = d * P.broadcast_to(P.reshape(w, (n, 1)), d.shape)
    # d loss_i / d x_ij = d_ij for j != y_i, and -sum_j d_ij for j == y_i
    hit = P.compare("EQ", P.iota((n, c), 1), P.broadcast_to(P.reshape(P.convert(target, torch.int64), (n, 1)),
                                                            (n, c)))
    total = P.broadcast_to(P.reduce(d, "sum", (1,), keepdim=True), d.shape)
    grad = P.where(hit, -total, d)
    return _times_grad_output(grad, grad_output, n, reduction, self)


def _multilabel(self: Sym, target: Sym, given: Sym | None = None) -> tuple[Sym, Sym, Sym, Sym]:
    """multilabel_margin_loss terms over (target slot s, class k): 1 - x[t_s] + x[k] for every valid slot (up
    to the first -1; duplicates count twice, as ATen) and non-target class k (the backward's: where the `given`
    is_target is 0, as its kernel reads it). Returns (terms (n, c, c), is_target (n, c), active mask (n, c, c),
    slot targets (n, c))."""
    x = _wide(self if self.ndim == 2 else P.reshape(self, (1, -1)))
    n, c = x.shape
    t = P.convert(target if target.ndim == 2 else P.reshape(target, (1, -1)), torch.int64)
    neg = P.convert(P.compare("LT", t, 0), torch.int64)
    valid = P.compare("EQ", P.emit1("cumulative", [neg], kind="sum", dimension=1), 0)  # (n, slots)
    safe = P.where(valid, t, P.zeros_like(t))
    onehot = P.compare("EQ", P.broadcast_to(P.reshape(safe, (n, c, 1)), (n, c, c)), P.iota((n, c, c), 2))
    onehot = P.emit1("and", [onehot, P.broadcast_to(P.reshape(valid, (n, c, 1)), (n, c, c))])
    is_target = P.reduce(onehot, "or", (1,))  # (n, classes)
    if given is not None:
        is_target = P.compare("NE", P.reshape(given, (n, c)), P.zeros_like(P.reshape(given, (n, c))))
    xt = P.emit1("gather_axis", [x, safe], dimension=1)  # (n, slots)
    z = 1.0 - P.broadcast_to(P.reshape(xt, (n, c, 1)), (n, c, c)) + P.broadcast_to(P.reshape(x, (n, 1, c)),
                                                                                   (n, c, c))
    pair = P.emit1("and", [P.broadcast_to(P.reshape(valid, (n, c, 1)), (n, c, c)),
                           P.emit1("not", [P.broadcast_to(P.reshape(is_target, (n, 1, c)), (n, c, c))])])
    mask = P.emit1("and", [pair, P.compare("GT", z, 0.0)])
    return P.where(mask, z, P.zeros_like(z)), is_target, mask, safe


@lower(aten.multilabel_margin_loss_forward.default)
def multilabel_margin_loss_forward(self: Sym, target: Sym, reduction: int) -> tuple[Sym, Sym]:
    loss_checks.check_multilabel_forward(self, target)
    t = P.convert(target, torch.int64)
    if self.numel():  # ATen's range check of every target value (also those after the first -1)
        zero = loss_checks.multilabel_target_in_range(t, self, "argument #2 'target' is out of range")
        t = operand_checks.tie(t, zero)
    terms, is_target, _, _ = _multilabel(self, t)
    c = terms.shape[1]
    per = P.reduce(terms, "sum", (1, 2)) / float(c)
    is_t = P.convert(P.reshape(is_target, target.shape), self.dtype)
    if reduction == 0:
        return P.convert(P.reshape(per, () if self.ndim < 2 else per.shape), self.dtype), is_t
    return _reduce_loss(per, reduction, self.dtype), is_t


@lower(aten.multilabel_margin_loss_backward.default)
def multilabel_margin_loss_backward(grad_output: Sym, self: Sym, target: Sym, reduction: int, is_target: Sym
                                    ) -> Sym:
    # the CPU template's checks on values (after those on shapes and dtypes: ops/cpu_raise_checks3.py), made
    # before the target indexes anything
    t = P.convert(target, torch.int64)
    if self.numel():  # an empty input returns first
        zero = loss_checks.multilabel_target_in_range(t, self, "argument #3 'target' is out of range")
        outside = P.emit1("or", [P.emit1("not", [P.compare("GE", is_target, 0)]),
                                 P.emit1("not", [P.compare("LE", is_target, 1)])])  # NaN too
        zero = zero + operand_checks.data_check(outside, "argument #5 'is_target' is out of range")
        t = operand_checks.tie(t, zero)
    _, _, mask, safe = _multilabel(self, t, is_target)
    n, c, _ = mask.shape
    # each active pair moves the kernel's g = 1 / dim (mean: 1 / (nframe * dim)), then grad_output multiplies
    acc = torch.float64 if self.dtype == torch.float64 else torch.float32
    g = P.const(1.0 / max(n * c if reduction == 1 else c, 1), acc)  # no pairs where n or c is 0
    m = P.convert(mask, acc) * P.broadcast_to(g, mask.shape)
    plus = P.reduce(m, "sum", (1,))  # per class k: active pairs where k is the non-target
    minus = P.reduce(m, "sum", (2,))  # per slot s: active pairs of target t_s
    grad = P.emit1("scatter_axis", [plus, safe, -minus], dimension=1, reduce="add")
    return _times_grad_output(grad, grad_output, n, 2 if reduction == 1 else reduction, self)


@lower(aten.hardshrink_backward.default)
def hardshrink_backward(grad_out: Sym, self: Sym, lambd: Any) -> Sym:
    # ATen's shrink_backward kernel: a binary TensorIterator op (the common dtype), lambd read as that dtype
    (g, x), common = promoted(grad_out, self)
    if not common.is_floating_point:  # AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16)
        raise NotImplementedError(f'"shrink_backward_cpu" not implemented for \'{aten_type_name(common)}\'')
    lam = P.convert(lambd, common)
    inside = P.emit1("and", [P.compare("GE", x, -lam), P.compare("LE", x, lam)])
    return P.where(inside, P.zeros_like(g), g)


@lower(aten.softshrink_backward.default)
def softshrink_backward(grad_output: Sym, self: Sym, lambd: Any) -> Sym:
    return hardshrink_backward(grad_output, self, lambd)


@lower(aten._prelu_kernel.default)
def prelu(self: Sym, weight: Sym) -> Sym:
    return P.where(P.compare("GT", self, 0), self, self * weight)


@lower(aten._prelu_kernel_backward.default)
def prelu_backward(grad_output: Sym, self: Sym, weight: Sym) -> tuple[Sym, Sym]:
    """ATen's kernel is one TensorIterator with two outputs: both have the broadcast shape of self, weight and
    grad (autograd sums the weight's gradient to its shape afterwards)."""
    backward_checks.check_prelu_backward(grad_output, self, weight)
    shape = P.broadcast_shapes(self.shape, weight.shape, grad_output.shape)
    x, w, g = (P.broadcast_to(t, shape) for t in (self, weight, grad_output))
    pos = P.compare("GT", x, 0)
    grad_input = P.where(pos, g, g * w)
    grad_w = P.where(pos, P.zeros_like(g), g * x)
    return P.convert(grad_input, self.dtype), P.convert(grad_w, weight.dtype)


@lower(aten.channel_shuffle.default)
def channel_shuffle(self: Sym, groups: int) -> Sym:
    operand_checks.check_channel_shuffle(self, groups)
    n, c = self.shape[:2]
    rest = self.shape[2:]
    x = P.reshape(self, (n, groups, c // groups, *rest))
    return P.reshape(P.transpose(x, (0, 2, 1, *range(3, x.ndim))), self.shape)


def _rrelu_lowering(self: Sym, noise: Sym, lower_: float, upper: float, training: bool, *, rng: Sym
                    ) -> tuple[Sym, Sym]:
    x = _wide(self)
    neg = P.compare("LE", x, 0.0)
    if training:
        u = P.emit1("rng", [rng], shape=self.shape, dtype="float32", distribution="uniform")
        slope = P.convert(u, x.dtype) * float(upper - lower_) + float(lower_)
        new_noise = P.where(neg, slope, P.full(1.0, x.shape, x.dtype))
        return P.convert(x * new_noise, self.dtype), P.convert(new_noise, noise.dtype)
    slope = (float(lower_) + float(upper)) / 2.0
    return P.convert(P.where(neg, x * slope, x), self.dtype), noise


def _real(value: Any) -> float:
    """A Scalar bound as the kernel reads it (a complex one: its real part; an imaginary part was refused)."""
    return float(value.real if isinstance(value, complex) else value)


def rrelu_with_noise(self: torch.Tensor, noise: torch.Tensor, lower: Any = 0.125, upper: Any = 1 / 3,
                     training: bool = False, generator: Any = None) -> torch.Tensor:
    from torchtpu import random as tpu_random

    rng = tpu_random.next_state(self.device.index or 0, self.numel())
    out, new_noise = eager.run("aten::rrelu_with_noise", _rrelu_lowering,
                               (self, noise, _real(lower), _real(upper), bool(training)), {"rng": rng},
                               static=(("self", "noise", "lower", "upper"), frozenset({"lower", "upper"}), frozenset()))
    if training:
        noise.copy_(new_noise)
    return out


def _pair_norm(diff: Sym, p: float, dim: int) -> Sym:
    a = P.emit1("abs", [diff])
    if p == 0:
        return P.reduce(P.convert(P.compare("NE", a, 0.0), a.dtype), "sum", (dim,))
    if p == 1:
        return P.reduce(a, "sum", (dim,))
    if p == 2:
        return P.emit1("sqrt", [P.reduce(a * a, "sum", (dim,))])
    if p == float("inf"):
        return P.reduce(a, "max", (dim,))
    return P.binary("power", P.reduce(P.binary("power", a, float(p)), "sum", (dim,)), 1.0 / float(p))


def _pair_grad(diff: Sym, dist: Sym, p: float, dim: int) -> Sym:
    """d ||diff||_p / d diff, with dist broadcast along `dim` (0 where dist == 0, as ATen)."""
    dd = P.broadcast_to(P.reshape(dist, tuple(1 if i == dim else s for i, s in enumerate(diff.shape))),
                        diff.shape)
    zero = P.compare("EQ", dd, 0.0)
    sign = P.emit1("sign", [diff])
    a = P.emit1("abs", [diff])
    if p == 0:
        g = P.zeros_like(diff)
    elif p == 1:
        g = sign
    elif p == 2:
        g = diff / dd
    elif p == float("inf"):
        g = P.where(P.compare("EQ", a, dd), sign, P.zeros_like(diff))
    elif p < 2:
        g = sign * P.binary("power", a, float(p) - 1.0) / P.binary("power", dd, float(p) - 1.0)
        g = P.where(P.compare("EQ", a, 0.0), P.zeros_like(g), g)
    else:
        g = diff * P.binary("power", a, float(p) - 2.0) / P.binary("power", dd, float(p) - 1.0)
    return P.where(zero, P.zeros_like(g), g)


def _pdist_pairs(n: int) -> tuple[list[int], list[int]]:
    i, j = [], []
    for a in range(n):
        for b in range(a + 1, n):
            i.append(a)
            j.append(b)
    return i, j


@lower(aten._pdist_forward.default, static=("p",), prepare=operand_checks.pdist_contiguous)
def pdist(self: Sym, p: float = 2.0) -> Sym:
    n = self.shape[0]
    i, j = _pdist_pairs(n)
    if not i:
        return P.full(0, (0,), self.dtype)
    x = _wide(self)
    diff = P.emit1("index_select", [x, P.dense(i, torch.int64)], dimension=0) - \
        P.emit1("index_select", [x, P.dense(j, torch.int64)], dimension=0)
    return P.convert(_pair_norm(diff, p, 1), self.dtype)


@lower(aten._pdist_backward.default, static=("p",))
def pdist_backward(grad: Sym, self: Sym, p: float, pdist: Sym) -> Sym:
    n, m = self.shape
    i, j = _pdist_pairs(n)
    x = _wide(self)
    if not i:
        return P.zeros_like(self)
    ii, jj = P.dense(i, torch.int64), P.dense(j, torch.int64)
    diff = P.emit1("index_select", [x, ii], dimension=0) - P.emit1("index_select", [x, jj], dimension=0)
    g = _pair_grad(diff, _wide(pdist), p, 1) * P.broadcast_to(P.reshape(_wide(grad), (-1, 1)), diff.shape)
    out = P.emit1("index_add", [P.full(0, (n, m), g.dtype), ii, g], dimension=0)
    out = P.emit1("index_add", [out, jj, -g], dimension=0)
    return P.convert(out, self.dtype)


def _cdist_checked(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """CPU's checks on the real arguments, made before the trace."""
    values = dict(zip(("x1", "x2", "p", "compute_mode"), args), **kwargs)
    arg_checks.check_cdist(values["x1"], values["x2"], values["p"], values.get("compute_mode"))
    return args, kwargs


@lower(aten._cdist_forward.default, prepare=_cdist_checked, static=("p",))
def cdist(x1: Sym, x2: Sym, p: float, compute_mode: int | None = None) -> Sym:
    a, b = _wide(x1), _wide(x2)
    r1, r2, m = a.shape[-2], b.shape[-2], a.shape[-1]
    batch = P.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    aa = P.broadcast_to(P.reshape(P.broadcast_to(a, (*batch, r1, m)), (*batch, r1, 1, m)), (*batch, r1, r2, m))
    bb = P.broadcast_to(P.reshape(P.broadcast_to(b, (*batch, r2, m)), (*batch, 1, r2, m)), (*batch, r1, r2, m))
    return P.convert(_pair_norm(aa - bb, p, len(batch) + 2), x1.dtype)


@lower(aten._cdist_backward.default, static=("p",))
def cdist_backward(grad: Sym, x1: Sym, x2: Sym, p: float, cdist: Sym) -> Sym:
    a, b = _wide(x1), _wide(x2)
    r1, r2, m = a.shape[-2], b.shape[-2], a.shape[-1]
    batch = P.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = (*batch, r1, r2, m)
    aa = P.broadcast_to(P.reshape(P.broadcast_to(a, (*batch, r1, m)), (*batch, r1, 1, m)), shape)
    bb = P.broadcast_to(P.reshape(P.broadcast_to(b, (*batch, r2, m)), (*batch, 1, r2, m)), shape)
    k = len(batch) + 2
    g = _pair_grad(aa - bb, P.reshape(_wide(cdist), (*batch, r1, r2)), p, k)
    g = g * P.broadcast_to(P.reshape(_wide(grad), (*batch, r1, r2, 1)), shape)
    return P.convert(P.reduce(g, "sum", (k - 1,)), x1.dtype)


@lower(aten.put.default, prepare=host_index.INDEX_AT_1)
def put(self: Sym, index: Sym, source: Sym, accumulate: bool = False) -> Sym:
    operand_checks.check_put(self, index, source)
    flat = P.reshape(self, (self.numel(),))
    idx = P.reshape(P.convert(index, torch.int64), (-1,))
    if idx.shape[0] == 0:
        return self
    idx = P.check_index(idx, self.numel(), f"put(): out of range: tried to access index {{}} on a tensor of "
                                           f"{self.numel()} elements.", negative=True)
    idx = P.where(P.compare("LT", idx, 0), idx + self.numel(), idx)
    src = P.reshape(P.convert(source, self.dtype), (-1,))
    out = P.emit1("scatter_axis", [flat, idx, src], dimension=0, reduce="add" if accumulate else "replace")
    return P.reshape(out, self.shape)


@lower(aten.index_fill.int_Tensor, aten.index_fill.int_Scalar, prepare=host_index.INDEX_AT_2)
def index_fill(self: Sym, dim: int, index: Sym, value: Any) -> Sym:
    index_checks.check_index_fill(self, dim, index, value)
    if self.ndim == 0:  # a 0-d self is indexed as one of size 1 (index -1 and 0)
        check_scalar_fits(value, self.dtype, "index_fill()")
        if not index.numel():
            return self
        P.check_index(P.reshape(P.convert(index, torch.int64), (-1,)), 1,
                      "index {} is out of bounds for dimension 0 with size 1", negative=True)
        return P.broadcast_to(P.convert(value, self.dtype), ())
    d = P.canon_dim(dim, self.ndim)
    check_scalar_fits(value, self.dtype, "index_fill()")
    n = self.shape[d]
    idx = P.reshape(P.convert(index, torch.int64), (-1,))
    k = idx.shape[0]
    if k == 0:
        return self
    idx = P.check_index(idx, n, f"index_fill(): index {{}} is out of bounds for dimension {d} with size {n}",
                        negative=True)
    idx = P.where(P.compare("LT", idx, 0), idx + n, idx)
    hit = P.reduce(P.compare("EQ", P.iota((n, k), 0), P.broadcast_to(P.reshape(idx, (1, k)), (n, k))), "or", (1,))
    mask = P.broadcast_to(P.reshape(hit, tuple(n if i == d else 1 for i in range(self.ndim))), self.shape)
    v = P.broadcast_to(P.convert(value, self.dtype), self.shape)
    return P.where(mask, v, self)


@lower(aten.vdot.default)
def vdot(self: Sym, other: Sym) -> Sym:
    from torchtpu.ops.complex import conj
    from torchtpu.ops.matmul import dot

    return dot(conj(self), other)  # the first argument conjugated


def equal(self: torch.Tensor, other: torch.Tensor) -> bool:
    if self.shape != other.shape:
        return False

    def same(a: Sym, b: Sym) -> Sym:
        return P.reduce(P.compare("EQ", a, b), "and", tuple(range(a.ndim)))

    return bool(eager.run("aten::equal", same, (self, other), {}).item())


def register(kernel: Any) -> None:
    kernel(aten.rrelu_with_noise.default, rrelu_with_noise)
    kernel(aten.equal.default, equal)


# --- CTC loss (forward: log alpha recursion; backward: log beta and the occupancy per class) -----------------------

_NEG = float("-inf")


def _lengths_to_lists(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The .Tensor overloads: input and target lengths are read back (they fix the recursion's static extent,
    as the int[] overloads do; ATen's ctc_loss itself reads them to the host)."""
    args = list(args)
    for i in (2, 3):
        if isinstance(args[i], torch.Tensor):
            args[i] = [int(v) for v in args[i].cpu().tolist()]
    return tuple(args), kwargs


def _lse3(a: Sym, b: Sym, c: Sym) -> Sym:
    m = P.emit1("maximum", [P.emit1("maximum", [a, b]), c])
    m = P.where(P.compare("EQ", m, _NEG), P.zeros_like(m), m)
    e = lambda x: P.emit1("exponential", [x - m])  # noqa: E731
    return P.emit1("log", [e(a) + e(b) + e(c)]) + m


class _Ctc:
    """The static structure of one CTC problem: extended labels (blank, l1, blank, l2, ..., blank) per batch row,
    and the masks that depend on the (static) lengths."""

    def __init__(self, log_probs: Sym, targets: Sym, input_lengths: list[int], target_lengths: list[int],
                 blank: int) -> None:
        import numpy as np

        self.lp = _wide(log_probs)
        T, B, C = self.lp.shape  # noqa: N806
        tl = [int(v) for v in target_lengths]
        il = [int(v) for v in input_lengths]
        S = max(tl, default=0)  # noqa: N806
        tg = P.convert(targets, torch.int64)
        if tg.ndim == 2:
            lab = P.slice_dim(tg, 1, 0, S) if S <= tg.shape[1] else P.concat(
                [tg, P.full(blank, (B, S - tg.shape[1]), torch.int64)], 1)
        else:
            rows, off = [], 0
            for n in tl:
                row = P.slice_dim(tg, 0, off, off + n)
                if n < S:
                    row = P.concat([row, P.full(blank, (S - n,), torch.int64)], 0) if n else \
                        P.full(blank, (S,), torch.int64)
                rows.append(P.reshape(row, (1, S)))
                off += n
            lab = P.concat(rows, 0) if rows else P.full(blank, (B, S), torch.int64)
        inside = P.dense(np.arange(S)[None, :] < np.array(tl)[:, None], torch.bool) if S else None
        if S:
            lab = P.where(inside, lab, P.full(blank, (B, S), torch.int64))
        pairs = P.reshape(P.concat([P.full(blank, (B, S, 1), torch.int64), P.reshape(lab, (B, S, 1))], 2),
                          (B, 2 * S))
        self.ext = P.concat([pairs, P.full(blank, (B, 1), torch.int64)], 1)  # (B, S')
        Sp = 2 * S + 1  # noqa: N806
        self.T, self.B, self.C, self.Sp, self.il, self.tl = T, B, C, Sp, il, tl
        s = np.arange(Sp)[None, :]
        tla = np.array(tl)[:, None]
        self.valid = P.dense(np.broadcast_to(s < 2 * tla + 1, (B, Sp)), torch.bool)
        self.last = P.dense(np.broadcast_to((s == 2 * tla) | ((s == 2 * tla - 1) & (tla > 0)), (B, Sp)),
                            torch.bool)
        prev2 = P.concat([P.full(-1, (B, 2), torch.int64), P.slice_dim(self.ext, 1, 0, Sp - 2)], 1) \
            if Sp > 2 else P.full(-1, (B, Sp), torch.int64)
        odd = P.dense(np.broadcast_to(s % 2 == 1, (B, Sp)), torch.bool)
        self.skip = P.emit1("and", [odd, P.compare("NE", self.ext, prev2)])  # s may come from s - 2
        idx = P.broadcast_to(P.reshape(self.ext, (1, B, Sp)), (T, B, Sp))
        self.idx = idx
        self.lpe = P.emit1("gather_axis", [self.lp, idx], dimension=2)  # (T, B, S')
        self.neg = P.full(_NEG, (B, Sp), self.lp.dtype)

    def step(self, t: int) -> Sym:
        return P.reshape(P.slice_dim(self.lpe, 0, t, t + 1), (self.B, self.Sp))

    def rows(self, flags: list[bool]) -> Sym:
        import numpy as np

        return P.dense(np.broadcast_to(np.array(flags)[:, None], (self.B, self.Sp)), torch.bool)

    def shift(self, x: Sym, k: int) -> Sym:
        """x[:, s - k] (k > 0) or x[:, s + |k|] (k < 0), -inf outside."""
        if abs(k) >= self.Sp:
            return self.neg
        pad = P.full(_NEG, (self.B, abs(k)), x.dtype)
        if k > 0:
            return P.concat([pad, P.slice_dim(x, 1, 0, self.Sp - k)], 1)
        return P.concat([P.slice_dim(x, 1, -k, self.Sp), pad], 1)

    def alphas(self) -> list[Sym]:
        first = P.dense([[i < 2 for i in range(self.Sp)]] * self.B, torch.bool)
        a = P.where(P.emit1("and", [first, self.valid]), self.step(0), self.neg)
        out = [a]
        for t in range(1, self.T):
            new = _lse3(a, self.shift(a, 1), P.where(self.skip, self.shift(a, 2), self.neg)) + self.step(t)
            new = P.where(self.valid, new, self.neg)
            a = P.where(self.rows([t < n for n in self.il]), new, a) if not all(t < n for n in self.il) else new
            out.append(a)
        return out

    def betas(self) -> list[Sym]:
        skip_next = P.concat([P.slice_dim(self.skip, 1, 2, self.Sp), P.full(False, (self.B, 2), torch.bool)], 1) \
            if self.Sp > 2 else P.full(False, (self.B, self.Sp), torch.bool)
        out: list[Sym] = [self.neg] * self.T
        b = self.neg
        for t in range(self.T - 1, -1, -1):
            lpt = self.step(t)
            init = P.where(self.last, lpt, self.neg)
            if t == self.T - 1:
                rec = self.neg
            else:
                rec = _lse3(b, self.shift(b, -1), P.where(skip_next, self.shift(b, -2), self.neg)) + lpt
                rec = P.where(self.valid, rec, self.neg)
            start = [t == n - 1 for n in self.il]
            active = [t < n - 1 for n in self.il]
            b = P.where(self.rows(start), init, P.where(self.rows(active), rec, self.neg))
            out[t] = b
        return out


def _stack(rows: list[Sym], dim: int) -> Sym:
    return P.concat([P.reshape(r, (*r.shape[:dim], 1, *r.shape[dim:])) for r in rows], dim)


def _ctc_check(log_probs: Sym) -> None:
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C), got {log_probs.shape}")


@lower(aten._ctc_loss.default)
def ctc_loss(log_probs: Sym, targets: Sym, input_lengths: list[int], target_lengths: list[int], blank: int = 0,
             zero_infinity: bool = False) -> tuple[Sym, Sym]:
    _ctc_check(log_probs)
    longest = max(target_lengths, default=0)
    if targets.ndim == 2 and targets.shape[1] < longest:  # CPU's ctc_loss_allocate_outputs check
        raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    ctc = _Ctc(log_probs, targets, input_lengths, target_lengths, blank)
    alphas = ctc.alphas()
    final = alphas[-1]
    m = P.reduce(P.where(ctc.last, final, ctc.neg), "max", (1,), keepdim=True)
    m = P.where(P.compare("EQ", m, _NEG), P.zeros_like(m), m)
    e = P.where(ctc.last, P.emit1("exponential", [final - P.broadcast_to(m, final.shape)]), P.zeros_like(final))
    nll = -(P.emit1("log", [P.reduce(e, "sum", (1,))]) + P.reshape(m, (ctc.B,)))
    return P.convert(nll, log_probs.dtype), P.convert(_stack(alphas, 1), log_probs.dtype)


@lower(aten._ctc_loss.Tensor, prepare=_lengths_to_lists)
def ctc_loss_tensor(log_probs: Sym, targets: Sym, input_lengths: list[int], target_lengths: list[int],
                    blank: int = 0, zero_infinity: bool = False) -> tuple[Sym, Sym]:
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)


@lower(aten._ctc_loss_backward.default)
def ctc_loss_backward(grad: Sym, log_probs: Sym, targets: Sym, input_lengths: list[int], target_lengths: list[int],
                      neg_log_likelihood: Sym, log_alpha: Sym, blank: int, zero_infinity: bool = False) -> Sym:
    """d nll / d log_probs[t, b, c] = exp(lp) - exp(log sum_{s: l'(s) = c} alpha_t(s) beta_t(s) + nll - lp), zero
    past each input length (and for infinite losses under zero_infinity), times the incoming gradient."""
    import numpy as np

    _ctc_check(log_probs)
    ctc = _Ctc(log_probs, targets, input_lengths, target_lengths, blank)
    T, B, C = ctc.T, ctc.B, ctc.C  # noqa: N806
    lp = ctc.lp
    alpha = P.transpose(_wide(log_alpha), (1, 0, 2))  # (T, B, S')
    tmask = P.dense(np.arange(T)[:, None, None] < np.array(ctc.il)[None, :, None], torch.bool)  # (T, B, 1)
    alpha = P.where(P.broadcast_to(tmask, alpha.shape), alpha, P.full(_NEG, alpha.shape, alpha.dtype))
    ab = alpha + _stack(ctc.betas(), 0)
    mc = P.emit1("scatter_axis", [P.full(_NEG, (T, B, C), lp.dtype), ctc.idx, ab], dimension=2, reduce="amax")
    mc = P.where(P.compare("EQ", mc, _NEG), P.zeros_like(mc), mc)
    ms = P.emit1("gather_axis", [mc, ctc.idx], dimension=2)
    total = P.emit1("scatter_axis", [P.zeros_like(mc), ctc.idx, P.emit1("exponential", [ab - ms])], dimension=2,
                    reduce="add")
    lcab = P.emit1("log", [total]) + mc
    nll = P.broadcast_to(P.reshape(_wide(neg_log_likelihood), (1, B, 1)), lp.shape)
    g = (P.emit1("exponential", [lp]) - P.emit1("exponential", [lcab + nll - lp])) * \
        P.broadcast_to(P.reshape(_wide(grad), (1, B, 1)), lp.shape)
    keep = P.broadcast_to(tmask, lp.shape)
    if zero_infinity:
        keep = P.emit1("and", [keep, P.compare("NE", nll, float("inf"))])
    g = P.where(keep, g, P.zeros_like(g))
    return P.convert(g, log_probs.dtype)


@lower(aten._ctc_loss_backward.Tensor, prepare=_lengths_to_lists)
def ctc_loss_backward_tensor(grad: Sym, log_probs: Sym, targets: Sym, input_lengths: list[int],
                             target_lengths: list[int], neg_log_likelihood: Sym, log_alpha: Sym, blank: int,
                             zero_infinity: bool = False) -> Sym:
    return ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood,
                             log_alpha, blank, zero_infinity)
