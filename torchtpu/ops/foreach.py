"""Lowerings of the multi-tensor `_foreach_*` ops: one Program per call over every tensor of the lists.

CUDA runs these as multi_tensor_apply kernels; without a lowering, ATen's generic version loops over the lists
and launches one op per tensor (a foreach AdamW step on a 42-tensor BERT was 336 launches). Each foreach op
here maps the per-tensor op's own lowering over the lists, so results equal the per-tensor ops' exactly; the
in-place (`_foreach_add_`) and out= siblings come from the registry. A foreach op whose per-tensor op has no
lowering is left to ATen's loop (which then reaches that op's decomposition or fallback). Float scalars are
program inputs (ops/scalar_args.py): Adam's per-step `step_size` lists reuse the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

from torchtpu.ops import prims as P
from torchtpu.ops.registry import OP_TABLE, lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign",
          "sin", "sinh", "sqrt", "tan", "tanh", "trunc")

def _lowered(op: OpOverload) -> Callable[..., Any] | None:
    return OP_TABLE.get(op)


def _clamp_tensor(side: str) -> Callable[..., Any] | None:
    clamp = _lowered(aten.clamp.Tensor)
    if clamp is None:
        return None
    return (lambda s, o: clamp(s, o, None)) if side == "min" else (lambda s, o: clamp(s, None, o))


# foreach name -> (per-tensor lowering with a Python scalar, with a tensor, takes alpha)
_BINARY: dict[str, tuple[Callable[..., Any] | None, Callable[..., Any] | None, bool]] = {
    "add": (_lowered(aten.add.Tensor), _lowered(aten.add.Tensor), True),
    "sub": (_lowered(aten.sub.Tensor), _lowered(aten.sub.Tensor), True),
    "mul": (_lowered(aten.mul.Tensor), _lowered(aten.mul.Tensor), False),
    "div": (_lowered(aten.div.Tensor), _lowered(aten.div.Tensor), False),
    "clamp_min": (_lowered(aten.clamp_min.default), _clamp_tensor("min"), False),
    "clamp_max": (_lowered(aten.clamp_max.default), _clamp_tensor("max"), False),
    "maximum": (_lowered(aten.clamp_min.default), _lowered(aten.maximum.default), False),  # ATen: .Scalar clamps
    "minimum": (_lowered(aten.clamp_max.default), _lowered(aten.minimum.default), False),
    "pow": (_lowered(aten.pow.Tensor_Scalar), _lowered(aten.pow.Tensor_Tensor), False),
}


def _check_lengths(name: str, *lists: list) -> None:
    n = len(lists[0])
    if n == 0:
        raise RuntimeError(f"{name}: Tensor list must have at least one tensor.")
    for other in lists[1:]:
        if len(other) != n:
            raise RuntimeError(f"{name}: Tensor lists must have the same number of tensors, got {n} and "
                               f"{len(other)}.")


def _check_scalar_tensor(name: str, t: Any) -> None:
    if isinstance(t, Sym) and t.shape != ():
        raise RuntimeError(f"{name}: scalar tensor expected to be 0 dim but it has {len(t.shape)} dimensions "
                           f"and {t.numel()} elements.")


def _scalars_list(args: tuple, kwargs: dict[str, Any], index: int, name: str) -> tuple[tuple, dict[str, Any]]:
    """`prepare` hook: a 1-d tensor of scalars (`_foreach_addcdiv.Tensor`) becomes a list of Python numbers."""
    args = list(args)
    if len(args) > index:
        args[index] = _to_numbers(args[index])
    elif name in kwargs:
        kwargs = {**kwargs, name: _to_numbers(kwargs[name])}
    return tuple(args), kwargs


def _to_numbers(t: Any) -> Any:
    if isinstance(t, torch.Tensor):
        if t.dim() != 1:
            raise RuntimeError(f"Expected scalars to be a 1-D tensor, got {t.dim()}-D")
        return t.cpu().tolist()
    return t


def _register_unary(name: str) -> None:
    op = getattr(aten, name).default
    fn = _lowered(op)
    if fn is None:
        return
    qualified = f"_foreach_{name}"

    def lowering(self: list[Sym]) -> list[Sym]:
        _check_lengths(qualified, self)
        return [fn(s) for s in self]

    lower(getattr(aten, qualified).default)(lowering)


# the per-tensor lowerings that branch on their scalar (pow's exponent, clamp's bounds)
_BRANCHING = frozenset({"pow", "maximum", "minimum", "clamp_min", "clamp_max"})


def _scalar_name(op: OpOverload) -> tuple[str]:
    return (op._schema.arguments[1].name,)


def _register_binary(name: str, by_scalar: Callable[..., Any] | None, by_tensor: Callable[..., Any] | None,
                     alpha: bool) -> None:
    packet = getattr(aten, f"_foreach_{name}")
    qualified = f"_foreach_{name}"
    overloads = packet.overloads()
    if by_scalar is not None and "Scalar" in overloads:
        def scalar(self: list[Sym], scalar: Any) -> list[Sym]:
            _check_lengths(qualified, self)
            return [by_scalar(s, scalar) for s in self]

        lower(packet.Scalar, static=_scalar_name(packet.Scalar) if name in _BRANCHING else ())(scalar)
    if by_scalar is not None and "ScalarList" in overloads:
        def scalar_list(self: list[Sym], scalars: list[Any]) -> list[Sym]:
            _check_lengths(qualified, self, scalars)
            return [by_scalar(s, c) for s, c in zip(self, scalars)]

        lower(packet.ScalarList, static=_scalar_name(packet.ScalarList) if name in _BRANCHING else ())(scalar_list)
    if by_tensor is not None and "List" in overloads:
        def tensor_list(self: list[Sym], other: list[Sym], **kw: Any) -> list[Sym]:
            _check_lengths(qualified, self, other)
            return [by_tensor(s, o, **kw) for s, o in zip(self, other)]

        lower(packet.List, static=("alpha",) if alpha else ())(tensor_list)
    if by_tensor is not None and "Tensor" in overloads:
        def one_tensor(self: list[Sym], other: Any, **kw: Any) -> list[Sym]:
            _check_lengths(qualified, self)
            _check_scalar_tensor(qualified, other)
            return [by_tensor(s, other, **kw) for s in self]

        lower(packet.Tensor, static=("alpha",) if alpha else ())(one_tensor)


for _name in _UNARY:
    _register_unary(_name)
for _name, (_by_scalar, _by_tensor, _alpha) in _BINARY.items():
    _register_binary(_name, _by_scalar, _by_tensor, _alpha)


@lower(aten._foreach_pow.ScalarAndTensor)
def foreach_pow_scalar_and_tensor(self: Any, exponent: list[Sym]) -> list[Sym]:
    _check_lengths("_foreach_pow", exponent)
    return [OP_TABLE[aten.pow.Scalar](self, e) for e in exponent]


def _register_pointwise(name: str) -> None:
    per_tensor = _lowered(getattr(aten, name).default)
    if per_tensor is None:
        return
    packet = getattr(aten, f"_foreach_{name}")
    qualified = f"_foreach_{name}"

    def scalar(self: list[Sym], tensor1: list[Sym], tensor2: list[Sym], value: Any = 1) -> list[Sym]:
        _check_lengths(qualified, self, tensor1, tensor2)
        return [per_tensor(s, a, b, value) for s, a, b in zip(self, tensor1, tensor2)]

    def scalar_list(self: list[Sym], tensor1: list[Sym], tensor2: list[Sym], scalars: list[Any]) -> list[Sym]:
        _check_lengths(qualified, self, tensor1, tensor2, scalars)
        return [per_tensor(s, a, b, c) for s, a, b, c in zip(self, tensor1, tensor2, scalars)]

    fixed = ("value", "scalars") if name == "addcmul" else ()  # addcmul checks its value fits (dtypes.py)
    lower(packet.Scalar, static=fixed[:1])(scalar)
    lower(packet.ScalarList, static=fixed[1:])(scalar_list)
    lower(packet.Tensor, static=fixed[1:], prepare=lambda a, k: _scalars_list(a, k, 3, "scalars"))(scalar_list)


_register_pointwise("addcmul")
_register_pointwise("addcdiv")


@lower(aten._foreach_lerp.List)
def foreach_lerp_list(self: list[Sym], tensors1: list[Sym], weights: list[Sym]) -> list[Sym]:
    _check_lengths("_foreach_lerp", self, tensors1, weights)
    return [OP_TABLE[aten.lerp.Tensor](s, e, w) for s, e, w in zip(self, tensors1, weights)]


@lower(aten._foreach_lerp.Scalar)
def foreach_lerp_scalar(self: list[Sym], tensors1: list[Sym], weight: Any) -> list[Sym]:
    _check_lengths("_foreach_lerp", self, tensors1)
    return [OP_TABLE[aten.lerp.Scalar](s, e, weight) for s, e in zip(self, tensors1)]


@lower(aten._foreach_lerp.ScalarList)
def foreach_lerp_scalar_list(self: list[Sym], tensors1: list[Sym], weight: list[Any]) -> list[Sym]:
    _check_lengths("_foreach_lerp", self, tensors1, weight)
    return [OP_TABLE[aten.lerp.Scalar](s, e, w) for s, e, w in zip(self, tensors1, weight)]


@lower(aten._foreach_norm.Scalar, static=("ord",))
def foreach_norm(self: list[Sym], ord: Any = 2, dtype: torch.dtype | None = None) -> list[Sym]:  # noqa: A002
    _check_lengths("_foreach_norm", self)
    norm = OP_TABLE[aten.linalg_vector_norm.default]
    return [norm(s, ord, None, False, dtype=dtype) for s in self]


@lower(aten._foreach_max.default)
def foreach_max(self: list[Sym]) -> list[Sym]:
    _check_lengths("_foreach_max", self)
    return [OP_TABLE[aten.max.default](s) for s in self]


@lower(aten._foreach_mm.default)
def foreach_mm(self: list[Sym], mat2: list[Sym]) -> list[Sym]:
    _check_lengths("_foreach_mm", self, mat2)
    return [OP_TABLE[aten.mm.default](a, b) for a, b in zip(self, mat2)]


@lower(aten._foreach_clone.default)
def foreach_clone(self: list[Sym], memory_format: Any = None) -> list[Sym]:
    _check_lengths("_foreach_clone", self)
    return [P.convert(s, s.dtype) for s in self]


@lower(aten._foreach_zero_.default)
def foreach_zero_(self: list[Sym]) -> list[Sym]:
    _check_lengths("_foreach_zero_", self)
    return [P.full(0, s.shape, s.dtype) for s in self]
