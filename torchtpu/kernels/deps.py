"""The optional packages custom kernels need, imported with an error that names the extra to install."""

from __future__ import annotations

from typing import Any

import torch

EXTRAS = {"jax": "kernels", "helion": "helion"}


class MissingDependency(ImportError):
    """jax (extra `kernels`) or helion (extra `helion`) is not installed."""


def require(module: str) -> Any:
    """`import module`, or MissingDependency naming the torchtpu extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top, "kernels")
        raise MissingDependency(
            f"torchtpu.kernels needs {top} ({exc.msg}); install it with: pip install 'torchtpu[{extra}]'") from None


def jax() -> Any:
    return require("jax")


TORCH_TO_JAX = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
                torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
                torch.bool: "bool", torch.float64: "float64", torch.int64: "int64"}
JAX_TO_TORCH = {v: k for k, v in TORCH_TO_JAX.items()}
WIDE = (torch.float64, torch.int64)  # JAX narrows them to 32 bits unless jax_enable_x64 is on


def jax_dtype(dtype: torch.dtype, op: str) -> str:
    """The JAX dtype name of a torch dtype a kernel may take; refuses those JAX would change."""
    name = TORCH_TO_JAX.get(dtype)
    if name is None or (dtype in WIDE and not jax().config.jax_enable_x64):
        valid = ", ".join(str(d).replace("torch.", "") for d in TORCH_TO_JAX if d not in WIDE)
        raise TypeError(f"kernel {op}: a {dtype} tensor cannot be a JAX kernel's operand (JAX would narrow or "
                        f"refuse it); valid dtypes: {valid} (64-bit ones with jax_enable_x64)")
    return name


def torch_dtype(dtype: Any, op: str) -> torch.dtype:
    name = str(dtype)
    if name not in JAX_TO_TORCH:
        raise TypeError(f"kernel {op}: it returns a {name} array, which has no torch dtype here; valid: "
                        f"{', '.join(JAX_TO_TORCH)}")
    return JAX_TO_TORCH[name]
