"""PrivateUse1 kernels of custom ops that a package defines after torch (and so torchtpu) is loaded: fbgemm_gpu's
`fbgemm::` operators, TorchRec's `torchrec::` lookups.

Such an op does not exist yet when `registry.register_all()` runs, so its kernel is registered by name (the
dispatcher keeps a kernel for an op defined later). The first call makes the op's registry record
(`registry.define`, the one table every executor reads) and every call runs through `registry.apply` like an
ATen lowering; a host kernel (data-dependent output sizes) is called as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.ops import registry

# (namespace, "op" or "op.overload") -> (function, how: "lowering" or "kernel", static argument names)
_OPS: dict[tuple[str, str], tuple[Callable[..., Any], str, tuple[str, ...]]] = {}
_records: dict[tuple[str, str], registry.Lowering] = {}
_libs: dict[str, torch.library.Library] = {}


def late_op(namespace: str, name: str, *, how: str = "lowering", static: Sequence[str] = ()
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declares `fn` as the lowering (or, with how="kernel", the host kernel) of `namespace::name`."""
    if how not in ("lowering", "kernel"):
        raise ValueError(f"{namespace}::{name}: how={how!r} is not 'lowering' or 'kernel'")

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        if (namespace, name) in _OPS:
            raise ValueError(f"{namespace}::{name} is declared twice: {_OPS[namespace, name][0]} and {fn}")
        _OPS[namespace, name] = (fn, how, tuple(static))
        return fn

    return add


def record(namespace: str, name: str) -> registry.Lowering:
    """The registry record of `namespace::name`, made on first use (its package loaded)."""
    found = _records.get((namespace, name))
    if found is not None:
        return found
    fn, how, static = _OPS[namespace, name]
    packet, _, overload = name.partition(".")
    op = getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")
    found = registry.TABLE.get(op)
    if found is None or found.fn is None:
        site = f"{fn.__module__}:{fn.__code__.co_firstlineno}"
        found = registry.define(op, how, fn, fn if how == "lowering" else None, site=site, static=static,
                                data_dependent=how == "kernel", fast=(None, str(op)))
    _records[namespace, name] = found
    return found


def _dispatcher_kernel(namespace: str, name: str) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        rec = record(namespace, name)
        if rec.how == "kernel":
            return rec.fn(*args, **kwargs)
        return registry.apply(rec, args, kwargs)

    return kernel


def register(namespace: str) -> None:
    """Registers the PrivateUse1 kernels of `namespace`'s declared ops by name (once)."""
    if namespace in _libs:
        return
    lib = torch.library.Library(namespace, "IMPL")
    for ns, name in _OPS:
        if ns == namespace:
            lib.impl(name, _dispatcher_kernel(ns, name), "PrivateUse1")
    _libs[namespace] = lib


def lowered() -> list[str]:
    """Every declared op's qualified name."""
    return [f"{ns}::{name}" for ns, name in _OPS]
