"""torchtpu: Google TPUs as a native PyTorch device ("tpu"), simulator-first.

`import torch` is enough (autoload through the `torch.backends` entry point); `import torchtpu` also works.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: ``import torch`` registers the device."""
    from torchtpu.registration import register

    register()


import torch  # noqa: E402,F401  (when torchtpu is imported first, torch's own autoload calls _autoload above)

_autoload()

from torchtpu.execution.deferred import is_materialized, pending_ir  # noqa: E402
from torchtpu.execution.modes import EagerMode, eager_mode, get_eager_mode, set_eager_mode  # noqa: E402
from torchtpu.ops.fallback import fallback_counts, reset_fallback_counts  # noqa: E402
from torchtpu.precision import Precision, precision, set_precision  # noqa: E402
from torchtpu.stats import reset_stats, stats  # noqa: E402

__all__ = ["EagerMode", "Precision", "eager_mode", "fallback_counts", "get_eager_mode", "is_materialized",
           "pending_ir", "precision", "reset_fallback_counts", "reset_stats", "set_eager_mode", "set_precision",
           "stats"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module 'torchtpu' has no attribute {name!r}")
