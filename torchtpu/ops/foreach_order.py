"""CPU's order of an in-place `_foreach_X_` call's checks: its slow kernel runs X_ on each tensor in turn
(ForeachOpsKernels.cpp), so an earlier tensor's in-place checks (the broadcast shape written into it, the result
type's cast into it) fail before a later tensor's dtype refusal, and a later tensor's shape is never read when an
earlier one is refused (fuzz seeds 62-64: _foreach_lgamma_ of [int32, complex64] raised complex's refusal, CPU the
int32 cast; _foreach_maximum_ raised a third pair's broadcast error, CPU the first pair's complex refusal)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchtpu.ops.out_checks import as_meta
from torchtpu.ops.tracing import aten_type_name


def _bound(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    return bound


def _lists(bound: Mapping[str, Any]) -> list[str]:
    return [k for k, v in bound.items() if isinstance(v, list | tuple)]


def cut(op: Any, args: tuple, kwargs: Mapping[str, Any], i: int, prefix: bool = False) -> tuple[tuple, dict[str, Any]]:
    """The call on the i-th entry of each list only (a one-tensor foreach call), or on entries 0..i (`prefix`)."""
    bound = _bound(op, args, kwargs)
    for name in _lists(bound):
        bound[name] = type(bound[name])(bound[name][0 if prefix else i:i + 1])
    positional = [a.name for a in op._schema.arguments if not a.kwarg_only]
    n = len(args)
    return tuple(bound[k] for k in positional[:n]), {k: v for k, v in bound.items() if k not in positional[:n]}


def _result_dtype(functional: Any, args: tuple, kwargs: Mapping[str, Any]) -> torch.dtype | None:
    try:
        result = functional(*as_meta(args), **{k: as_meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - the tensor's own refusal or check: raised where CPU meets it
        return None
    return result[0].dtype if isinstance(result, list | tuple) and result else None


def same_lengths(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> bool:
    """Whether the call's lists are of one length (check_foreach_api_restrictions' check comes before the loop)."""
    bound = _bound(op, args, kwargs)
    return len({len(bound[name]) for name in _lists(bound)}) <= 1


def check_tensors_before(op: Any, functional: Any, args: tuple, kwargs: Mapping[str, Any], j: int,
                         earlier: Callable[[Any, tuple, Mapping[str, Any]], None]) -> None:
    """Raises the first check CPU's loop fails for tensors 0..j of an in-place foreach call: before tensor j, the
    tensor's own earlier checks (`earlier`: X's argument checks and meta function, as for a whole call); then
    the broadcast of the i-th operands against self[i]'s shape and the i-th result type's cast into self[i]."""
    from torchtpu.ops.cpu_raise_checks import _cpp, cast_to, inplace_shape

    for i in range(j + 1):
        one_args, one_kwargs = cut(op, args, kwargs, i)
        if i < j:
            earlier(op, one_args, one_kwargs)
        at = _bound(op, one_args, one_kwargs)
        tensors = [v[0] for v in at.values() if isinstance(v, list | tuple) and v and isinstance(v[0], torch.Tensor)]
        tensors += [v for v in at.values() if isinstance(v, torch.Tensor)]
        if not tensors:
            continue
        self = tensors[0]
        for t in tensors[1:]:
            inplace_shape(self.shape, t.shape)
        dtype = _result_dtype(functional, one_args, one_kwargs)
        if dtype is not None and dtype != self.dtype and not (dtype.is_complex and _clamp_scalar(op)):
            if _clamp_scalar(op) and not torch.can_cast(dtype, self.dtype):  # (a complex clamp bound: clamp's
                raise RuntimeError(f"result type {aten_type_name(dtype)} can't be cast to the desired output type "
                                   f"{_cpp(self.dtype)}")  # own check first) clamp's Scalar path: C++ names
            cast_to(dtype, self.dtype)


def _clamp_scalar(op: Any) -> bool:
    name = op._schema.name
    return any(k in name for k in ("clamp", "maximum", "minimum")) and op._overloadname.startswith("Scalar")

