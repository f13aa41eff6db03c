"""`torch.autocast("tpu", dtype=torch.bfloat16)`: the AutocastPrivateUse1 dispatch key.

Every op falls through autocast unchanged, except two lists modelled on CUDA's policy: matmul-family ops run
in the autocast dtype (bf16 by default, what the MXU multiplies anyway), and numerically sensitive reductions
and losses run in float32.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten
_KEY = "AutocastPrivateUse1"
_libs: list[torch.library.Library] = []

LOWER_PRECISION = (
    aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default, aten.addbmm.default,
    aten.matmul.default, aten.linear.default, aten.conv1d.default, aten.conv2d.default, aten.conv3d.default,
    aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.conv_transpose3d.input,
    aten.convolution.default, aten._convolution.default, aten.addmv.default, aten.mv.default, aten.dot.default,
    aten.einsum.default, aten.scaled_dot_product_attention.default,
)
FLOAT32 = (
    aten._softmax.default, aten._log_softmax.default, aten.softmax.int, aten.log_softmax.int,
    aten.layer_norm.default, aten.native_layer_norm.default, aten.group_norm.default, aten.nll_loss.default,
    aten.cross_entropy_loss.default, aten.mse_loss.default, aten.binary_cross_entropy_with_logits.default,
    aten.logsumexp.default, aten.cumsum.default, aten.exp.default, aten.log.default, aten.pow.Tensor_Scalar,
    aten.rsqrt.default, aten.norm.Scalar, aten.linalg_vector_norm.default,
)


def _cast(args: Any, dtype: torch.dtype) -> Any:
    def cast(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.device.type == "tpu" and x.dtype != dtype:
            return x.to(dtype)
        return x

    return torch.utils._pytree.tree_map(cast, args)


def _kernel(op: torch._ops.OpOverload, fp32: bool) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.float32 if fp32 else torch.get_autocast_dtype("tpu")
        args, kwargs = _cast((args, kwargs), dtype)
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)):
            return op(*args, **kwargs)

    return kernel


def register() -> None:
    if _libs:
        return
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, _KEY)
    lib = torch.library.Library("aten", "IMPL")
    for ops, fp32 in ((LOWER_PRECISION, False), (FLOAT32, True)):
        for op in ops:
            lib.impl(op, _kernel(op, fp32), _KEY)
    _libs.extend([fallthrough, lib])
