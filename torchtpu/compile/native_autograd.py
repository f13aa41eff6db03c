"""Compiled upsampling and multi_margin_loss on tpu through the ops' own ATen kernels, so a compiled graph keeps
the nodes that ops/resize.py and ops/losses.py lower (the eager program, bit for bit).

AOTAutograd traces with the Python dispatcher, which prefers Python kernels registered with `py_impl`: upstream's
torch/_decomp registers its decompositions of the upsample family (upsample_nearest*/bilinear/bicubic/trilinear,
`.vec` and `.default`, antialiased too) for DispatchKey.CompositeImplicitAutograd and DispatchKey.Autograd, so a
compiled graph held gather arithmetic (a + (b - a) * w, in another rounding than the eager lowering and CPU)
instead of `aten.upsample_*`, whatever the backend's decomposition table says. Here each of those overloads gets
a Python kernel for DispatchKey.AutogradPrivateUse1 (resolve_key's first choice for a tpu tensor): for `.default`
ATen's C++ autograd kernel (the one registered for the Autograd alias; its node saves what the backward op
needs, and upsample_*_backward is traced as a node too), for `.vec` ATen's composite restated (the output size,
then `.default`). Other devices keep upstream's Python kernels. Registered by compile/backend.py's `register`.
multi_margin_loss: upstream's Autograd-key decomposition gives a (1, C) input with a 0-d target and no reduction a
loss of shape (1,) where ATen's kernel (and the eager lowering) gives a 0-d one; its `.default` takes the same route.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._C import DispatchKey

aten = torch.ops.aten

_NAMES = ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
          "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
          "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa",
          "multi_margin_loss")
_KEY = DispatchKey.AutogradPrivateUse1


def _native(op: torch._ops.OpOverload) -> Any:
    """`.default`: ATen's autograd kernel. `.vec`: ATen's composite, restated (its C++ kernel, called from here,
    would come back to upstream's Python kernel for CompositeImplicitAutograd): the output size as
    UpSample.cpp's compute_output_size, the scale factors as the scales, then `.default`."""
    if op._overloadname == "default":
        def kernel(*args: Any, **kwargs: Any) -> Any:
            return op._op_dk(DispatchKey.Autograd, *args, **kwargs)

        return kernel
    default = op.overloadpacket.default

    def vec(input: torch.Tensor, output_size: Any, *rest: Any) -> Any:  # noqa: A002
        from torch._decomp.decompositions import upsample_compute_output_size

        *flags, scale_factors = rest  # (align_corners,) for the interpolating modes
        osize = upsample_compute_output_size(input.size(), output_size, scale_factors)
        scales = list(scale_factors) if scale_factors else [None] * len(osize)
        return default(input, osize, *flags, *scales)

    return vec


def overloads() -> list[torch._ops.OpOverload]:
    """The overloads with an upstream Python kernel at an autograd or composite key (what register covers)."""
    found = []
    for name in _NAMES:
        packet = getattr(aten, name)
        for overload in ("default", "vec"):
            op = getattr(packet, overload, None)
            if op is not None and (DispatchKey.Autograd in op.py_kernels
                                   or DispatchKey.CompositeImplicitAutograd in op.py_kernels):
                found.append(op)
    return found


def register() -> None:
    """Adds the AutogradPrivateUse1 kernels (once)."""
    for op in overloads():
        if _KEY not in op.py_kernels:
            op.py_impl(_KEY)(_native(op))
