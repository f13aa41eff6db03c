"""Sparse layouts on "tpu": refused with one clear error naming the layout.

The device holds strided (dense) tensors only. Without a kernel, an op on a sparse tpu tensor (or one making it,
such as `torch.sparse_coo_tensor(..., device="tpu")` or `x.to_sparse()`) reaches the dispatcher's generic
NotImplementedError ("Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the
'Sparsetpu' backend ... selective/custom build ..."), which is what a CUDA-less backend such as MPS raises. A
fallback on the sparse dispatch keys raises the same class with words that name the layout and the way out.
"""

from __future__ import annotations

from typing import Any

import torch

_LAYOUTS = {"SparsePrivateUse1": "torch.sparse_coo", "SparseCsrPrivateUse1": "torch.sparse_csr/csc/bsr/bsc"}
_libs: list[torch.library.Library] = []


def _refusal(layout: str) -> Any:
    def refuse(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{op}: sparse tensors (layout {layout}) are not supported on the tpu device "
                                  "(it holds strided tensors only); use a dense tensor (.to_dense()), or run the "
                                  "sparse op on CPU")

    return refuse


def register() -> None:
    """Registers the refusal as the fallback of the sparse PrivateUse1 dispatch keys (once)."""
    if _libs:
        return
    lib = torch.library.Library("_", "IMPL")
    for key, layout in _LAYOUTS.items():
        lib.fallback(_refusal(layout), key)
    _libs.append(lib)
