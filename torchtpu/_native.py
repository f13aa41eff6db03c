"""Loads the C++ shim (allocator, device guard and view ops for PrivateUse1): the module a wheel install built
(`torchtpu._shim`, setup.py), else a JIT build from csrc/ (editable checkouts; built once, then cached)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import time
import warnings
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from torchtpu import config

_SOURCES = [Path(__file__).parent / "csrc" / name
            for name in ("tpu_shim.cpp", "fast_launch.cpp", "fast_launch_key.cpp")]


PREBUILT = "torchtpu._shim"  # the extension setup.py builds into a wheel


def _cache_dir() -> Path:
    root = config.get("TORCHTPU_CACHE_DIR")
    import torch

    tag = f"torch{torch.__version__.split('+')[0]}-py{sys.version_info.major}{sys.version_info.minor}"
    path = Path(root) / "shim" / tag
    path.mkdir(parents=True, exist_ok=True)
    return path


# A build takes about 30 s; torch's build lock older than this was left by a build that was killed, and would make
# every later import wait on it forever.
STALE_LOCK_SECONDS = 600


def clear_stale_lock(build_dir: Path, max_age: float = STALE_LOCK_SECONDS) -> bool:
    """Removes `build_dir`/lock when it is older than `max_age` seconds (with a warning naming it)."""
    lock = build_dir / "lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age <= max_age:
        return False
    warnings.warn(f"torchtpu: removing the stale C++ shim build lock {lock} ({age:.0f} s old; a build was "
                  "interrupted)", RuntimeWarning, stacklevel=2)
    lock.unlink(missing_ok=True)
    return True


def _numpy_include() -> str:
    import numpy

    return numpy.get_include()


def _prebuilt() -> ModuleType | None:
    """The wheel's compiled shim, or None when there is none (an editable checkout) or it does not load."""
    if importlib.util.find_spec(PREBUILT) is None:
        return None
    try:
        return importlib.import_module(PREBUILT)
    except ImportError as exc:  # built against another torch, say: the JIT build below still works
        warnings.warn(f"torchtpu: the prebuilt C++ shim {PREBUILT} does not load ({exc}); building it from source "
                      "instead. Reinstall torchtpu for the installed torch to avoid this.", RuntimeWarning,
                      stacklevel=3)
        return None


@lru_cache(maxsize=1)
def native() -> ModuleType:
    """The compiled shim module: the wheel's, else built from csrc/ on first use (about 30 s) and cached."""
    module = _prebuilt()
    if module is not None:
        return module
    return _jit_build()


def _jit_build() -> ModuleType:
    from torch.utils import cpp_extension

    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        raise RuntimeError(
            f"torchtpu needs a C++ compiler to build its allocator shim once (this install has no prebuilt "
            f"{PREBUILT}), but '{compiler}' was not found on PATH. Install torchtpu from a wheel (`pip install "
            "torchtpu-*.whl`, which ships the built shim), or install g++ (e.g. `apt-get install g++`) or set CXX."
        )
    clear_stale_lock(_cache_dir())
    try:
        return cpp_extension.load(
            name="torchtpu_shim",
            sources=[str(p) for p in _SOURCES],
            build_directory=str(_cache_dir()),
            extra_cflags=["-O2"],
            extra_include_paths=[_numpy_include()],
            verbose=config.get("TORCHTPU_VERBOSE_BUILD"),
        )
    except Exception as exc:  # noqa: BLE001 - re-raised with the context a user needs
        raise RuntimeError(
            f"torchtpu could not build its C++ shim with '{compiler}' (cache: {_cache_dir()}): {exc}. "
            "Set TORCHTPU_VERBOSE_BUILD=1 to see the compiler output."
        ) from exc
