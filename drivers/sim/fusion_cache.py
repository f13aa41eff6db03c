"""The fused loops' compile cache (fusion.py): a generated loop's source imported once per process, from a file named
by its hash under TORCHTPU_CACHE_DIR/sim_fusion, where numba caches its machine code beside it."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable

_CACHE: dict[str, Callable[..., None]] = {}
_LOCK = threading.Lock()


def compile_source(source: str) -> Callable[..., None]:
    """The numba function `fused` of `source`, from the in-process cache, else imported from a file named by the
    source's hash under TORCHTPU_CACHE_DIR/sim_fusion (numba caches its machine code beside it)."""
    fn = _CACHE.get(source)
    if fn is not None:
        return fn
    with _LOCK:
        fn = _CACHE.get(source)
        if fn is None:
            fn = _CACHE[source] = _import(source)
    return fn


def _import(source: str) -> Callable[..., None]:
    from torchtpu.drivers import config

    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    folder = os.path.join(config.get("TORCHTPU_CACHE_DIR"), "sim_fusion")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"fused_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)  # atomic: another process sees the whole file or none
    name = f"_torchtpu_sim_fused_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.fused
