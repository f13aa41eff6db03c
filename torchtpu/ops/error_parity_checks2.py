"""CPU's own checks of invalid input that tpu made too late or not at all (issue 17, the schema fuzzer's error_class
group "tpu fails in its lowering or IR shape rule", fuzz seeds 2, 3, 4 and 48): tpu's dtype refusal table or its
lowering's IR shape rule raised first, with another exception class. Merged with the other `BOUND_CHECKS` by
ops/arg_order_checks.py, so they run before the dtype refusal and the lowering, in eager mode and for a compiled
graph's node (only `shape`, `ndim` and `dtype` are read). Each follows ATen's order for its op and stops where
ATen's next step reads the data or is already the refusal table's or the lowering's.

- linalg_lu_solve: linalg_lu_solve's meta in full (LU floating, LU/B dtypes, int32 pivots, squareCheckInputs,
  checkInputsSolver, the pivots' count and batch, B's batch broadcast against LU's).
- _linalg_svd: checkIsMatrix then checkFloatingOrComplex (a 0-d or 1-d input failed in the IR's svd rule).
- cholesky (with elements; its out= castable first), linalg_solve_triangular: squareCheckInputs /
  checkInputsSolver before the LAPACK kernel's dispatch.
- _cholesky_solve_helper: the kernel's dispatch on self (after its two column-major clones, which need matrices).
- _histogramdd_bin_edges / _from_bin_cts / _from_bin_tensors: the input's rank, then the bin edges' checks where
  CPU makes them before its dtype dispatch (a given range or no elements; the bin tensors' form always); with
  those, _from_bin_cts' linspace (bool) and histogram_cpu dispatch too.
- _embedding_bag_per_sample_weights_backward: the kernel's dispatch on grad (before its rank assert).
- grid_sampler_2d / 3d and their backwards: check_grid_sampler_common and the rank rule, then the kernel's
  dispatch on input (ops/grid_checks.py's shape rules; the modes' refusal stays the lowering's, after).
- _grouped_mm: mat_a's and mat_b's dtypes, then their ranks.
- _pdist_backward: self's and pdist's contiguity, the kernel's dispatch, then its reads (self.size(0), size(1),
  grad.stride(0), grad's and pdist's data as self's type).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops import operand_checks
from torchtpu.ops.arg_checks import dim_size, sizes_text
from torchtpu.ops.cpu_raise_checks import broadcast
from torchtpu.ops.grid_checks import check_grid_sampler
from torchtpu.ops.linalg_checks import check_lapack_dispatch, check_matrix, check_solve_triangular
from torchtpu.ops.tracing import aten_type_name

Bound = dict[str, Any]

_FLOATING = (torch.float32, torch.float64, torch.complex64, torch.complex128, torch.float16, torch.bfloat16)


def _lu_solve(a: Bound) -> None:  # TORCH_META_FUNC(linalg_lu_solve)
    lu, pivots, b, left = a["LU"], a["pivots"], a["B"], a.get("left", True)
    if lu.dtype not in _FLOATING:
        raise RuntimeError(f"torch.linalg.lu_solve: Expected a floating point or complex tensor as input. Got "
                           f"{aten_type_name(lu.dtype)}")
    if lu.dtype != b.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{aten_type_name(lu.dtype)} and B of type {aten_type_name(b.dtype)} instead")
    if pivots.dtype != torch.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    check_matrix(lu, "torch.linalg.lu_solve", floating=False)
    api = "linalg.lu_solve"
    if b.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor B must have at least 2 dimensions.")
    if (lu.shape[-2] != b.shape[-2]) if left else (lu.shape[-1] != b.shape[-1]):
        raise RuntimeError(f"{api}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'}"
                           f" ({lu.shape[-2]}x{lu.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    if lu.shape[-1] != dim_size(pivots.shape, -1):
        raise RuntimeError(f"{api}: Number of pivots per batch should be same as the dimension of the matrix")
    if list(lu.shape[:-1]) != list(pivots.shape):
        raise RuntimeError(f"{api}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {sizes_text(pivots.shape)} instead")
    broadcast(b.shape[:-2], lu.shape[:-2])  # _linalg_broadcast_batch_dims(B, LU)


def _svd(a: Bound) -> None:  # TORCH_META_FUNC(_linalg_svd): checkIsMatrix, checkFloatingOrComplex
    check_matrix(a["A"], "linalg.svd", square=False)


def _cholesky(a: Bound) -> None:  # cholesky: squareCheckInputs before the "cholesky_cpu" dispatch
    x, out = a["self"], a.get("out")
    if out is not None and not torch.can_cast(x.dtype, out.dtype):  # cholesky_out's checkLinalgCompatibleDtype
        raise RuntimeError(f"cholesky: Expected result to be safely castable from {aten_type_name(x.dtype)} dtype, "
                           f"but got result with dtype {aten_type_name(out.dtype)}")
    if _numel(x) > 0:  # no elements: an empty result before any check
        check_matrix(x, "cholesky", floating=False)


def _solve_triangular(a: Bound) -> None:  # linalg_solve_triangular_out: checkInputsSolver first
    check_solve_triangular(a["self"], a["B"], a.get("left", True))


def _cholesky_solve_helper(a: Bound) -> None:  # cloneBatchedColumnMajor of both (mT), then the dispatch on self
    if a["self"].ndim >= 2 and a["A"].ndim >= 2:
        check_lapack_dispatch(a["self"], "cholesky_solve_cpu")


def _numel(t: Any) -> int:
    return math.prod(int(s) for s in t.shape)


def _edges_before_dispatch(a: Bound) -> bool:
    """histogramdd_bin_edges_out's select_outer_bin_edges dispatches on the input (min/max of its data) only
    without a range and with elements; else the edges' checks come before any dispatch."""
    x = a["self"]
    if x.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if a.get("range") is None and _numel(x) > 0:  # AT_DISPATCH_FLOATING_TYPES (float and double only)
        if x.dtype not in (torch.float32, torch.float64):
            raise NotImplementedError(f"\"histogramdd\" not implemented for '{aten_type_name(x.dtype)}'")
        return False
    operand_checks._histogramdd_outer_edges(x, a.get("range"), list(a["bins"]))
    return True


def _histogramdd_bin_edges(a: Bound) -> None:  # allocate_bin_edges_tensors, histogramdd_bin_edges_out
    _edges_before_dispatch(a)


def _histogramdd_bin_cts(a: Bound) -> None:
    """Then the edges' linspace_out (refuses bool), histogramdd_check_inputs, histogramdd_prepare_out's bin counts
    and histogramdd_stub's dispatch, AT_DISPATCH_FLOATING_TYPES_AND2(BFloat16, Half) "histogram_cpu" (an integer
    or complex input with a range was computed; fuzz seed 69: the .out overload's dtype check came first)."""
    x = a["self"]
    if not _edges_before_dispatch(a):
        return
    counts = list(a["bins"])
    if x.dtype == torch.bool and any(ct >= 1 for ct in counts):  # linspace of 1 step fills, of 0 does nothing
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    operand_checks._histogramdd_inputs(x, [(x.dtype, 1, ct + 1) for ct in counts], a.get("weight"))
    operand_checks._histogramdd_bin_counts(counts)
    if x.dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{aten_type_name(x.dtype)}'")


def _histogramdd_bin_tensors(a: Bound) -> None:  # histogramdd_check_inputs before the "histogram_cpu" dispatch
    x = a["self"]
    if x.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    operand_checks._histogramdd_inputs(x, [(b.dtype, b.ndim, _numel(b)) for b in a["bins"]], a.get("weight"))


def _per_sample_weights_backward(a: Bound) -> None:  # AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16) on grad
    grad = a["grad"]
    if grad.dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        raise NotImplementedError('"_embedding_bag_per_sample_weights_backward_cpu" not implemented for '
                                  f"'{aten_type_name(grad.dtype)}'")


_GRID_KERNELS = {(2, False): "grid_sampler_2d_cpu_kernel_impl", (3, False): "grid_sampler3d_cpu",
                 (2, True): "grid_sampler_2d_backward_cpu_kernel_impl", (3, True): "grid_sampler_3d_backward_cpu"}


def _grid_sampler(nd: int, backward: bool = False) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # check_grid_sampler_common, check_grid_sampler_{2,3}d, then the dispatch on input
        mode, x = a["interpolation_mode"], a["input"]
        check_grid_sampler(x.shape, a["grid"].shape, nd, mode if mode in (0, 1, 2) else 0)
        if x.dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):  # before the modes' refusal
            raise NotImplementedError(f"\"{_GRID_KERNELS[nd, backward]}\" not implemented for "
                                      f"'{aten_type_name(x.dtype)}'")
    return check


def _grouped_mm(a: Bound) -> None:  # _grouped_mm_validate_inputs: the dtypes, then the ranks
    mats = (("mat_a", a["self"]), ("mat_b", a["mat2"]))
    for name, m in mats:
        if m.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{aten_type_name(m.dtype)}")
    for name, m in mats:
        if m.ndim not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")


def _pdist_backward(a: Bound) -> None:  # _pdist_backward: contiguity, then the stub's dispatch, then its size reads
    x, p = a["self"], a["p"]
    for name in ("self", "pdist"):
        contiguous = getattr(a[name], "is_contiguous", None)
        if isinstance(a[name], torch.Tensor) and contiguous is not None and not contiguous():
            raise RuntimeError(f"_pdist_backward requires {name} to be contiguous")
    if x.dtype not in (torch.float32, torch.float64):
        raise NotImplementedError(f"\"pdist_backward\" not implemented for '{aten_type_name(x.dtype)}'")
    if not (p == 0 or _numel(a["grad"]) == 0 or _numel(x) == 0):  # else the result is filled with zeros
        dim_size(x.shape, 0)
        dim_size(x.shape, 1)
        dim_size(a["grad"].shape, 0)  # grad.stride(0), then grad's and pdist's data as self's type
        for t in (a["grad"], a["pdist"]):
            if t.dtype != x.dtype:
                raise RuntimeError(f"expected scalar type {aten_type_name(x.dtype)} but found "
                                   f"{aten_type_name(t.dtype)}")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "linalg_lu_solve": _lu_solve, "_linalg_svd": _svd, "cholesky": _cholesky,
    "linalg_solve_triangular": _solve_triangular, "_cholesky_solve_helper": _cholesky_solve_helper,
    "_histogramdd_bin_edges": _histogramdd_bin_edges, "_histogramdd_from_bin_cts": _histogramdd_bin_cts,
    "_histogramdd_from_bin_tensors": _histogramdd_bin_tensors,
    "_embedding_bag_per_sample_weights_backward": _per_sample_weights_backward,
    "grid_sampler_2d": _grid_sampler(2), "grid_sampler_3d": _grid_sampler(3),
    "grid_sampler_2d_backward": _grid_sampler(2, True), "grid_sampler_3d_backward": _grid_sampler(3, True),
    "_grouped_mm": _grouped_mm, "_pdist_backward": _pdist_backward,
}
