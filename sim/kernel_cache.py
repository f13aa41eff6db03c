"""Keeps numba's on-disk caches of the simulator's kernels in step with their sources.

numba's `cache=True` stamps a cached function with its own file's modification time and size only. A kernel that
calls a numba function of another module (sim/mxu_kernel.py calls mxu_round's `_round_loop` and inlines
numerics' `_round_bits_loop`) keeps its cached machine code when only the callee's file changes, so the old callee
runs: in a checkout, after a change of that kind, tests/sim/test_mxu_fma.py crashed the interpreter (segfault) until
the cache was removed, and a change that kept the memory layout would have run the old numerics silently. A wheel
install rewrites every file at once, so there only a checkout is at risk; the check is the same for both.

`check()` hashes every kernel source of sim/ and drivers/sim/ together and, where the hash differs from the one
recorded beside their caches, removes those folders' cached kernels before numba reads one (numba then compiles
them again, once). sim/numerics.py runs it when imported: every module with cached kernels imports numerics before
its kernels can be called, and numba reads a cache at a kernel's first call, not at import. (Not at `import
torchtpu.sim`: that import stays free of numba, which torchtpu.perfmodel relies on.)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STAMP = "torchtpu-kernels.sha1"
_FOLDERS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "drivers" / "sim")


def kernel_sources(folders: tuple[Path, ...] = _FOLDERS) -> list[Path]:
    """The Python files of `folders` (sim/ and drivers/sim/) that cache numba kernels on disk, in a fixed order."""
    this = Path(__file__).resolve()
    return [path for folder in folders for path in sorted(folder.glob("*.py"))
            if path != this and b"cache=True" in path.read_bytes()]


def digest(sources: list[Path]) -> str:
    """One hash over the sources' names and contents."""
    h = hashlib.sha1()
    for path in sources:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def cache_dirs(source_folder: Path) -> list[Path]:
    """Where numba keeps the caches of `source_folder`'s kernels: beside the sources (`__pycache__`), and under
    NUMBA_CACHE_DIR or numba's per-user folder when the sources' folder is not writable."""
    dirs = [source_folder / "__pycache__"]
    try:
        from numba.core import config
        from numba.core.caching import _CacheLocator
    except ImportError:  # numba moved its cache locators: the folder beside the sources is still checked
        return dirs
    sub = _CacheLocator.get_suitable_cache_subpath(str(source_folder / "x.py"))
    roots = [config.CACHE_DIR] if config.CACHE_DIR else []
    try:
        from numba.misc.appdirs import AppDirs

        roots.append(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    except ImportError:
        pass
    return dirs + [Path(root) / sub for root in roots]


def check(folders: tuple[Path, ...] = _FOLDERS) -> None:
    """Drops the cached kernels of `folders` (sim/ and drivers/sim/) where their sources changed since cached."""
    sources = kernel_sources(folders)
    want = digest(sources)
    stems = {path.stem for path in sources}
    for folder in folders:
        for cache in cache_dirs(folder):
            stamp = cache / STAMP
            try:
                if not cache.is_dir() or (stamp.is_file() and stamp.read_text() == want):
                    continue
                for entry in cache.iterdir():
                    if entry.suffix in (".nbi", ".nbc") and entry.name.split(".", 1)[0] in stems:
                        entry.unlink(missing_ok=True)
                tmp = cache / f"{STAMP}.{os.getpid()}"
                tmp.write_text(want)
                tmp.replace(stamp)
            except OSError:  # a read-only cache folder numba cannot write either: nothing of ours is cached there
                continue
