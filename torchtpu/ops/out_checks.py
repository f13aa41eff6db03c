"""CPU's checks on out= tensors and operands that the derived out= records and accepted out= decompositions
skipped (issue 17, fuzzer seed 2): each was a castable out= dtype written silently, or an operand CPU refuses.

- mode.values (Sorting.cpp mode_out): values of self's dtype, int64 indices.
- median.dim_values / nanmedian.dim_values (median_with_indices_impl): the dim wrapped, a non-empty reduced
  dimension, int64 indices, values of self's dtype (checkScalarType / checkSameType words).
- searchsorted.Tensor_out / Scalar_out (BucketizationUtils.h searchsorted_pre_check): an int64 out, int32 with
  out_int32 (checked before the lowering's own argument checks: where both fail, this one is raised).
- count_nonzero.out / dim_IntList_out: torchgen's generated out= kernels (`copy_arg`): the functional's result
  dtype exactly (decompositions.OUT_VIA_FUNCTIONAL writes them).
- nan_to_num.out (UnaryOps.cpp nan_to_num_out): out of self's dtype.
- slice_scatter (TensorShape.cpp): src of the slice's size.
- signbit.out, isposinf(.out), isneginf(.out) (UnaryOps.cpp metas): a real self, a bool out.
  nonzero_static.out (TensorAdvancedIndexing.cpp): an int64 out (after its size check, ops/arg_order_checks.py).
  take / take.out (TensorAdvancedIndexing.cpp take_out): an int64 index, out of self's dtype.
- max_pool3d_with_indices.out, max_unpool2d.out, max_unpool3d.out: ops/pool_checks.py (the call's checks, then the
  kernel's dispatch and typed pointers).

`check` is called by the out= kernel of every eager record (ops/registry.py) with the out= tensors by name;
`wrap` guards the decompositions (decompositions.define_all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops import pool_checks
from torchtpu.ops.out_rules import _CPP_NAMES
from torchtpu.ops.tracing import aten_type_name

aten = torch.ops.aten


def _bound(op: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = {a.name: a.default_value for a in op._schema.arguments if a.has_default_value()}
    bound.update(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    return bound


def _legacy_type(dtype: torch.dtype) -> str:
    """A CPU tensor's legacy type name, as ATen's checkScalarType prints it (torch.FloatTensor)."""
    return f"torch.{aten_type_name(dtype)}Tensor"


def check_mode_outs(b: dict[str, Any]) -> None:
    """mode.values' out dtypes (also made by ops/cpu_raise_checks2.py before the dim and the dtype refusal)."""
    self, values, indices = b["self"], b["values"], b["indices"]
    if values.dtype != self.dtype:
        raise RuntimeError(f"expected scalar type '{aten_type_name(self.dtype)}' but got "
                           f"'{aten_type_name(values.dtype)}' for values output")
    if indices.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type 'Long' but got '{aten_type_name(indices.dtype)}' for indices output")


def _median(b: dict[str, Any]) -> None:
    self, values, indices, dim = b["self"], b["values"], b["indices"], b["dim"]
    n = max(self.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    if self.ndim and self.shape[dim % n] == 0:
        raise IndexError(f"median(): Expected reduction dim {dim % n} to have non-zero size.")
    if indices.dtype != torch.int64:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                           f"{_legacy_type(indices.dtype)} instead (while checking arguments for median)")
    if values.dtype != self.dtype:
        raise RuntimeError(f"Expected tensor for 'values' to have the same type as tensor for argument "
                           f"#2 'self'; but type {_legacy_type(values.dtype)} does not equal "
                           f"{_legacy_type(self.dtype)} (while checking arguments for median)")


def _searchsorted(b: dict[str, Any]) -> None:
    out, out_int32 = b.get("out"), bool(b.get("out_int32"))
    if out is not None and out.dtype != (torch.int32 if out_int32 else torch.int64):
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                           f"Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
                           f"dtype {aten_type_name(out.dtype)} and out_int32 flag is {out_int32}")


def _nan_to_num(b: dict[str, Any]) -> None:
    out, self = b.get("out"), b["self"]
    if out is not None and out.dtype != self.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {aten_type_name(out.dtype)} should be same as input: "
                           f"{aten_type_name(self.dtype)}")


def check_slice_scatter(self: Any, src: Any, dim: int, start: Any, end: Any, step: int) -> None:
    """slice_scatter's src of the slice's size (the eager decomposition's and the graph lowering's check)."""
    meta = torch.empty(self.shape, dtype=self.dtype, device="meta")
    sliced = aten.slice.Tensor(meta, dim, start, end, step)
    if tuple(sliced.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(sliced.shape)}")


def _slice_scatter(b: dict[str, Any]) -> None:
    check_slice_scatter(b["self"], b["src"], b["dim"], b.get("start"), b.get("end"), b.get("step", 1))


def _signbit(b: dict[str, Any]) -> None:
    if b["self"].dtype.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if b["out"].dtype != torch.bool:
        raise RuntimeError("signbit does not support non-boolean outputs.")


def _isinf_sign(name: str) -> Callable[[dict[str, Any]], None]:
    """isposinf / isneginf (UnaryOps.cpp meta): a real self, then a bool out (before the out= dtype rule)."""
    def check(b: dict[str, Any]) -> None:
        if b["self"].dtype.is_complex:
            raise RuntimeError(f"{name} does not support complex inputs.")
        out = b.get("out")
        if out is not None and out.dtype != torch.bool:
            raise RuntimeError(f"{name} does not support non-boolean outputs.")

    return check


def _nonzero_static(b: dict[str, Any]) -> None:  # after its size check (ops/arg_order_checks.py)
    if b["out"].dtype != torch.int64:
        raise RuntimeError(f"nonzero_static: Expected out tensor to have scalar type Long but got scalar type"
                           f"{aten_type_name(b['out'].dtype)}")


def _take(b: dict[str, Any]) -> None:
    self, index, out = b["self"], b["index"], b.get("out")
    if index.dtype != torch.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {aten_type_name(index.dtype)}")
    if out is not None and out.dtype != self.dtype:
        raise RuntimeError(f"take(): self and out expected to have the same dtype, but got self.dtype = "
                           f"{aten_type_name(self.dtype)} and out.dtype = {aten_type_name(out.dtype)}")


_OUT_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "mode.values": check_mode_outs, "median.dim_values": _median, "nanmedian.dim_values": _median,
    "searchsorted.Tensor_out": _searchsorted, "searchsorted.Scalar_out": _searchsorted,
    "signbit.out": _signbit, "nonzero_static.out": _nonzero_static, "take.out": _take,
    "max_pool3d_with_indices.out": pool_checks.max_pool3d_out, "max_unpool2d.out": pool_checks.unpool_out(2),
    "max_unpool3d.out": pool_checks.unpool_out(3),
    "bucketize.Tensor_out": _searchsorted, "bucketize.Scalar_out": _searchsorted,
}


def _local(op: Any) -> str:
    return f"{op._schema.name.split('::')[1]}.{op._overloadname}"


def check(op: Any, args: tuple, kwargs: dict[str, Any], outs: dict[str, Any]) -> None:
    """CPU's checks of `op`'s out= tensors (`outs`, by name) where the out= record needs its own."""
    found = _OUT_CHECKS.get(_local(op))
    if found is not None:
        found(_bound(op, args, {**kwargs, **outs}))


def check_copy_out(result: torch.Tensor, out: torch.Tensor) -> None:
    """torchgen's `copy_arg` in a generated out= kernel: the result's dtype exactly."""
    if result.dtype != out.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES.get(result.dtype, str(result.dtype))}, "
                           f"but got {_CPP_NAMES.get(out.dtype, str(out.dtype))} instead")


def _functional(op: Any) -> Any | None:
    """The overload of op's packet without out= arguments that takes op's other arguments (std_mean.correction for
    std_mean.correction_out), or None."""
    inputs = [(a.name, str(a.type)) for a in op._schema.arguments if not a.is_out]
    packet = op.overloadpacket
    for name in packet.overloads():
        other = getattr(packet, name)
        if not any(a.is_out for a in other._schema.arguments) and \
                [(a.name, str(a.type)) for a in other._schema.arguments] == inputs:
            return other
    return None


def as_meta(value: Any) -> Any:
    """`value` with each tensor (also in a list or tuple) as a meta tensor of its sizes, strides and dtype."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, list | tuple):
        return type(value)(as_meta(v) for v in value)
    return value


def exact_out(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (an out= overload's upstream decomposition, whose out_wrapper casts into any castable out= tensor)
    behind CPU's exact out dtype check where ATen requires it (out_rules.requires_exact): "Expected out tensor to
    have dtype float, but got double instead". A torchgen-generated out= kernel (out_rules.yaml_autogen) runs the
    functional first and copies its result after the check, as CPU's `copy_arg` does; a structured kernel's
    set_output checks before computing: the result dtypes then come from the functional's meta kernel (a call
    that meta refuses is left to `fn`, whose refusal is the op's own)."""
    from torchtpu.ops import out_rules

    outs = [a.name for a in op._schema.arguments if a.is_out]
    functional = _functional(op)
    if functional is None or not any(out_rules.requires_exact(op, given) for given in (False, True)):
        return fn
    names = [a.name for a in functional._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = _bound(op, args, kwargs)
        dtype_given = bound.get("dtype") is not None
        targets = [bound[n] for n in outs]
        if not out_rules.requires_exact(op, dtype_given) or not all(isinstance(t, torch.Tensor) for t in targets):
            return fn(*args, **kwargs)
        call = {n: bound[n] for n in names if n in bound}
        if _local(op) in out_rules.yaml_autogen():
            result = functional(**call)
            flat = list(result) if isinstance(result, tuple | list) else [result]
            for i, (r, t) in enumerate(zip(flat, targets)):
                out_rules.check_out_dtype(op, r.dtype, t.dtype, str(op), dtype_given, i)
            for r, t in zip(flat, targets):
                out_rules.resize_out(t, r.shape)
                t.copy_(r)
            return targets[0] if len(targets) == 1 else tuple(targets)
        try:
            result = functional(**{n: as_meta(v) for n, v in call.items()})
        except Exception:  # noqa: BLE001 - the decomposition raises the op's own refusal
            result = None
        flat = list(result) if isinstance(result, tuple | list) else [] if result is None else [result]
        for i, (r, t) in enumerate(zip(flat, targets)):
            out_rules.check_out_dtype(op, r.dtype, t.dtype, str(op), dtype_given, i)
        return fn(*args, **kwargs)

    return kernel


_WRAPPED_CHECKS: dict[Any, Callable[[dict[str, Any]], None]] = {
    aten.nan_to_num: _nan_to_num, aten.slice_scatter: _slice_scatter, aten.take: _take,
    aten.isposinf: _isinf_sign("isposinf"), aten.isneginf: _isinf_sign("isneginf"),
    # compile's fake tensors (compile/fake_checks.py): the meta kernel accepts any out= dtype (fuzz seed 37)
    aten.searchsorted: _searchsorted, aten.bucketize: _searchsorted,
}
WRAPPED = frozenset(_WRAPPED_CHECKS)


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind CPU's checks for op."""
    found = _WRAPPED_CHECKS[op.overloadpacket]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        found(_bound(op, args, kwargs))
        return fn(*args, **kwargs)

    return kernel
