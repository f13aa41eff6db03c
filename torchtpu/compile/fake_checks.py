"""CPU's argument checks for "tpu" fake tensors, made while Dynamo and AOTAutograd trace a torch.compile'd function.

Eager mode puts CPU's checks in front of the upstream decompositions torchtpu runs (ops/checked_decompositions.py:
each module of `EAGER` / `COMPILE` guards the op packets in its `WRAPPED`). Under torch.compile(backend="tpu")
Dynamo first runs the function on fake tensors, whose results come from PyTorch's meta kernels or from upstream's
Python decompositions: those skip many of CPU's dtype and argument checks, so a call CPU refuses either traced
and computed or failed later in another exception class (the fuzzer's compile-mode error_class findings).

This module owns making those checks during fake tracing. For every op overload whose packet a checking module
guards (COMPILE's, and eager-only norm_checks: native_group_norm's checks are CPU's and hold for a compiled call
too; decomposition_values is left out: it corrects values and checks nothing), when a tensor argument is a fake
tensor on device "tpu" it runs `guarded(op, stand_in, modules)` on the call's arguments, `stand_in` raising
`_ChecksPassed`: CPU's error propagates (Dynamo wraps it in its TorchRuntimeError, the cause is CPU's class and
words), and a call that passes goes on to the meta kernel or decomposition as before. Fake tensor mode reaches
an op one of two ways, so the checks are registered twice:

- `torch._subclasses.fake_impls.op_implementations_checks` (as compile/fake_rules.py registers its rules): the ops
  with a meta kernel, consulted just before it;
- `torch._decomp.decomposition_table`: an op without a meta kernel but with one of upstream's Python
  decompositions runs that decomposition (FakeTensorMode._dispatch_impl) before any op implementation check, so
  the table's entry is wrapped (functools.wraps keeps the name and module fake mode selects it by).

A call is left unchecked (the meta kernel decides, as before) when an argument has symbolic sizes (the checks use
concrete size logic) or when a check would read a fake tensor's values (DataDependentOutputException and the
like). Arguments the op writes (out=, in-place self) are replaced by fresh fake tensors of the same metadata, so a
check module that resizes or fills them (loss_checks' out= paths) leaves the traced tensors untouched, and the
checks run with make_fx's proxy mode disabled, so what a check module computes (loss_checks computes some values
itself instead of calling the stand-in) never enters AOTAutograd's graph.
CompositeImplicitAutograd overloads (std / var .default .dim .out) decompose before fake mode sees them: their
checks run where the ops they decompose into have checks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, NoReturn

import torch
from torch.utils import _pytree as pytree

from torchtpu.ops import checked_decompositions, decomposition_values, dtype_refusals, norm_checks, out_checks


class _ChecksPassed(Exception):  # noqa: N818 - a signal, not an error
    """Raised by the stand-in decomposition: every check in front of it passed."""


def _stand_in(*args: Any, **kwargs: Any) -> NoReturn:
    raise _ChecksPassed


def _checking_modules() -> tuple[ModuleType, ...]:
    """COMPILE's modules that check, in COMPILE's order (the last runs first), with norm_checks before
    arg_order_checks as in eager (the registry's arg_order guard is the outermost there)."""
    modules = [m for m in checked_decompositions.COMPILE if m is not decomposition_values]
    if norm_checks not in modules:
        modules.insert(max(len(modules) - 1, 0), norm_checks)
    return tuple(modules)


_MODULES = _checking_modules()


@functools.cache
def modules_for(op: Any) -> tuple[ModuleType, ...]:
    """The checking modules guarding `op`'s packet (empty: op has no checks here)."""
    packet = getattr(op, "overloadpacket", None)
    if packet is None:
        return ()
    return tuple(m for m in _MODULES if packet in m.WRAPPED)


def _skipped_errors() -> tuple[type[BaseException], ...]:
    """What a check raises where it would need a fake tensor's values or a guard on an unbacked size."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException,
            GuardOnDataDependentSymNode)


def _tpu_fake(flat: Sequence[Any]) -> Any:
    """The fake mode of the first tpu fake tensor among `flat`, or None."""
    from torch._subclasses.fake_tensor import FakeTensor

    for a in flat:
        if isinstance(a, FakeTensor) and a.fake_device.type == "tpu":
            return a.fake_mode
    return None


def _symbolic(flat: Sequence[Any]) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    for a in flat:
        if isinstance(a, torch.SymInt | torch.SymFloat | torch.SymBool):
            return True
        if isinstance(a, FakeTensor) and a._has_symbolic_sizes_strides:
            return True
    return False


def _written(op: Any) -> frozenset[str]:
    """The schema names of the arguments `op` writes (out=, an in-place self)."""
    return frozenset(a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write)


def _disposable(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The call's arguments with each written tensor replaced by an empty fake tensor of its metadata (run under
    the fake mode)."""
    written = _written(op)
    if not written:
        return args, dict(kwargs)

    def fresh(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)

    names = [a.name for a in op._schema.arguments]
    new_args = tuple(fresh(a) if i < len(names) and names[i] in written else a for i, a in enumerate(args))
    new_kwargs = {k: pytree.tree_map(fresh, v) if k in written else v for k, v in kwargs.items()}
    return new_args, new_kwargs


@functools.cache
def refused_dtypes(op: Any) -> bool:
    """Whether the dtype refusal table (ops/dtype_refusals.py) lists `op`: a decomposition or meta kernel computes
    dtypes CPU's kernel refuses (xlogy of complex, logaddexp of integers computed under compile)."""
    return bool(dtype_refusals.rules_for(op))


def check(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Raises CPU's error where `op`'s checks or dtype refusals refuse this call on tpu fake tensors; returns where
    they pass, where op has none, where no argument is a tpu fake tensor, and where the checks cannot decide
    without values or with symbolic sizes."""
    modules = modules_for(op)
    exact = _exact_out(op)
    refusals = refused_dtypes(op)
    if not modules and not exact and not refusals:
        return
    flat = pytree.tree_leaves((args, kwargs))
    fake_mode = _tpu_fake(flat)
    if fake_mode is None or _symbolic(flat):
        return
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

    try:  # under make_fx (AOTAutograd) the checks' own ops must not enter the traced graph
        with disable_proxy_modes_tracing(), fake_mode:
            a, k = _disposable(op, args, kwargs)
            inner = out_checks.exact_out(op, _stand_in) if exact else _stand_in
            try:
                checked_decompositions.guarded(op, inner, modules)(*a, **k)
            except _ChecksPassed:
                pass
            if refusals:  # behind the argument checks, as eager's registry guards the kernel
                dtype_refusals.refuse(op, a, k)
    except _skipped_errors():
        return


def _op_implementation(fake_mode: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
    """An op implementation check: CPU's errors first, then NotImplemented (the meta kernel runs)."""
    check(func, args, kwargs)
    return NotImplemented


def _wrap_decomposition(op: Any, decomposition: Callable[..., Any]) -> Callable[..., Any]:
    """`decomposition` (an entry of torch._decomp.decomposition_table) behind `check`."""

    @functools.wraps(decomposition)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check(op, args, kwargs)
        return decomposition(*args, **kwargs)

    checked._torchtpu_fake_checks = True  # type: ignore[attr-defined]
    return checked


def _overloads() -> list[Any]:
    """Every aten overload whose packet a checking module guards, or that the dtype refusal table lists."""
    names = sorted({n.split("::")[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names()
                    if n.startswith("aten::")})
    found = []
    for name in names:
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        guarded = any(packet in m.WRAPPED for m in _MODULES)
        for overload in packet.overloads():
            try:
                op = getattr(packet, overload)
            except (AttributeError, RuntimeError):  # an overload listed but not registered
                continue
            if guarded or refused_dtypes(op):
                found.append(op)
    return found


@functools.cache
def _exact_out(op: Any) -> bool:
    """Whether `op` is an out= overload whose out dtype CPU checks exactly (out_rules.requires_exact), the check
    eager makes in the registry: the meta kernel of a reference with out_wrapper accepts any castable out= dtype
    (fuzz seed 25: isinf.out into a float32 out computed under compile; CPU: "Expected out tensor to have dtype
    bool, but got float instead")."""
    from torchtpu.ops import out_rules

    if not isinstance(op, torch._ops.OpOverload) or not any(a.is_out for a in op._schema.arguments):
        return False
    if op.overloadpacket in decomposition_values.WRAPPED:  # its result dtype is corrected there, not meta's
        return False  # (binary_cross_entropy_backward with a float64 weight: float32 on CPU, float64 by meta)
    return any(out_rules.requires_exact(op, given) for given in (False, True))


def _is_checked(func: Any) -> bool:
    return bool(modules_for(func)) or _exact_out(func) or refused_dtypes(func)


_registered = False


def register() -> None:
    """Adds the checks to FakeTensorMode's op implementations and to the decomposition table entries fake mode
    runs for the guarded ops (once)."""
    global _registered
    if _registered:
        return
    from torch._decomp import decomposition_table
    from torch._subclasses import fake_impls

    if not any(impl is _op_implementation for _, impl in fake_impls.op_implementations_checks):
        # first: it only raises or declines, and an earlier upstream implementation must not skip the checks
        fake_impls.op_implementations_checks.insert(0, (_is_checked, _op_implementation))
    for op in _overloads():
        entry = decomposition_table.get(op)
        if entry is not None and not getattr(entry, "_torchtpu_fake_checks", False):
            decomposition_table[op] = _wrap_decomposition(op, entry)
    _registered = True
