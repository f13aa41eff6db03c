"""A Helion RMSNorm kernel (Helion's Pallas backend): the example `helion_op` and `sim_autotune` are shown with.

Import it after setting HELION_BACKEND=pallas (and HELION_PALLAS_INTERPRET=1 off a TPU): Helion reads them when it
is imported. `rms_norm` is the `@helion.kernel`; `op()` makes the torch operator "torchtpu_examples::helion_rms_norm".
"""

from __future__ import annotations

import torch

from torchtpu.kernels import deps
from torchtpu.kernels.helion_ops import _check_backend

_check_backend()
helion = deps.require("helion")
hl = deps.require("helion.language")


@helion.kernel(static_shapes=True)
def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        inv = torch.rsqrt(torch.mean(row * row, dim=-1) + 1e-6)
        out[tile_m, :] = (row * inv[:, None] * w[None, :].to(torch.float32)).to(out.dtype)
    return out


_op = None


def op(candidates: int = 12):  # noqa: ANN201
    """The torch operator on "tpu" (made once)."""
    global _op
    if _op is None:
        from torchtpu.kernels import helion_op

        _op = helion_op(rms_norm, "torchtpu_examples::helion_rms_norm", candidates=candidates)
    return _op
