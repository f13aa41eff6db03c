"""The torch.compile backend "tpu" (see backend.py) and `bounded`, the same backend with its own shape-bucket
policy (bounded dynamism: buckets.py, padded.py). Dynamo loads on first use only (registration.py)."""

from typing import Any

__all__ = ["bounded"]


def __getattr__(name: str) -> Any:
    if name == "bounded":
        from torchtpu.compile.backend import bounded

        return bounded
    raise AttributeError(f"module 'torchtpu.compile' has no attribute {name!r}")
