"""CPU's checks that hang on an operand's strides, which a lowering (tracing Syms: shapes and dtypes only) cannot
make: `BOUND_CHECKS`, run on the call's real tensors by ops/arg_order_checks.py (a Sym or a compiled graph's node
has no strides and is not checked; a fake tensor of Dynamo's fake run is).

- isin (Tensor_Tensor, Scalar_Tensor and their out= forms): ATen's isin_default_kernel_cpu, which runs where the
  test elements are fewer than numpy's heuristic `10 * numel(elements) ** 0.145`, flattens them with
  `test_elements.to(common_type).view(-1)`; a test tensor whose strides admit no flat view (transposed, expanded,
  stepped in a leading dim) makes that view fail with its RuntimeError, unless the cast copies it into contiguous
  memory (a dense permutation keeps its strides). The sorting path (ravel) and an empty `elements` (no kernel)
  never view. The view is tried on a meta tensor of the same sizes and strides, so its rule and words are ATen's
  own (issue 17, fuzz seeds 50 and 57).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

Bound = dict[str, Any]
_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one dimension spans across "
               "two contiguous subspaces). Use .reshape(...) instead.")


def isin_sorts(elements: int, test_elements: int) -> bool:
    """ATen's isin path (numpy's heuristic): the sorting algorithm for many test elements, else the default kernel
    (also ops/sampling.py's lowering)."""
    return bool(elements) and test_elements >= int(10.0 * math.pow(float(elements), 0.145))


def _unsupported_isin(dtype: torch.dtype) -> bool:
    """The meta's check_for_unsupported_isin_dtype refuses these first (the lowering raises CPU's words)."""
    return dtype == torch.bool or dtype.is_complex


def _isin(a: Bound) -> None:
    test = a.get("test_elements")
    if not isinstance(test, torch.Tensor):  # Tensor_Scalar: a 0-d wrapped scalar, always viewable
        return
    if "elements" in a:
        elements = a["elements"]
        if not isinstance(elements, torch.Tensor):
            return
        numel, common = elements.numel(), torch.result_type(elements, test)
        dtypes = (elements.dtype, test.dtype)
    else:  # Scalar_Tensor: the element as a wrapped scalar tensor of one element
        element = a.get("element")
        if isinstance(element, torch.Tensor):
            return
        numel, common = 1, torch.result_type(test, element)
        dtypes = (test.dtype,) + ((torch.bool,) if isinstance(element, bool) else
                                  (torch.complex128,) if isinstance(element, complex) else ())
    out = a.get("out")
    if any(_unsupported_isin(d) for d in dtypes) or (isinstance(out, torch.Tensor) and out.dtype != torch.bool):
        return  # refused before the kernel runs, by the lowering or the out= check
    if numel == 0 or isin_sorts(numel, test.numel()):
        return  # no kernel, or isin_sorting (which ravels)
    sizes, strides = tuple(test.shape), tuple(test.stride())
    if not all(isinstance(v, int) for v in (*sizes, *strides)):
        return  # symbolic sizes under torch.compile: no fixed rule to check
    with unset_fake_temporarily():  # a compiled graph's fake run: a real meta tensor and ATen's view rule
        meta = torch.empty_strided(sizes, strides, dtype=test.dtype, device="meta").to(common)
        try:
            meta.view(-1)
        except (RuntimeError, ValueError):  # ValueError: the Python reference's view (Dynamo's fake run)
            raise RuntimeError(_VIEW_ERROR) from None


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {"isin": _isin}
