"""Every lowering, host kernel and decomposition binds its op's positional arguments by position: its parameters must
name them in the schema's order. A lowering registered for two overloads of different schemas took one's arguments
for the other's (_embedding_bag_dense_backward was lowered with _embedding_bag_backward's parameters, offsets and
sparse included: every valid call failed). Renames that keep the meaning are listed."""

from __future__ import annotations

import inspect

import torchtpu  # noqa: F401  (registers the lowerings)
import torchtpu.compile.backend  # noqa: F401  (registers the compiled graphs' own lowerings too)
from torchtpu.ops import registry

# (schema name, parameter name) pairs that are the same argument under another name
SAME_ARGUMENT = {("x", "self"), ("self", "x"), ("n", "other"), ("value", "src"), ("from", "from_"),
                 ("exponent", "scalar"), ("exponent", "scalars"), ("exponent", "other"), ("shape", "size"),
                 ("a", "x"), ("s", "value"), ("split_sizes", "split_size"),
                 # torch._refs / torch._decomp's names, and the host kernels'
                 ("self", "a"), ("other", "b"), ("self", "input"), ("self", "t"), ("self", "src"),
                 ("self", "params"), ("input", "x"), ("grad_out", "grad"), ("grad_output", "out_grad"),
                 ("grad_in", "grad"), ("input_sizes", "input_size"), ("dim", "dimension"),
                 ("N", "n"), ("C", "c"), ("HxW", "hxw")}
# overloads refused before their decomposition runs (arg_order_checks), so its parameters never see their arguments
REFUSED_FIRST = {"aten::baddbmm.dtype", "aten::baddbmm.dtype_out"}


def _positional(fn: object) -> tuple[list[str], bool]:
    params = inspect.signature(fn).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names, any(p.kind == p.VAR_POSITIONAL for p in params)


def _misbound(op: object, fn: object) -> list[str]:
    names, star = _positional(fn)
    wrong = []
    for i, arg in enumerate(a for a in op._schema.arguments if not a.kwarg_only):
        if i >= len(names):
            if not star:
                wrong.append(f"{op}: {arg.name} (position {i}) has no parameter in {fn.__qualname__}")
            break
        if names[i] != arg.name and (arg.name, names[i]) not in SAME_ARGUMENT:
            wrong.append(f"{op}: position {i} is {arg.name!r}, {fn.__module__}.{fn.__qualname__} names it "
                         f"{names[i]!r}")
    return wrong


def _bound_by_position(hows: tuple[str, ...], graphs: bool) -> list[tuple[object, object]]:
    pairs = []
    for op, record in registry.TABLE.items():
        if graphs and record.graph is not None:
            pairs.append((op, record.graph))
        refused = f"{op._schema.name}.{op._overloadname}" in REFUSED_FIRST
        if record.how in hows and record.fn is not None and not refused:
            pairs.append((op, record.fn))
    return pairs


def test_lowerings_name_their_ops_positional_arguments_in_order() -> None:
    pairs = _bound_by_position(("lowering",), graphs=True)
    assert len(pairs) > 400
    wrong = [w for op, fn in pairs for w in _misbound(op, fn)]
    assert not wrong, "\n".join(wrong)


def test_host_kernels_and_decompositions_name_their_ops_positional_arguments_in_order() -> None:
    pairs = _bound_by_position(("kernel", "decomposition"), graphs=False)
    assert len(pairs) > 150
    wrong = [w for op, fn in pairs for w in _misbound(op, fn)]
    assert not wrong, "\n".join(wrong)
