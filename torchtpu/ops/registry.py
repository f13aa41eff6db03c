"""The lowering table and the one loop that registers it with the dispatcher.

Each ATen op is lowered in exactly one place: `@lower(aten.foo.overload)` on a function whose body uses only
`torchtpu.ops.prims`. `register_all()` reads each op's schema and registers a functional, in-place or out=
kernel on PrivateUse1; the in-place and out= siblings of a functional lowering come for free. Lookup order:
lowering table -> accepted upstream decompositions (listed in `decompositions.py`, never copied) -> CPU
fallback, counted per op and an error when `TORCHTPU_CPU_FALLBACK=0`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

from torchtpu.execution import eager, fast_launch
from torchtpu.ops.tracing import aten_type_name

OP_TABLE: dict[OpOverload, Callable[..., Any]] = {}
_libs: list[torch.library.Library] = []
REGISTERED: dict[str, str] = {}  # qualified overload name -> "lowering" | "inplace" | "out" | "decomposition"
RANDOM_OPS: set[OpOverload] = set()
PREPARE: dict[OpOverload, Callable[[tuple, dict[str, Any]], tuple[tuple, dict[str, Any]]]] = {}


def lower(*ops: OpOverload, random: bool = False,
          prepare: Callable[[tuple, dict[str, Any]], tuple[tuple, dict[str, Any]]] | None = None,
          float_inputs: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers `fn` as the lowering of `ops`. `random`: the lowering takes the RNG state as `rng=`;
    `prepare`: runs on the real arguments first (e.g. boolean masks -> indices, which need data);
    `float_inputs`: a new value of a float argument reuses the trace (execution/float_inputs.py)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if float_inputs:
            eager.FLOAT_INPUTS.add(fn)
        for op in ops:
            if random:
                RANDOM_OPS.add(op)
            if prepare is not None:
                PREPARE[op] = prepare
            if not isinstance(op, OpOverload):
                raise TypeError(f"@lower takes OpOverloads (aten.foo.default), got {op!r}")
            if op in OP_TABLE:
                raise ValueError(f"{op} is lowered twice: {OP_TABLE[op].__module__}.{OP_TABLE[op].__name__} and "
                                 f"{fn.__module__}.{fn.__name__}")
            OP_TABLE[op] = fn
        return fn

    return register


def _is_inplace(op: OpOverload) -> bool:
    schema = op._schema
    return bool(schema.arguments) and schema.arguments[0].is_write and not schema.arguments[0].kwarg_only


def _out_args(op: OpOverload) -> list[str]:
    return [a.name for a in op._schema.arguments if a.kwarg_only and a.is_write]


def _device_of(args: tuple, kwargs: dict[str, Any]) -> int:
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor) and x.device.type == "tpu":
            return x.device.index or 0
        if isinstance(x, list | tuple):
            for y in x:
                if isinstance(y, torch.Tensor) and y.device.type == "tpu":
                    return y.device.index or 0
    device = kwargs.get("device")
    if device is not None and torch.device(device).index is not None:
        return torch.device(device).index
    return torch.tpu.current_device()


def _draws(args: tuple, kwargs: dict[str, Any]) -> int:
    count = 1
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor):
            count = max(count, x.numel())
    return count


def _with_extras(op: OpOverload, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any], int]:
    prepare = PREPARE.get(op)
    if prepare is not None:
        args, kwargs = prepare(args, kwargs)
    device = _device_of(args, kwargs)
    if op in RANDOM_OPS:
        from torchtpu import random as tpu_random

        kwargs = {**kwargs, "rng": tpu_random.next_state(device, _draws(args, kwargs))}
    return args, kwargs, device


def _functional_kernel(op: OpOverload, fn: Callable[..., Any]) -> Callable[..., Any]:
    name = str(op)
    if op not in RANDOM_OPS and op not in PREPARE:
        def plain_kernel(*args: Any, **kwargs: Any) -> Any:  # the common case: eager.run finds the device
            device = kwargs.get("device")
            index = torch.device(device).index if device is not None else None
            return eager.run(name, fn, args, kwargs, device=index)

        plain_kernel.lowering = fn
        return plain_kernel

    if op not in RANDOM_OPS:
        prepare = PREPARE[op]

        def prepared_kernel(*args: Any, **kwargs: Any) -> Any:
            new_args, new_kwargs = prepare(args, kwargs)
            return eager.run(name, fn, new_args, new_kwargs, device=_device_of(new_args, new_kwargs),
                             fast_kind=_unprepared(args, kwargs, new_args, new_kwargs))

        prepared_kernel.lowering = fn
        return prepared_kernel

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args, kwargs, device = _with_extras(op, args, kwargs)
        return eager.run(name, fn, args, kwargs, device=device)

    return kernel


def _unprepared(args: tuple, kwargs: dict[str, Any], new_args: tuple, new_kwargs: dict[str, Any]) -> int | None:
    """A prepared call's fast_kind: the C++ launch cache may serve it again only when `prepare` left the
    arguments as they were (e.g. no boolean mask turned into indices, which depend on data)."""
    return fast_launch.INFER if new_args is args and new_kwargs is kwargs else None


def _check_cast(result: torch.dtype, target: torch.dtype, name: str) -> None:
    if not torch.can_cast(result, target):
        raise RuntimeError(f"{name}: result type {aten_type_name(result)} can't be cast to the desired output "
                           f"type {aten_type_name(target)}")


def _inplace_kernel(op: OpOverload, fn: Callable[..., Any]) -> Callable[..., Any]:
    name = str(op)
    if str(op._schema.arguments[0].type).startswith("List"):  # _foreach_*_: every tensor of `self`, returns ()
        def list_kernel(self: list[torch.Tensor], *args: Any, **kwargs: Any) -> None:
            args, kwargs, _ = _with_extras(op, (self, *args), kwargs)
            eager.run(name, fn, args, kwargs, write_into=self)

        list_kernel.lowering = fn
        return list_kernel

    if op not in RANDOM_OPS and op not in PREPARE:
        def plain_kernel(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            eager.run(name, fn, (self, *args), kwargs, write_into=(self,))
            return self

        plain_kernel.lowering = fn
        return plain_kernel

    if op not in RANDOM_OPS:
        prepare = PREPARE[op]

        def prepared_kernel(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            args = (self, *args)
            new_args, new_kwargs = prepare(args, kwargs)
            eager.run(name, fn, new_args, new_kwargs, write_into=(self,),
                      fast_kind=_unprepared(args, kwargs, new_args, new_kwargs))
            return self

        prepared_kernel.lowering = fn
        return prepared_kernel

    def kernel(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        args, kwargs, _ = _with_extras(op, (self, *args), kwargs)
        eager.run(name, fn, args, kwargs, write_into=(self,))
        return self

    return kernel


def _out_kernel(op: OpOverload, fn: Callable[..., Any], out_names: list[str]) -> Callable[..., Any]:
    name = str(op)
    returns = bool(op._schema.returns)  # the _foreach_*.out overloads return ()
    plain = op not in RANDOM_OPS and op not in PREPARE

    def out_kernel(*args: Any, **kwargs: Any) -> Any:
        outs = [kwargs.pop(n) for n in out_names]
        args, kwargs, device = _with_extras(op, args, kwargs)
        targets = [t for o in outs for t in (o if isinstance(o, list) else (o,))]
        types = eager.result_types(name, fn, args, kwargs)
        if types is None or len(types) != len(targets):  # results computed first, then copied out
            result = eager.run(name, fn, args, kwargs, device=device)
            flat = list(result) if isinstance(result, tuple | list) else [result]
            for out, r in zip(targets, flat):
                _check_cast(r.dtype, out.dtype, name)
                if tuple(out.shape) != tuple(r.shape):
                    out.resize_(r.shape)
                out.copy_(r)
        else:  # written in place: one launch, served by the C++ cache again when no out= tensor was resized
            for out, (_, dtype) in zip(targets, types):
                _check_cast(dtype, out.dtype, name)
            resized = False
            for out, (shape, _) in zip(targets, types):
                if tuple(out.shape) != shape:
                    out.resize_(shape)
                    resized = True
            eager.run(name, fn, args, kwargs, write_into=targets, device=device,
                      fast_kind=fast_launch.OUT if plain and not resized else None)
        if not returns:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    out_kernel.lowering = fn
    return out_kernel


def _fast_kind(op: OpOverload, kernel: Callable[..., Any]) -> int | None:
    """How the C++ launch cache serves `op`'s kernel (fast_launch kinds), or None: only the lowering kernels
    without random state (a prepared one stores only the calls its `prepare` leaves as they are)."""
    if op in RANDOM_OPS:
        return None
    if kernel.__name__ == "out_kernel" and op not in PREPARE:
        return fast_launch.OUT
    if _out_args(op):
        return None
    if kernel.__name__ == "list_kernel" and op not in PREPARE:
        return fast_launch.INPLACE_LIST
    if kernel.__name__ not in ("plain_kernel", "prepared_kernel"):
        return None
    if _is_inplace(op):
        return fast_launch.INPLACE
    returns = op._schema.returns
    if len(returns) == 1 and str(returns[0].type) == "List[Tensor]":
        return fast_launch.FUNCTIONAL_LIST
    return fast_launch.FUNCTIONAL


def _sibling(op: OpOverload, inplace: bool) -> OpOverload | None:
    packet_name = op._schema.name.split("::")[1]
    overload = op._overloadname
    ns = torch.ops.aten
    if inplace:
        packet = getattr(ns, packet_name + "_", None)
        return getattr(packet, overload, None) if packet is not None else None
    packet = getattr(ns, packet_name)
    for candidate in ((f"{overload}_out", "out") if overload == "default" else (f"{overload}_out",)):
        if candidate in packet.overloads():
            return getattr(packet, candidate)
    # otherwise the out= overload whose other arguments are the functional's (sum.dim_IntList -> sum.IntList_out)
    inputs = [(a.name, str(a.type)) for a in op._schema.arguments]
    for candidate in packet.overloads():
        other = getattr(packet, candidate)
        if _out_args(other) and [(a.name, str(a.type)) for a in other._schema.arguments
                                 if not (a.kwarg_only and a.is_write)] == inputs:
            return other
    return None


def register_all() -> None:
    """Registers every lowering (and its in-place / out= siblings) on PrivateUse1. Runs once."""
    if _libs:
        return
    from torchtpu.ops import load_families

    load_families()
    lib = torch.library.Library("aten", "IMPL")
    _libs.append(lib)

    def impl(op: OpOverload, kernel: Callable[..., Any], how: str) -> None:
        qualified = f"{op._schema.name}.{op._overloadname}"
        if qualified in REGISTERED:
            return
        fast = getattr(kernel, "fast_launch", None)  # (kind, the op name its eager.run calls use)
        kind, fast_name = fast if fast is not None else (_fast_kind(op, kernel), str(op))
        if kind is not None and how != "decomposition":
            name = op._schema.name.split("::")[1]
            local = name if op._overloadname == "default" else f"{name}.{op._overloadname}"
            float_inputs = getattr(kernel, "lowering", None) in eager.FLOAT_INPUTS
            if fast_launch.register_kernel(local, fast_name, kernel, kind, float_inputs):  # the C++ launch cache
                REGISTERED[qualified] = how
                return
        lib.impl(op, kernel, "PrivateUse1")
        REGISTERED[qualified] = how

    composite = [str(op) for op in OP_TABLE
                 if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")]
    if composite:  # a PrivateUse1 kernel would hide the composite's autograd (gradients silently None)
        raise ValueError(f"CompositeImplicitAutograd ops must not be lowered (they decompose): {composite}")
    for op, fn in OP_TABLE.items():
        if _is_inplace(op):
            impl(op, _inplace_kernel(op, fn), "lowering")
            continue
        out_names = _out_args(op)
        if out_names:
            impl(op, _out_kernel(op, fn, out_names), "lowering")
            continue
        impl(op, _functional_kernel(op, fn), "lowering")
    for op, fn in OP_TABLE.items():
        if _is_inplace(op) or _out_args(op):
            continue
        inplace = _sibling(op, inplace=True)
        if inplace is not None and inplace not in OP_TABLE and _is_inplace(inplace):
            impl(inplace, _inplace_kernel(inplace, fn), "inplace")
        out = _sibling(op, inplace=False)
        if out is not None and out not in OP_TABLE and _out_args(out):
            impl(out, _out_kernel(out, fn, _out_args(out)), "out")

    import importlib

    from torchtpu.ops import FAMILIES, copy, decompositions, fallback, optim

    copy.register(impl)
    optim.register(impl)
    for family in FAMILIES:  # kernels that are not pure lowerings (data-dependent shapes, in-place statistics)
        module = importlib.import_module(f"torchtpu.ops.{family}")
        if hasattr(module, "register"):
            module.register(impl)
    decompositions.register(impl)
    fallback.register()
