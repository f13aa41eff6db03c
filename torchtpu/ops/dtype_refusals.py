"""The dtype refusals of CPU's and CUDA's kernels, made on "tpu" too: an op given a dtype that neither reference
device computes it in (sort or max of complex numbers, floor of a complex, fmod of bools, softmax of integers)
raises CPU's exception class and message instead of returning a result that means nothing.

The table (`dtype_refusals.json`, op packet or `packet.overload` -> checked dtype -> [class, message]) is mined from PyTorch's OpInfo samples by
`scripts/mine_dtype_refusals.py`: only dtypes both CPU and CUDA refuse are listed, so "tpu" never refuses what
CUDA computes. The checked dtype is `self`'s, or for a binary op (`self` and `other` tensors) their promoted type,
as the kernels' dispatch macros see it. Every eager kernel of a listed op is wrapped by `guard` (the C++ launch
cache is never filled for a refused call: the first call raises before anything is traced); compiled graphs check
each node in `check` (ops/registry.py `apply`).
"""

from __future__ import annotations

import functools
import json
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import torch

_TABLE_PATH = pathlib.Path(__file__).with_name("dtype_refusals.json")
_CLASSES: dict[str, type[Exception]] = {"RuntimeError": RuntimeError, "NotImplementedError": NotImplementedError,
                                        "TypeError": TypeError, "ValueError": ValueError}


def packet_name(op: Any) -> str:
    """`aten::floor` for aten.floor.default, aten.floor_.default and aten.floor.out alike."""
    name = op._schema.name.split("::")[1]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def overload_name(op: Any) -> str:
    """`max.default`, `max.dim`: where one overload's kernel words differ from the packet's."""
    return f"{packet_name(op)}.{op._overloadname}"


def _dtype(value: Any) -> torch.dtype | None:
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, torch.dtype) else None


def checked_dtype(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> str | None:
    """The dtype `op`'s kernel dispatches on for these arguments, as a table key: "dtype=X" where a `dtype`
    argument names the computation's type (cumsum(bool, dtype=torch.bool)), else `self`'s dtype, promoted with a
    tensor `other`'s ("X"); None where the call has no tensor to check."""
    names = [a.name for a in op._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if isinstance(bound.get("dtype"), torch.dtype):
        return f"dtype={_name(bound['dtype'])}"
    first = bound.get("self", bound.get("input"))
    if first is None:
        first = next((v for v in bound.values() if _dtype(v) is not None), None)
    dtype = _dtype(first)
    if dtype is None:
        return None
    other = _dtype(bound.get("other"))
    if other is not None and dtype != other:
        dtype = torch.promote_types(dtype, other)
    return _name(dtype)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@functools.cache
def table() -> dict[str, dict[str, tuple[type[Exception], str]]]:
    """op packet name -> {checked dtype key: (CPU's exception class, CPU's message)}."""
    raw = json.loads(_TABLE_PATH.read_text())
    return {op: {key: (_CLASSES[cls], msg) for key, (cls, msg) in rules.items()} for op, rules in raw.items()}


def rules_for(op: Any) -> dict[str, tuple[type[Exception], str]] | None:
    """The refusals of `op`: its packet's, with its own overload's words where they differ."""
    rules = table().get(packet_name(op))
    if not rules:
        return None
    return {**rules, **table().get(overload_name(op), {})}


def check(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Raises CPU's refusal where `op` is listed for the dtype these arguments dispatch on."""
    rules = rules_for(op)
    if rules:
        refusal = rules.get(checked_dtype(op, args, kwargs))
        if refusal is not None:
            raise refusal[0](refusal[1])


def guard(op: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`kernel` itself where `op` has no refusals; else the kernel behind `check`."""
    rules = rules_for(op)
    if not rules:
        return kernel

    @functools.wraps(kernel)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        refusal = rules.get(checked_dtype(op, args, kwargs))
        if refusal is not None:
            raise refusal[0](refusal[1])
        return kernel(*args, **kwargs)

    return guarded
