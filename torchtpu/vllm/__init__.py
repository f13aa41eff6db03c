"""vLLM on "tpu": the platform plugin (entry point `vllm.platform_plugins` -> `torchtpu = torchtpu.vllm:register`),
its worker and model runner, the paged attention backend and the token-count buckets. Nothing here is imported
unless vLLM asks for the plugin: `import torch` and `import torchtpu` stay free of vLLM (docs/serving.md)."""

from __future__ import annotations

PLATFORM = "torchtpu.vllm.platform.TpuPlatform"


def register() -> str | None:
    """vLLM's platform-plugin hook: the platform's dotted path when the "tpu" device is available, else None.

    "Available" means torch's autoload registered the backend (or `import torchtpu` does now) and its driver
    has at least one device; a backend that failed to load leaves vLLM on its own platforms."""
    import torch

    if not hasattr(torch, "tpu"):
        try:
            import torchtpu  # noqa: F401 - registers the device when autoload was turned off
        except Exception:  # noqa: BLE001 - no usable backend: vLLM keeps its built-in platforms
            return None
    try:
        return PLATFORM if torch.tpu.is_available() and torch.tpu.device_count() > 0 else None
    except Exception:  # noqa: BLE001
        return None
