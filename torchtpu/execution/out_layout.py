"""The strides of an eager op's fresh outputs: ATen's, as CPU and CUDA allocate them (issue 17).

ATen lays a fresh output out from its inputs' strides: TensorIterator gives it the permutation of its inputs'
strides (a channels_last or permuted input gives a channels_last or permuted result), cat, convolution, batch
norm and pooling follow their input's suggested memory format. Rather than restating those rules, the op itself
is run on meta tensors with the inputs' sizes, strides and dtypes: ATen's meta functions (TensorIterator's
stride propagation included) decide. That costs tens of microseconds, so it runs once per traced signature
(eager.py keys a tensor by its strides exactly when they are not the default contiguous ones) and only when some
input has such strides: with every input default-contiguous, the outputs are contiguous (TensorIterator's fast
setup) and nothing is asked. A meta call that fails, or whose results do not match the trace's shapes and
dtypes, leaves the outputs contiguous, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

_TENSOR = torch.Tensor
MetaFn = Callable[[tuple, dict[str, Any]], Any]


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides `torch.empty(shape)` has (c10's rule: a size-0 dimension counts as 1)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def default_strided(t: torch.Tensor) -> bool:
    """Whether `t` has exactly the strides `torch.empty(t.shape)` would give it (csrc/fast_launch_key.cpp's
    default_strides): the layout eager keys a tensor by when it is not."""
    if not t.is_contiguous():
        return False
    shape = t.shape
    return (1 not in shape and 0 not in shape) or t.stride() == contiguous_strides(shape)


def to_meta(x: Any) -> Any:
    """`x` with every tensor as a meta tensor of its sizes, strides and dtype (a CPU 0-dim tensor, a scalar operand,
    as it is); lists and tuples item by item; a device as the meta device."""
    if isinstance(x, _TENSOR):
        if x.is_cpu and not x.dim():
            return x
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    if isinstance(x, list | tuple):
        return type(x)(to_meta(v) for v in x)
    if isinstance(x, torch.device):
        return torch.device("meta")
    return x


def _flat(result: Any, out: list[Any]) -> None:
    if isinstance(result, list | tuple):  # (an Ellipsis item: an output a meta leaves contiguous)
        for r in result:
            _flat(r, out)
    elif result is not None:
        out.append(result)


def op_meta(op: torch._ops.OpOverload) -> MetaFn:
    """The meta call of an ATen overload: its own schema's keyword arguments only (a lowering may get more: the
    RNG state, a prepare step's statics)."""
    names = frozenset(a.name for a in op._schema.arguments)

    def call(args: tuple, kwargs: dict[str, Any]) -> Any:
        return op(*args, **{k: v for k, v in kwargs.items() if k in names})

    return call


# Ops whose ATen kernels lay fresh outputs out other than contiguously even from contiguous inputs (LAPACK's
# column-major matrices: cholesky, qr, svd, eigh, geqrf, ...): their meta is asked for every traced signature, not
# only when an input has non-default strides. The value: a meta for an op that has none (None: the op's own).
ALWAYS: dict[torch._ops.OpOverload, MetaFn | None] = {}


def always_ask(op: torch._ops.OpOverload, meta: MetaFn | None = None) -> None:
    """Marks `op`'s fresh outputs as laid out by its meta (or `meta`) whatever its inputs' strides."""
    ALWAYS[op] = meta


def marked(op: torch._ops.OpOverload, meta: MetaFn) -> MetaFn:
    """`meta` (or ALWAYS's own meta for `op`), marked for asks_always when `op` is in ALWAYS."""
    if op not in ALWAYS:
        return meta
    inner = ALWAYS[op] or meta

    def call(args: tuple, kwargs: dict[str, Any]) -> Any:
        return inner(args, kwargs)

    call.always = True  # type: ignore[attr-defined]
    return call


def asks_always(meta: MetaFn | None) -> bool:
    """Whether `meta` lays fresh outputs out even from default-contiguous inputs (marked)."""
    return getattr(meta, "always", False)


def column_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """A batch of column-major (Fortran-contiguous) matrices: ATen's batched_matrix_contiguous_strides(f_contig)."""
    strides = list(contiguous_strides(shape))
    if len(shape) >= 2:
        strides[-2], strides[-1] = 1, max(shape[-2], 1)
    return tuple(strides)


def suggested_like(input: torch.Tensor, n: int) -> MetaFn:  # noqa: A002
    """The meta of a kernel whose eager.run computes `n` results of which the first is laid out as `input`'s
    suggested memory format (CPU's batch norm: `empty_like(input, input.suggest_memory_format())`) and the others
    are contiguous (statistics)."""

    def call(_args: tuple, _kwargs: dict[str, Any]) -> Any:
        fmt = torch._prims_common.suggest_memory_format(input)
        return (torch.empty_like(to_meta(input), memory_format=fmt), *(...,) * (n - 1))

    return call


def output_strides(meta: MetaFn, args: Sequence[Any], kwargs: dict[str, Any],
                   out_types: Sequence[tuple[tuple[int, ...], torch.dtype]]) -> tuple | None:
    """Each fresh output's strides as ATen would allocate it (None for one left contiguous), or None when all are
    contiguous or the meta call cannot say."""
    try:
        result = meta(tuple(to_meta(a) for a in args), {k: to_meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - no meta kernel, or one refusing what the lowering took: contiguous
        return None
    flat: list[Any] = []
    _flat(result, flat)
    if len(flat) != len(out_types):
        return None
    strides: list[tuple[int, ...] | None] = []
    for m, (shape, dtype) in zip(flat, out_types):
        if m is Ellipsis:
            strides.append(None)
            continue
        if not isinstance(m, _TENSOR) or tuple(m.shape) != tuple(shape) or m.dtype != dtype:
            return None
        s = tuple(m.stride())
        if not dense(shape, s):  # an overlapping or gappy layout is no allocation: contiguous
            return None
        strides.append(None if s == contiguous_strides(shape) else s)
    return tuple(strides) if any(s is not None for s in strides) else None


def dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Non-overlapping and dense: a permutation of some contiguous layout (what an allocation may have)."""
    if 0 in shape:
        return True
    dims = sorted((s, n) for s, n in zip(strides, shape) if n != 1)
    step = 1
    for s, n in dims:
        if s != step:
            return False
        step *= n
    return True


def allocate(out_types: Sequence[tuple[tuple[int, ...], torch.dtype]], strides: tuple | None,
             device: torch.device) -> list[torch.Tensor]:
    """Fresh outputs: contiguous, or with `strides` where given."""
    if strides is None:
        return [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in out_types]
    return [torch.empty(shape, dtype=dtype, device=device) if s is None else
            torch.empty_strided(shape, s, dtype=dtype, device=device) for (shape, dtype), s in zip(out_types, strides)]


def restride(targets: Sequence[torch.Tensor], meta: MetaFn, args: Sequence[Any], kwargs: dict[str, Any],
             out_types: Sequence[tuple[tuple[int, ...], torch.dtype]]) -> None:
    """Resized out= tensors laid out as ATen lays them (TensorIterator's `as_strided_` of a resized output), when
    an input has non-default strides (or the op is in ALWAYS)."""
    if not asks_always(meta) and all(default_strided(t) for t in _tensors(args, kwargs)):
        return
    strides = output_strides(meta, args, kwargs, out_types)
    for t, s in zip(targets, strides or ()):
        if s is not None:
            t.as_strided_(t.shape, s)


def _tensors(args: Sequence[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []

    def walk(x: Any) -> None:
        if isinstance(x, _TENSOR):
            if not (x.is_cpu and not x.dim()):
                found.append(x)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    for v in (*args, *kwargs.values()):
        walk(v)
    return found
