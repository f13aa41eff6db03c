"""ATen -> IR lowerings, one module per op family; `registry.register_all()` wires them to the dispatcher."""

from __future__ import annotations

import importlib

FAMILIES = (
    "elementwise", "math", "reduction", "matmul", "nn", "indexing", "factory", "logspace", "conv", "shape",
    "norm", "sorting", "dynamic", "resize", "pooling", "losses", "complex", "linalg", "matrix_exp", "special",
    "sampling",
    "embedding", "grid", "segment", "quantized", "jagged", "pooled_lookup", "paged_attention", "random_ints",
    "normal_tensor", "rnn_cells", "threshold_inplace", "activation_backward", "addcmul", "lerp", "ldexp",
    "device_asserts", "safe_softmax",
    "foreach",  # last: maps the per-tensor lowerings above over lists
)


def load_families() -> None:
    for name in FAMILIES:
        importlib.import_module(f"torchtpu.ops.{name}")
