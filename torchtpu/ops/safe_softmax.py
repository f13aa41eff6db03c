"""`aten._safe_softmax` in compiled graphs: the softmax of scaled_dot_product_attention's math path, whose
fully-masked rows (every element -inf) are zero instead of NaN.

Upstream's decomposition (torch/_decomp/decompositions.py `safe_softmax`) computes the softmax, then
`eq(-inf)`, `all` over the softmax dim and a `where` over the whole (B, H, L, S) scores on every launch. Here the
guard is per row and shares the softmax's own row maximum: a row is fully masked exactly when its maximum is
-inf (a NaN anywhere makes the maximum NaN, not -inf, as it makes `all(eq(-inf))` false). Such a row is shifted
by 0 instead of its maximum (exp(-inf) = 0 everywhere) and divided by 1 instead of its sum (0): +0, as the
`where` gives. The steps are the `_softmax` lowering's (ops/nn.py `softmax_f32`, its guard on), so the result
is bit-identical to eager mode, which runs ATen's composite (softmax, eq, all, where).

Eager mode keeps ATen's kernel (graph role only). A `dtype` other than the input's (the guard reads the
unconverted input) or a non-floating input is not lowered here: the graph runs op by op instead.
"""

from __future__ import annotations

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.nn import _f32, softmax_f32
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@lower(aten._safe_softmax.default, graph_only=True)
def safe_softmax(self: Sym, dim: int, dtype: torch.dtype | None = None) -> Sym:
    """Softmax over `dim` with fully-masked rows zero, the guard computed per row (module docstring)."""
    if self.dtype not in _FLOATS or (dtype is not None and dtype != self.dtype):
        from torchtpu.compile.backend import UnsupportedNode

        raise UnsupportedNode(f"torch.compile(backend='tpu'): _safe_softmax of {self.dtype} with dtype={dtype} "
                              "is not lowered (the graph runs op by op)")
    d = P.canon_dims(dim, self.ndim)
    return P.convert(softmax_f32(_f32(self), d, zero_masked_rows=True), self.dtype)
