"""torchtpu: Google TPUs as a native PyTorch device ("tpu"), simulator-first.

`import torch` is enough (autoload through the `torch.backends` entry point); `import torchtpu` also works.
The torch-free parts (`torchtpu.sim`, `torchtpu.perfmodel`, `torchtpu.drivers`) import without torch installed.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

__version__ = "0.1.0"

_load_error: BaseException | None = None  # why the device could not be registered, if it could not
_imported = False  # this module's own import has finished


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: ``import torch`` registers the device.

    A failure here must not break ``import torch`` for everyone in the environment (torch re-raises an entry
    point's error): it is recorded, warned about once with its cause and the fix, and ``import torchtpu`` (or a
    torchtpu API) raises it.
    """
    global _load_error
    if _load_error is None:
        from torchtpu.registration import register

        try:
            register()
        except Exception as exc:  # noqa: BLE001 - reported, and raised again by an explicit import
            _load_error = exc
            warnings.warn(
                f"torchtpu could not register the 'tpu' device, so it is not available in this process: "
                f"{type(exc).__name__}: {exc}\n`import torch` works without it; `import torchtpu` raises this "
                "error with its traceback. Fix the cause above, or set TORCH_DEVICE_BACKEND_AUTOLOAD=0 to stop "
                "torch from loading torchtpu.", RuntimeWarning, stacklevel=2)
    if _load_error is not None and _imported:
        sys.modules.pop(__name__, None)  # so that a later `import torchtpu` runs again and raises the error


def _run_by_autoload() -> bool:
    """True when torch's autoload (`torch._import_device_backends`, run by `import torch`) imports this module."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_import_device_backends" and code.co_filename.endswith(("torch/__init__.py",
                                                                                   "torch\\__init__.py")):
            return True
        frame = frame.f_back
    return False


_BY_AUTOLOAD = _run_by_autoload()

try:
    import torch  # noqa: F401  (when torchtpu is imported first, torch's own autoload calls _autoload above)
except ModuleNotFoundError as _exc:  # pragma: no cover - exercised by the torch-free tests of sim/perfmodel
    if _exc.name != "torch":
        raise
    _HAVE_TORCH = False
else:
    _HAVE_TORCH = True

if _HAVE_TORCH:
    if _BY_AUTOLOAD:
        _autoload()
    elif _load_error is None:
        from torchtpu.registration import register

        register()  # an explicit import raises the real error
    if _load_error is not None and not _BY_AUTOLOAD:
        raise _load_error

if _HAVE_TORCH and _load_error is None:
    from torchtpu.distributed import _register_on_load
    from torchtpu.execution.deferred import is_materialized, pending_ir
    from torchtpu.execution.modes import EagerMode, eager_mode, get_eager_mode, set_eager_mode
    from torchtpu.ops.fallback import fallback_counts, reset_fallback_counts
    from torchtpu.precision import Precision, precision, set_precision
    from torchtpu.profiler.advise import advise
    from torchtpu.profiler.explain import explain
    from torchtpu.stats import reset_stats, stats, timeline_records

    _register_on_load()  # c10d backend "tpu_dist"; a failure only warns

_imported = True

__all__ = ["EagerMode", "Precision", "advise", "eager_mode", "explain", "fallback_counts", "get_eager_mode",
           "is_materialized", "pending_ir", "precision", "reset_fallback_counts", "reset_stats", "set_eager_mode",
           "set_precision", "stats", "timeline_records"]


def __getattr__(name: str) -> Any:
    if not _HAVE_TORCH and name in __all__:
        raise ImportError(f"torchtpu.{name} needs PyTorch: pip install torch==2.13.0")
    if _load_error is not None and name in __all__:
        raise ImportError(f"torchtpu.{name} is not available: the 'tpu' device could not be registered "
                          f"({type(_load_error).__name__}: {_load_error})") from _load_error
    raise AttributeError(f"module 'torchtpu' has no attribute {name!r}")
