"""torchtpu: Google TPUs as a native PyTorch device ("tpu"), simulator-first.

`import torch` is enough (autoload through the `torch.backends` entry point); `import torchtpu` also works.
The torch-free parts (`torchtpu.sim`, `torchtpu.perfmodel`, `torchtpu.drivers`) import without torch installed.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: ``import torch`` registers the device."""
    from torchtpu.registration import register

    register()


try:
    import torch  # noqa: F401  (when torchtpu is imported first, torch's own autoload calls _autoload above)
except ModuleNotFoundError as _exc:  # pragma: no cover - exercised by the torch-free tests of sim/perfmodel
    if _exc.name != "torch":
        raise
    _HAVE_TORCH = False
else:
    _HAVE_TORCH = True

if _HAVE_TORCH:
    _autoload()

    from torchtpu.execution.deferred import is_materialized, pending_ir
    from torchtpu.execution.modes import EagerMode, eager_mode, get_eager_mode, set_eager_mode
    from torchtpu.ops.fallback import fallback_counts, reset_fallback_counts
    from torchtpu.precision import Precision, precision, set_precision
    from torchtpu.profiler.advise import advise
    from torchtpu.profiler.explain import explain
    from torchtpu.stats import reset_stats, stats, timeline_records

__all__ = ["EagerMode", "Precision", "advise", "eager_mode", "explain", "fallback_counts", "get_eager_mode",
           "is_materialized", "pending_ir", "precision", "reset_fallback_counts", "reset_stats", "set_eager_mode",
           "set_precision", "stats", "timeline_records"]


def __getattr__(name: str) -> Any:
    if not _HAVE_TORCH and name in __all__:
        raise ImportError(f"torchtpu.{name} needs PyTorch: pip install torch==2.13.0")
    raise AttributeError(f"module 'torchtpu' has no attribute {name!r}")
