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


def check_matrix(a: Sym, api: str, *, square: bool = True, floating: bool = True, low_precision: bool = True
                 ) -> None:
    """squareCheckInputs (at least 2 dims; square) then checkFloatingOrComplex, as ATen's meta functions."""
    if a.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{api}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    if floating and a.dtype not in _FLOATING:
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{aten_type_name(a.dtype)}")
    if not low_precision and a.dtype in (torch.float16, torch.bfloat16):
        raise RuntimeError(f"{api}: Low precision dtypes not supported. Got {aten_type_name(a.dtype)}")


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


def _type(t: Any) -> str:
    return aten_type_name(t.dtype)


def _lapack(dtype: torch.dtype) -> bool:
    return dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128)


def check_lapack_dispatch(a: Any, kernel: str) -> None:
    """AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES of a CPU LAPACK kernel (the deprecated cholesky's "cholesky_cpu"):
    NotImplementedError for any other dtype (integers, bool, float16, bfloat16), where tpu would compute."""
    if not _lapack(a.dtype):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type(a)}\'')


def check_geqrf(a: Sym) -> None:
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")


def check_eig(a: Sym) -> None:
    """linalg_eig's toComplexType of an integral or bool input (before any kernel, on every device)."""
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {_type(a)}")


def check_lstsq(a: Sym, b: Sym, driver: str | None) -> None:
    """linalg_lstsq's checks, in ATen's order."""
    api = "torch.linalg.lstsq"
    if a.ndim < 2:
        raise RuntimeError(f"{api}: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError(f"{api}: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{api}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{_type(a)} and other's dtype {_type(b)}")
    diff = a.ndim - b.ndim
    if not 0 <= diff <= 1:
        raise RuntimeError(f"{api}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if a.shape[-2] != (b.shape[-1] if diff else b.shape[-2]):
        raise RuntimeError(f"{api}: input.size(-2) should match other.size({-1 if diff else -2})")
    if driver is not None and driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{api}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if not _lapack(a.dtype):
        raise RuntimeError("This function doesn't handle types other than float and double")


def check_solve_triangular(a: Sym, b: Sym, left: bool) -> None:
    """checkInputsSolver (linalg.solve_triangular)."""
    api = "linalg.solve_triangular"
    check_matrix(a, api, floating=False)
    if b.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor B must have at least 2 dimensions.")
    if (a.shape[-2] != b.shape[-2]) if left else (a.shape[-1] != b.shape[-1]):
        raise RuntimeError(f"{api}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'}"
                           f" ({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")


def check_triangular_solve(b: Sym, a: Sym) -> None:
    """triangular_solve's meta and linearSolveCheckInputs."""
    for name, t in (("b", b), ("A", a)):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.ndim} dimensions instead")
    if b.dtype != a.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type(b)} and A of type "
                           f"{_type(a)} instead.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {a.shape[-2]} by {a.shape[-1]} "
                           "matrices")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {a.shape[-1]} by "
                           f"{a.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def check_householder_product(a: Sym, tau: Sym) -> None:
    api = "torch.linalg.householder_product"
    if a.ndim < 2:
        raise RuntimeError(f"{api}: input must have at least 2 dimensions.")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError(f"{api}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim < 1 or a.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{api}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if a.ndim - tau.ndim != 1:
        raise RuntimeError(f"{api}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {a.ndim}")
    if a.ndim > 2 and tuple(tau.shape[:-1]) != tuple(a.shape[:-2]):
        raise RuntimeError(f"{api}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype != a.dtype:
        raise RuntimeError(f"{api}: tau dtype {_type(tau)} does not match input dtype {_type(a)}")


def check_ormqr(a: Sym, tau: Sym, other: Sym, left: bool) -> None:
    """ormqr's checks in the order CPU (torch 2.13) makes them (probed: shapes, then ranks, batches, dtypes)."""
    api = "torch.ormqr"
    if a.ndim < 2:
        raise RuntimeError(f"{api}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{api}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != a.shape[-2]:
        raise RuntimeError(f"{api}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.ndim < 1 or tau.shape[-1] != min(a.shape[-2], a.shape[-1]):
        raise RuntimeError(f"{api}: tau.shape[-1] must be equal to min(other.shape[-2], input.shape[-1])")
    if a.ndim - tau.ndim != 1:
        raise RuntimeError(f"{api}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {a.ndim}")
    if a.ndim != other.ndim:
        raise RuntimeError(f"{api}: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {a.ndim}")
    for name, batch in (("tau", tau.shape[:-1]), ("other", other.shape[:-2])):
        if a.ndim > 2 and tuple(batch) != tuple(a.shape[:-2]):
            raise RuntimeError(f"{api}: Expected batch dimensions of {name} to be equal to input.shape[:-2], but "
                               f"got {list(batch)}")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype != a.dtype:
            raise RuntimeError(f"{api}: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{_type(a)} and {name} has dtype {_type(t)}")


CROSS_WRAPPED = frozenset({torch.ops.aten.linalg_cross})


def wrap_cross(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """linalg_cross's decomposition behind ATen's meta checks and its kernel's same-dtype check."""
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**dict(zip(names, args)), **kwargs}
        x, y, dim = bound["self"], bound["other"], bound.get("dim", -1)
        if x.dim() == y.dim() and x.dim() > 0 and -x.dim() <= dim < x.dim():
            if x.shape[dim] != 3 or y.shape[dim] != 3:
                raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {x.shape[dim]} "
                                   f"and {y.shape[dim]}")
            if x.dtype != y.dtype:
                raise RuntimeError(f"expected scalar type {_type(x)} but found {_type(y)}")
        return fn(*args, **kwargs)

    return kernel


def svd_nan(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A `prepare` step of _linalg_svd (it reads the values): LAPACK's gesdd refuses a matrix with a NaN (info -4,
    Reference LAPACK 3.10+), which ATen raises as torch.linalg.LinAlgError naming the first such batch element
    (an infinite element without a NaN computes). Returns new argument tuples, so that a call is never served
    from the launch cache without this check."""
    a = args[0] if args else kwargs.get("A")
    if (isinstance(a, torch.Tensor) and a.dim() >= 2 and a.numel() and a.dtype in _FLOATING[:4]
            and bool(a.isnan().any())):
        bad = a.isnan().flatten(-2).any(-1).cpu()
        info = torch.where(bad, -4, 0).to(torch.int32)
        torch._linalg_check_errors(info, "linalg.svd", is_matrix=a.dim() == 2)
    return tuple(args), dict(kwargs)

