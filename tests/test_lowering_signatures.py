"""Every lowering binds its op's positional arguments by position: its parameters must name them in the schema's
order. A lowering registered for two overloads of different schemas took one's arguments for the other's
(_embedding_bag_dense_backward was lowered with _embedding_bag_backward's parameters, offsets and sparse included:
every valid call failed). Renames that keep the meaning are listed."""

from __future__ import annotations

import inspect

import torchtpu  # noqa: F401  (registers the lowerings)
import torchtpu.compile.backend  # noqa: F401  (registers the compiled graphs' own lowerings too)
from torchtpu.ops import registry

# (schema name, parameter name) pairs that are the same argument under another name
SAME_ARGUMENT = {("x", "self"), ("self", "x"), ("n", "other"), ("value", "src"), ("from", "from_"),
                 ("exponent", "scalar"), ("exponent", "scalars"), ("exponent", "other"), ("shape", "size"),
                 ("a", "x"), ("s", "value"), ("split_sizes", "split_size")}


def _positional(fn: object) -> tuple[list[str], bool]:
    params = inspect.signature(fn).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names, any(p.kind == p.VAR_POSITIONAL for p in params)


def test_lowerings_name_their_ops_positional_arguments_in_order() -> None:
    wrong = []
    checked = 0
    for op, record in registry.TABLE.items():
        fns = {record.graph} | ({record.fn} if record.how == "lowering" else set())
        for fn in fns - {None}:
            names, star = _positional(fn)
            checked += 1
            for i, arg in enumerate(a for a in op._schema.arguments if not a.kwarg_only):
                if i >= len(names):
                    if not star:
                        wrong.append(f"{op}: {arg.name} (position {i}) has no parameter in {fn.__qualname__}")
                    break
                if names[i] != arg.name and (arg.name, names[i]) not in SAME_ARGUMENT:
                    wrong.append(f"{op}: position {i} is {arg.name!r}, {fn.__module__}.{fn.__qualname__} names it "
                                 f"{names[i]!r}")
    assert checked > 400
    assert not wrong, "\n".join(wrong)
