"""ATen's argument checks of the LAPACK-style ops, made before their lowerings (ops/linalg.py) in ATen's order,
with its exception class and words (squareCheckInputs, checkFloatingOrComplex, linalg_qr's mode check), and the
`check_errors=True` of the `_ex` factorizations (linalg.cholesky_ex, linalg.inv_ex): ATen raises
torch.linalg.LinAlgError from the info tensor, which needs the values, so it is a `prepare` step on the real
tensors (a compiled graph with check_errors=True runs that node op by op)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops.tracing import Sym, aten_type_name

_FLOATING = (torch.float32, torch.float64, torch.complex64, torch.complex128, torch.float16, torch.bfloat16)


def check_matrix(a: Sym, api: str, *, square: bool = True, floating: bool = True) -> None:
    """squareCheckInputs (at least 2 dims; square) then checkFloatingOrComplex, as ATen's meta functions."""
    if a.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{api}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    if floating and a.dtype not in _FLOATING:
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{aten_type_name(a.dtype)}")


def check_qr_mode(mode: str) -> None:
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")


def raise_from_info(op: Any, api: str) -> Callable[[tuple, dict[str, Any]], tuple[tuple, dict[str, Any]]]:
    """A `prepare` step: with check_errors=True, runs `op` unchecked, raises ATen's LinAlgError from its info
    (the last output) as torch._linalg_check_errors words it, and lets the lowering run unchecked."""

    def prepare(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        if not kwargs.get("check_errors", False):
            return args, kwargs
        unchecked = {**kwargs, "check_errors": False}
        info = op(*args, **unchecked)[-1]
        torch._linalg_check_errors(info, api, is_matrix=args[0].dim() == 2)
        return args, unchecked

    return prepare
