"""Loads the C++ shim (allocator, device guard and view ops for PrivateUse1): the module a wheel install built
(`torchtpu._shim`, setup.py), else a JIT build from csrc/ (editable checkouts; built once, then cached)."""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.util
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from torchtpu import config

_SOURCES = sorted((Path(__file__).parent / "csrc").glob("*.cpp"))  # every C++ file of the shim (setup.py's too)


PREBUILT = "torchtpu._shim"  # the extension setup.py builds into a wheel
# A release build, as torch's own: without NDEBUG, pybind11 checks that the GIL is held on every reference count
# change (~5% of each eager op's host time). setup.py passes the same flags.
SHIM_CFLAGS = ["-O2", "-DNDEBUG"]


def _cache_dir() -> Path:
    root = config.get("TORCHTPU_CACHE_DIR")
    import torch

    # The build depends on the torch install and the numpy headers it compiles against, not only their versions:
    # two environments sharing one cache would otherwise rebuild over each other's shim on every import.
    origin = hashlib.sha1("\0".join([str(Path(torch.__file__).resolve().parent), _numpy_include(),
                                      *SHIM_CFLAGS]).encode()).hexdigest()[:10]
    tag = f"torch{torch.__version__.split('+')[0]}-py{sys.version_info.major}{sys.version_info.minor}-{origin}"
    path = Path(root) / "shim" / tag
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def build_guard(build_dir: Path) -> Iterator[None]:
    """Holds this cache's build lock: an flock the kernel releases when its holder exits, however it exits.

    torch's own build lock (`build_dir`/lock, a plain file) outlives a build that was killed, and would make every
    later import wait on it forever. Every torchtpu build takes this flock first, so a torch lock found while
    holding it was left by a dead build: it is removed, with a warning naming it."""
    with open(build_dir / "torchtpu-build.flock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # waits only while a live process builds
        try:
            stale = build_dir / "lock"
            if stale.exists():
                warnings.warn(f"torchtpu: removing the C++ shim build lock {stale} that an interrupted build left",
                              RuntimeWarning, stacklevel=3)
                stale.unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    try:
        with build_guard(_cache_dir()):
            return cpp_extension.load(
                name="torchtpu_shim",
                sources=[str(p) for p in _SOURCES],
                build_directory=str(_cache_dir()),
                extra_cflags=SHIM_CFLAGS,
                extra_include_paths=[_numpy_include()],
                verbose=config.get("TORCHTPU_VERBOSE_BUILD"),
            )
    except Exception as exc:  # noqa: BLE001 - re-raised with the context a user needs
        raise RuntimeError(
            f"torchtpu could not build its C++ shim with '{compiler}' (cache: {_cache_dir()}): {exc}. "
            "Set TORCHTPU_VERBOSE_BUILD=1 to see the compiler output."
        ) from exc
