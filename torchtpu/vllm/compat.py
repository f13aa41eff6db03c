"""Workarounds for vLLM 0.32 bugs that its own CPU platform hits as well as ours (imports nothing from torchtpu,
so the CPU baseline process can load it by path)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def without_llvmlite() -> Iterator[None]:
    """vLLM 0.32's `triton_utils.dispatcher._rebind_kernels` scans every module in sys.modules and dies on llvmlite's
    `_lib_fn_wrapper` (AttributeError: '_lib_fn_wrapper' object has no attribute 'get') whenever numba is imported
    (by our simulator, or by vLLM's own n-gram code). llvmlite/numba hold no vLLM kernels: hide them from the scan."""
    hidden = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("llvmlite", "numba")}
    for k in hidden:
        del sys.modules[k]
    try:
        yield
    finally:
        sys.modules.update(hidden)


def patch_kernel_registration() -> None:
    """Wraps `vllm.triton_utils.dispatcher.register_kernels` in `without_llvmlite` (any platform's overrides)."""
    from vllm.triton_utils import dispatcher

    original = dispatcher.register_kernels
    if getattr(original, "_torchtpu_wrapped", False):
        return

    def register_kernels(overrides):  # noqa: ANN001, ANN202 - vLLM's signature
        with without_llvmlite():
            return original(overrides)

    register_kernels._torchtpu_wrapped = True  # type: ignore[attr-defined]
    dispatcher.register_kernels = register_kernels
