"""Outputs whose order or labels CPU leaves unspecified, put in one canonical form on both sides before the
fuzzer compares them: topk with sorted=False (its k elements in any order), and unique's inverse indices that
point at a NaN of the unique output (each NaN is its own unique element, so which NaN an input NaN maps to is the
sort's accident)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.fuzz.args import Call

_UNIQUE = ("_unique", "_unique2", "unique_dim", "unique_consecutive")


def canonical(call: Call, outputs: list[Any], n_leaves: int) -> list[Any]:
    """`outputs`: the call's leaves then its tensor arguments after the call (the harness's list)."""
    name = call.op._schema.name.split("::")[1]
    if name == "topk":
        return _topk(call, outputs, n_leaves)
    if name in _UNIQUE:
        return _unique(outputs)
    return outputs


def _arg(call: Call, index: int, name: str, default: Any) -> Any:
    return call.args[index] if len(call.args) > index else call.kwargs.get(name, default)


def _topk(call: Call, outputs: list[Any], n_leaves: int) -> list[Any]:
    if _arg(call, 4, "sorted", True):
        return outputs
    dim, largest = _arg(call, 2, "dim", -1), bool(_arg(call, 3, "largest", True))
    out = list(outputs)
    pairs = [(0, 1)]
    if call.op._overloadname == "values":  # the out= tensors values, indices: the last two arguments
        pairs.append((len(out) - 2, len(out) - 1))
    for v, i in pairs:
        values, indices = out[v], out[i]
        if not (isinstance(values, torch.Tensor) and isinstance(indices, torch.Tensor)) or \
                values.shape != indices.shape or values.dim() == 0:
            continue
        order = torch.sort(values.double() if values.dtype == torch.bool else values, dim=dim, descending=largest,
                           stable=True).indices
        out[v], out[i] = values.gather(dim, order), indices.gather(dim, order)
    return out


def _unique(outputs: list[Any]) -> list[Any]:
    if len(outputs) < 2 or not isinstance(outputs[0], torch.Tensor) or not outputs[0].is_floating_point():
        return outputs
    values, inverse = outputs[0], outputs[1]
    if not isinstance(inverse, torch.Tensor) or inverse.dtype != torch.int64 or values.dim() != 1:
        return outputs
    nan = values.isnan()
    if not bool(nan.any()) or inverse.numel() == 0 or int(inverse.max()) >= values.numel():
        return outputs
    return [values, torch.where(nan[inverse], -1, inverse), *outputs[2:]]
