"""ATen's refusal of an in-place activation's backward with a negative slope: elu_ / celu_ / leaky_relu_ / rrelu_
save their result, and with a negative slope the result's sign no longer tells the input's, so CPU raises
instead of returning a wrong gradient. leaky_relu_backward's lowering checks it itself (ops/elementwise.py);
elu_backward (an accepted upstream decomposition, which has no such check) runs behind `wrap`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

LEAKY_RELU_NEGATIVE_SLOPE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is "
    "caused by calling in-place forward function with a negative slope, please call out-of-place version instead. "
    "File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
    "calculation with negative slope")
ELU_NEGATIVE_SLOPE = (
    "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused "
    "by calling in-place forward function with a negative slope, please call out-of-place version instead.")

WRAPPED = frozenset({aten.elu_backward})


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """elu_backward's decomposition `fn` behind ATen's meta check (alpha >= 0 when is_result)."""
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**dict(zip(names, args)), **kwargs}
        if bound.get("is_result") and float(bound["alpha"]) < 0:
            raise RuntimeError(ELU_NEGATIVE_SLOPE)
        return fn(*args, **kwargs)

    return kernel
