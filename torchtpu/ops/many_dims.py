"""Tensors of more dimensions than the driver's programs hold (the simulator's: numpy's 64, `Driver.max_rank`).

torch holds tensors of any rank, and what does not need an N-d view computes on one of fewer dimensions: runs of
dims that are contiguous in memory (or of size 1) are collapsed into one, in order, so element i in row-major order
of the collapsed view is element i of the tensor (never a different element): fills, the random fills, a copy
between tensors whose layouts collapse alike (ops/copy.py), reductions over every element, pointwise ops of
contiguous same-shaped tensors (and scalars). Anything else is first
given to ATen's own meta kernel, so that ATen's checks raise first in CPU's class and words (a reduction over a dim
of a tensor of more than 64 dims: "only tensors with up to 64 dims are supported"), then refused naming the limit
(drivers/sim/rank_limit.py's words)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.sim.rank_limit import check_rank
from torchtpu.ops.out_checks import as_meta

# In-place ops that write every element of self from self's own element (or none) and scalar arguments only:
# their result does not depend on the shape, only on the row-major order of the elements.
_SELF_ONLY_INPLACE = frozenset({
    "aten::fill_.Scalar", "aten::fill_.Tensor", "aten::zero_", "aten::uniform_", "aten::normal_",
    "aten::random_", "aten::random_.from", "aten::random_.to", "aten::bernoulli_.float", "aten::exponential_",
    "aten::geometric_", "aten::log_normal_", "aten::cauchy_",
})
# Reductions over every element that CPU computes for a tensor of more than 64 dims, by overload and how the call
# names no dim ("absent": no dim argument, "none": dim=None, "empty": dim=[]), measured on CPU: it raises
# _DIM_REDUCTIONS' words for the other forms (sum(dim=None), mean(dim=None), all(), any(), logsumexp, ...). CPU's
# linalg_vector_norm(dim=None) raises them for a 1-element tensor only; it is computed here for that one too.
_ALL = ("none", "empty")
_WHOLE = {
    "aten::sum": ("absent",), "aten::sum.dim_IntList": ("empty",), "aten::nansum": _ALL,
    "aten::mean": ("absent",), "aten::mean.dim": ("empty",), "aten::prod": ("absent",),
    "aten::max": ("absent",), "aten::min": ("absent",), "aten::amax": ("empty",), "aten::amin": ("empty",),
    "aten::argmax": ("none",), "aten::argmin": ("none",), "aten::aminmax": ("none",),
    "aten::count_nonzero": ("none",), "aten::count_nonzero.dim_IntList": ("empty",),
    "aten::var.correction": _ALL, "aten::std.correction": _ALL, "aten::var_mean.correction": _ALL,
    "aten::std_mean.correction": _ALL, "aten::linalg_vector_norm": ("none",),
}
# Reductions: ATen's dim bitset (dim_list_to_bitset) holds 64 dims; CPU raises these words for a tensor of more
# in the forms _WHOLE does not list, before anything else (the meta kernels word it otherwise).
_DIM_REDUCTIONS = frozenset({
    "aten::sum", "aten::mean", "aten::nansum", "aten::prod", "aten::amax", "aten::amin", "aten::argmax",
    "aten::argmin", "aten::var", "aten::std", "aten::var_mean", "aten::std_mean", "aten::logsumexp",
    "aten::linalg_vector_norm", "aten::norm", "aten::all", "aten::any", "aten::count_nonzero", "aten::aminmax",
    "aten::max", "aten::min",
})
_ATEN_DIMS = 64


def _name(op: torch._ops.OpOverload) -> str:
    overload = op._overloadname
    return op._schema.name if overload == "default" else f"{op._schema.name}.{overload}"


def limit() -> int | None:
    """The driver's rank limit, None where it has none."""
    return runtime.driver().max_rank


def past_limit(args: tuple, kwargs: dict[str, Any], targets: Sequence[torch.Tensor] | None = None) -> bool:
    """Whether a tensor among the arguments (one level of lists) or `targets` has more dims than the driver
    holds."""
    most = limit()
    if most is None:
        return False
    for x in (*args, *kwargs.values(), *(targets or ())):
        if isinstance(x, torch.Tensor):
            if x.dim() > most:
                return True
        elif isinstance(x, list | tuple):
            if any(isinstance(y, torch.Tensor) and y.dim() > most for y in x):
                return True
            if len(x) > most and all(type(y) is int for y in x):  # a factory's size, maybe
                return True
    return False


def collapse(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """The fewest dims holding `shape`'s elements in the same row-major order for every tensor of `strides` (one
    stride list per tensor of that shape): size-1 dims dropped, a dim merged into the one before it where every
    tensor steps over the inner one exactly once per step of the outer one. An empty shape collapses to (0,)."""
    if any(s == 0 for s in shape):
        return [0], [[1] for _ in strides]
    sizes: list[int] = []
    steps: list[list[int]] = [[] for _ in strides]
    for i, size in enumerate(shape):
        if size == 1:
            continue
        if sizes and all(st[-1] == s[i] * size for st, s in zip(steps, strides)):
            sizes[-1] *= size
            for st, s in zip(steps, strides):
                st[-1] = s[i]
            continue
        sizes.append(size)
        for st, s in zip(steps, strides):
            st.append(s[i])
    return sizes, steps


def collapsed_views(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor] | None:
    """Views of same-shaped `tensors` with their dims collapsed alike (`collapse`), None if more dims than the
    driver holds remain."""
    sizes, steps = collapse(tensors[0].shape, [t.stride() for t in tensors])
    if len(sizes) > (limit() or len(sizes)):
        return None
    return [t.as_strided(sizes, st, t.storage_offset()) for t, st in zip(tensors, steps)]


def run(op: torch._ops.OpOverload, args: tuple, kwargs: dict[str, Any], *, write_into: Any = None,
        out: list[torch.Tensor] | None = None, decomposed: bool = False) -> Any:
    """`op` on arguments with a tensor past the driver's rank limit (`past_limit`): computed on collapsed views
    where the op allows it, else ATen's meta checks, else the refusal naming the limit. NotImplemented: none of
    these applies (an int list past the limit that is no size; a `decomposed` op's own ops decide)."""
    names = [a.name for a in op._schema.arguments]
    bound = {**dict(zip(names, args)), **kwargs}
    size = bound.get("size")
    if out is None and "stride" not in names and isinstance(size, list | tuple) and len(size) > (limit() or len(size)):
        return _factory(op, bound, [int(n) for n in size])  # (a strided factory's layout is its own: not here)
    if not _tensors(args, kwargs, out) or max(t.dim() for t in _tensors(args, kwargs, out)) <= (limit() or 0):
        return NotImplemented  # an int list past the limit that is no factory's size: computed as any call
    name = _name(op)
    self = args[0] if args and isinstance(args[0], torch.Tensor) else None
    others = [x for x in (*args[1:], *kwargs.values()) if isinstance(x, torch.Tensor) or
              isinstance(x, list | tuple) and any(isinstance(y, torch.Tensor) for y in x)]
    scalars_only = all(isinstance(x, torch.Tensor) and x.dim() == 0 for x in others)
    dim = bound["dim"] if "dim" in bound else next((a.default_value for a in op._schema.arguments
                                                    if a.name == "dim" and a.has_default_value()), None)
    form = "absent" if "dim" not in names else "none" if dim is None else "empty" if dim in ([], ()) else "named"
    keepdim = bool(bound.get("keepdim", False))
    if self is not None and out is None and scalars_only:
        if write_into is not None and name in _SELF_ONLY_INPLACE:
            views = collapsed_views([self])
            if views is not None:
                op(views[0], *args[1:], **kwargs)
                return write_into
        elif write_into is None and form in _WHOLE.get(name, ()) and not keepdim:
            views = collapsed_views([self])
            if views is not None:
                return op(views[0], *args[1:], **kwargs)
    if op._schema.name in _DIM_REDUCTIONS and self is not None and self.dim() > _ATEN_DIMS and \
            (form == "named" or not keepdim):
        raise RuntimeError(f"only tensors with up to {_ATEN_DIMS} dims are supported")  # ATen's dim bitset
    if out is None and torch.Tag.pointwise in op.tags and len(op._schema.returns) == 1 and \
            (done := _pointwise(op, args, kwargs, write_into)) is not NotImplemented:
        return done
    if decomposed:
        return NotImplemented  # its decomposition's ops compute it or refuse, each as itself
    if out is not None:
        kwargs = {**kwargs, **dict(zip((a.name for a in op._schema.arguments if a.is_out), out))}
    op(*as_meta(args), **as_meta(kwargs))  # ATen's checks first (CPU's class and words)
    check_rank(max(t.dim() for t in _tensors(args, kwargs, out)), name)
    raise AssertionError(f"{name}: past the rank limit, not refused")  # check_rank raised


def _factory(op: torch._ops.OpOverload, bound: dict[str, Any], size: list[int]) -> torch.Tensor:
    """A factory's result of more dims than the driver holds: made as one dim of as many elements (the same values
    in row-major order: fills and the random draws, by element index), then that storage as a fresh tensor (not a
    view) of `size`, contiguous as the factory's own result."""
    if any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {size}")
    numel = 1
    for n in size:
        numel *= n
    flat = op(**{**bound, "size": [numel]})
    return torch.empty(0, dtype=flat.dtype, device=flat.device).set_(flat.untyped_storage(), 0, size,
                                                                     _contiguous_strides(size))


def _contiguous_strides(size: Sequence[int]) -> list[int]:
    strides, step = [0] * len(size), 1
    for i in range(len(size) - 1, -1, -1):
        strides[i] = step
        step *= max(size[i], 1)
    return strides


def _pointwise(op: torch._ops.OpOverload, args: tuple, kwargs: dict[str, Any], write_into: Any) -> Any:
    """A pointwise op whose tensors of more than 0 dims all have one shape and are contiguous: computed on their
    flat views (element i with element i: no broadcast, no layout to follow), its result contiguous as
    TensorIterator lays out a result of contiguous operands. NotImplemented for anything else."""
    tensors = [t for t in _tensors(args, kwargs, None) if t.dim() > 0]
    if not tensors or any(t.shape != tensors[0].shape or not t.is_contiguous() for t in tensors):
        return NotImplemented
    if any(isinstance(x, list | tuple) and any(isinstance(y, torch.Tensor) for y in x)
           for x in (*args, *kwargs.values())):
        return NotImplemented

    def flat(x: Any) -> Any:
        return x.view(-1) if isinstance(x, torch.Tensor) and x.dim() > 0 else x

    result = op(*(flat(a) for a in args), **{k: flat(v) for k, v in kwargs.items()})
    if write_into is not None:
        return write_into
    size = list(tensors[0].shape)
    return torch.empty(0, dtype=result.dtype, device=result.device).set_(
        result.untyped_storage(), result.storage_offset(), size, _contiguous_strides(size))


def _tensors(args: tuple, kwargs: dict[str, Any], out: list[torch.Tensor] | None) -> list[torch.Tensor]:
    found = []
    for x in (*args, *kwargs.values(), *(out or ())):
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, list | tuple):
            found.extend(y for y in x if isinstance(y, torch.Tensor))
    return found
