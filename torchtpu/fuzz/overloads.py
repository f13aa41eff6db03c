"""Which ATen overloads the fuzzer calls: every overload torchtpu registers on PrivateUse1 (lowerings, their
in-place and out= siblings, accepted decompositions, the hand-written kernels), read from the registry."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

# Overloads whose outputs hold undefined values (compared by shape and dtype only).
UNDEFINED_VALUES = ("aten::empty*", "aten::new_empty*", "aten::empty_like*", "aten::resize*", "aten::_resize*",
                    "aten::empty_strided*", "aten::set_*", "aten::_copy_from_and_resize*")
# Overloads whose results are one of several valid answers (signs and phases of QR/SVD/eigen factors): compared by
# shape and dtype only.
NONUNIQUE = ("aten::geqrf*", "aten::linalg_qr*", "aten::_linalg_svd*", "aten::linalg_svd*", "aten::svd*",
             "aten::linalg_eig*", "aten::_linalg_eigh*", "aten::linalg_eigh*", "aten::_linalg_eigvals*",
             "aten::linalg_householder_product*", "aten::ormqr*", "aten::linalg_lstsq*")
# Overloads not called, with the reason.
EXCLUDED = {
    "aten::_local_scalar_dense*": "needs a one-element tensor; covered by .item() everywhere",
    "aten::set_.source_Storage*": "takes a Storage (the generator makes none)",
    "aten::record_stream*": "takes a Stream",
    "torchtpu::ragged_paged_attention*": "our own op, no CPU kernel to compare with: checked against a per-request "
                                         "float64 reference in tests/test_ragged_paged_attention.py",
    # CPU PyTorch itself crashes on some random calls of these (the reference cannot run them in-process):
    "aten::native_batch_norm_backward*": "CPU segfaults (torch 2.13) with train=True and save_mean/save_invstd None",
}



def _integer_tensors(call: Any) -> bool:
    return any(not (t.base.is_floating_point() or t.base.is_complex()) for t in call.args + list(call.kwargs.values())
               if hasattr(t, "base") and isinstance(t.base, torch.Tensor) and t.base.dim() > 0)


def _integer_beta_may_be_zero(beta: Any) -> bool:
    """Whether a float cast to an integer dtype may give 0: |beta| < 1, NaN or inf (undefined casts), or a
    multiple of 256 (wraps to 0 in uint8/int8; a few calls wider dtypes could run are skipped with them)."""
    beta = float(beta)
    return not math.isfinite(beta) or abs(beta) < 1 or int(beta) % 256 == 0


def _narrower_logcumsumexp_out(call: Any) -> bool:
    """_logcumsumexp.out with an out of a narrower dtype than self's, for a self with elements: CPU's kernel
    (cpu_cum_base_kernel, all dtypes taken as self's) writes self's elements into out's smaller buffer."""
    x, out = (call.args[0] if call.args else None), call.kwargs.get("out")
    if not (hasattr(x, "base") and hasattr(out, "base")):
        return False
    return x.base.numel() > 0 and out.base.element_size() < x.base.element_size()


# Calls CPU PyTorch itself crashes or hangs on (the process aborts inside the CPU kernel or never returns, so
# neither the reference nor the comparison can run in-process): overload pattern -> (which calls, reason). The fuzzer
# counts them as "cpu_crash_skipped" and calls the overload's other samples as usual.
def _eval_without_stats(call: Any) -> bool:
    return len(call.args) > 3 and call.args[3] is False


def _no_running_stats(call: Any) -> bool:
    return len(call.args) > 4 and (call.args[3] is None or call.args[4] is None)


_BATCH_NORM_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _batch_norm_backward_unchecked(call: Any) -> bool:
    """batch_norm_backward calls CPU's kernel (Normalization.cpp batch_norm_backward_cpu_template) crashes on, for a
    floating input of 2+ dims (else CPU's dim or dtype check raises first): one with no elements (SIGFPE: fuzz seeds
    74 and 112), or without the stats its mode reads (running ones for update=False, saved ones for update=True)
    and the other operands of input's dtype (mixed dtypes take another path), which it reads unchecked. Some of these
    fail a check on another operand first (a parameter that is not 1-D where input or grad_out is not contiguous);
    checked in a subprocess for seeds 0-199, the rule names every crashing call and skips 39 of 600 that raise."""
    if len(call.args) <= 7 or not isinstance(call.args[7], bool) or not hasattr(call.args[1], "base"):
        return False
    x = call.args[1].materialize("cpu")
    if x.dim() < 2 or x.dtype not in _BATCH_NORM_DTYPES:
        return False
    if x.numel() == 0:
        return True
    first = 5 if call.args[7] else 3
    if call.args[first] is not None and call.args[first + 1] is not None:
        return False
    return all(a.base.dtype == x.dtype for a in (call.args[0], *call.args[2:7]) if hasattr(a, "base"))


# The batch norm forward overloads whose arguments 3 and 4 are running_mean and running_var.
_BATCH_NORM_WITH_STATS = frozenset({"native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
                                    "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
                                    "_batch_norm_no_update"})


def _empty_running_stats(call: Any) -> bool:
    """A batch norm forward CPU's kernel (batch_norm_cpu) reads running stats of no elements in unchecked, training or
    not: a floating input of 2+ dims with elements, running_mean or running_var of shape [0], and the 1-D (or 0-d:
    fuzz seed 33 call 2, a 0-d bias) parameters of input's dtype (or all float32 for a float16/bfloat16 input:
    ATen's mixed type; other dtypes raise first)."""
    if call.op._schema.name.removeprefix("aten::") not in _BATCH_NORM_WITH_STATS or len(call.args) < 5:
        return False
    if not all(hasattr(a, "base") for a in call.args[3:5]) or not hasattr(call.args[0], "base"):
        return False
    x = call.args[0].materialize("cpu")
    if x.dim() < 2 or x.numel() == 0 or x.dtype not in _BATCH_NORM_DTYPES:
        return False
    params = [a.materialize("cpu") for a in call.args[1:5] if hasattr(a, "base")]
    if any(p.dim() > 1 for p in params) or not any(p.numel() == 0 for p in params[-2:]):
        return False
    mixed = x.dtype in (torch.float16, torch.bfloat16) and all(p.dtype == torch.float32 for p in params)
    return mixed or all(p.dtype == x.dtype for p in params)


def _pool_indices_out_of_plane(call: Any) -> bool:
    """Max-pool backward's `indices` (the int64 tensor argument) outside [0, input plane size)."""
    pooled = 3 if "3d" in str(call.op) else 2
    inputs = [a.materialize("cpu") for a in call.args if hasattr(a, "base") and a.base.is_floating_point()]
    indices = [a.materialize("cpu") for a in call.args if hasattr(a, "base") and a.base.dtype == torch.int64]
    if len(inputs) < 2 or not indices or indices[0].numel() == 0:
        return False
    plane = 1
    for size in inputs[1].shape[-pooled:]:
        plane *= size
    return bool((indices[0] < 0).any() or (indices[0] >= plane).any())


def _values(arg: Any) -> torch.Tensor:
    """A tensor or number argument's values as float64 (magnitudes of complex ones; empty for anything else)."""
    if hasattr(arg, "base"):
        t = arg.materialize("cpu")
    else:
        t = torch.tensor(arg) if isinstance(arg, int | float | complex) else torch.empty(0)
    return (t.abs() if t.is_complex() else t).double()


def _polynomial_loops_forever(call: Any) -> bool:
    """ATen's orthogonal polynomials run their recurrence n times per element (Chebyshev only outside (-1, 1)):
    a degree past POLY_LIMIT keeps CPU busy for hours."""
    from torchtpu.drivers.ir_lowerings_polynomials import POLY_LIMIT

    if len(call.args) < 2 or isinstance(call.args[0], bool) or isinstance(call.args[1], bool):
        return False
    x, n = _values(call.args[0]), _values(call.args[1])
    if n.numel() == 0 or x.numel() == 0 or not bool((n.nan_to_num(0.0).abs() > POLY_LIMIT).any()):
        return False
    name = str(call.op)
    if "chebyshev" not in name:
        return True
    return bool(((x + x - 1.0) if "shifted" in name else x).abs().ge(1.0).any())



def _cholesky_solve_unchecked(call: Any) -> bool:
    """Whether the operands are not what torch.cholesky_solve passes its helper: both at least 2-D, A square,
    B's rows A's order, batch dimensions equal (it broadcasts them first)."""
    tensors = [a.materialize("cpu") for a in call.args[:2] if hasattr(a, "base")]
    if len(tensors) < 2:
        return False
    b, a = tensors
    return (b.dim() < 2 or a.dim() < 2 or a.shape[-1] != a.shape[-2] or b.shape[-2] != a.shape[-1]
            or b.shape[:-2] != a.shape[:-2])

def _embedding_rows_out_of_range(call: Any) -> bool:
    """Whether embedding_dense_backward's indices hold a row outside [0, num_weights)."""
    if len(call.args) < 3 or not hasattr(call.args[1], "base") or not isinstance(call.args[2], int):
        return False
    indices = call.args[1].materialize("cpu")
    return indices.numel() > 0 and bool(((indices < 0) | (indices >= call.args[2])).any())


def _weight_norm_unchecked(call: Any) -> bool:
    """_weight_norm_g_mismatch, or v of no elements (the kernels divide by a size of 0 or never end)."""
    if _weight_norm_g_mismatch(call):
        return True
    return bool(call.args) and hasattr(call.args[0], "base") and call.args[0].materialize("cpu").numel() == 0


def _weight_norm_g_mismatch(call: Any) -> bool:
    """Whether _weight_norm_interface's g has other than one element per slice of v along dim."""
    if len(call.args) < 2 or not all(hasattr(a, "base") for a in call.args[:2]):
        return False
    v, g = (a.materialize("cpu") for a in call.args[:2])
    dim = call.args[2] if len(call.args) > 2 and isinstance(call.args[2], int) else 0
    if dim == -1:
        return g.numel() != 1
    return not -v.dim() <= dim < max(v.dim(), 1) or g.numel() != (v.shape[dim] if v.dim() else 1)


def _adaptive_avg_grad_planes_overflow(call: Any) -> bool:
    """Whether _adaptive_avg_pool{2,3}d_backward's grad_output has more planes (leading dims flattened) than self,
    or (3d, whose result is not zeroed first) fewer."""
    if len(call.args) < 2 or not all(hasattr(a, "base") for a in call.args[:2]):
        return False
    nd = 3 if "pool3d" in call.op._schema.name else 2
    grad, self = (a.materialize("cpu") for a in call.args[:2])
    if grad.dim() != self.dim() or self.dim() <= nd:
        return False
    have, want = math.prod(grad.shape[:-nd]), math.prod(self.shape[:-nd])
    return have > want or (nd == 3 and have < want)


def _avg_grad_batch_mismatch(call: Any) -> bool:
    """Whether avg_pool{2,3}d_backward's batched self (4-D / 5-D) and grad_output have different batch sizes."""
    if len(call.args) < 2 or not all(hasattr(a, "base") for a in call.args[:2]):
        return False
    nd = 3 if "pool3d" in call.op._schema.name else 2
    grad, self = (a.materialize("cpu") for a in call.args[:2])
    return self.dim() == nd + 2 and grad.dim() == self.dim() and grad.shape[0] != self.shape[0]


def _c2r_size_off(call: Any) -> bool:
    """Whether _fft_c2r's input has a last transformed dim other than last_dim_size // 2 + 1 or last_dim_size."""
    x, dims, size = call.args[0], call.args[1], call.args[3]
    if not hasattr(x, "base") or not isinstance(dims, list | tuple) or not dims or not isinstance(dims[-1], int):
        return False
    t = x.materialize("cpu")
    if t.numel() == 0 or not -t.dim() <= dims[-1] < max(t.dim(), 1):
        return False
    return t.shape[dims[-1]] not in (size // 2 + 1, size) if t.dim() else False


def _c_gcd(a: int, b: int, lo: int) -> int | None:
    """ATen's calc_gcd in C's integers whose minimum is `lo` (abs wraps, % truncates); None where a % traps
    (lo % -1)."""
    a, b = (lo if v == lo else abs(v) for v in (a, b))
    while a != 0:
        if a == -1 and b == lo:
            return None
        quotient = abs(b) // abs(a) * (-1 if (a < 0) != (b < 0) else 1)
        a, b = b - quotient * a, a
    return b


def _lcm_divides_min_by_minus_one(call: Any) -> bool:
    """Whether lcm's operands (common dtype int32/int64) hold a pair whose calc_gcd is -1 (or traps) with self's
    element the type's minimum: calc_lcm's a / g is then INT_MIN / -1, which traps (SIGFPE) on x86."""
    if len(call.args) < 2 or not all(hasattr(a, "base") for a in call.args[:2]):
        return False
    a, b = (x.materialize("cpu") for x in call.args[:2])
    common = torch.promote_types(a.dtype, b.dtype)
    if common not in (torch.int32, torch.int64):
        return False
    lo = torch.iinfo(common).min
    try:
        a, b = torch.broadcast_tensors(a.to(common), b.to(common))
    except RuntimeError:
        return False
    return any(_c_gcd(lo, int(v), lo) in (-1, None) for v in b[a == lo].unique().tolist())


def _softmax_backward_empty_grad(call: Any) -> bool:
    """Whether a (log_)softmax backward's grad_output is empty along a dim other than `dim` while output has another
    shape: CPU's host_softmax_backward sizes its loop from both and divides by a zero inner size (SIGFPE)."""
    if len(call.args) < 3 or not all(hasattr(a, "base") for a in call.args[:2]):
        return False
    grad, output = (x.materialize("cpu") for x in call.args[:2])
    if grad.numel() or grad.shape == output.shape or not grad.dim() or not isinstance(call.args[2], int):
        return False
    dim = call.args[2]
    return -grad.dim() <= dim < grad.dim() and grad.shape[dim] != 0


def _fused_optim_unchecked(call: Any) -> bool:
    """Whether a fused optimizer step (_fused_sgd_ / _fused_adam_ / _fused_adamw_) whose lists CPU's length checks
    pass holds a grad or state tensor of another shape than its param, or a non-contiguous one: CPU's kernels read
    param.numel() elements from each data_ptr unchecked (FusedSGDKernel.cpp, FusedAdamKernel.cpp)."""
    lists = [a for a in call.args if isinstance(a, list | tuple)]
    if not lists or not all(hasattr(t, "base") for group in lists for t in group):
        return False
    params = lists[0]
    adam = "adam" in call.op._schema.name
    per_param = lists[1:5] if adam else lists[1:3]  # adam's state_steps are read as one number each
    if adam and not call.kwargs.get("amsgrad", False):
        per_param = per_param[:3]
    elif not adam and call.kwargs.get("momentum", 0.0) == 0.0:
        per_param = per_param[:1]
    if any(len(group) != len(params) for group in per_param):
        return False  # CPU's list-length checks raise first
    for i, p in enumerate(params):
        tensors = [a.materialize("cpu") for a in [p] + [group[i] for group in per_param]]
        if any(t.shape != tensors[0].shape or not t.is_contiguous() for t in tensors):
            return True
    return False


CPU_CRASHES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "aten::special_*_polynomial_*": (
        _polynomial_loops_forever,
        "CPU hangs: ATen's recurrence runs n steps per element, with no cutoff (fuzz seed 6: legendre_polynomial_p "
        "with n = 2^40 ran for over 30 minutes); tpu gives NaN past POLY_LIMIT (drivers/ir_lowerings_polynomials.py)"),
    "aten::*max_pool*d*_backward*": (
        _pool_indices_out_of_plane,
        "CPU's max-pool backward kernels write grad_input[indices] unchecked: a negative or too-large index writes "
        "outside the buffer and corrupts the heap (torch 2.13; fuzz seed 4, adaptive_max_pool2d_backward with "
        "index -2: 'free(): invalid size' a few calls later); tpu refuses the index (tests/test_pool_bad_indices.py)"),
    "aten::_batch_norm_no_update*": (
        _no_running_stats,
        "CPU segfaults (torch 2.13) on _batch_norm_no_update without running_mean/running_var: it normalizes with "
        "the running stats it does not check for (fuzz seed 7 call 0)"),
    "aten::_native_batch_norm_legit.no_stats*": (
        _eval_without_stats,
        "CPU segfaults (torch 2.13) on _native_batch_norm_legit.no_stats with training=False: eval mode reads the "
        "running stats this overload has none of (fuzz seed 0 call 3; no_stats_out: seed 7 call 2)"),
    "aten::native_batch_norm.*": (
        lambda call: len(call.args) > 5 and call.args[5] is False and call.args[3] is None and call.args[4] is None,
        "CPU segfaults (torch 2.13) on native_batch_norm with training=False and no running stats (fuzz seed 3); "
        "tpu raises that evaluation mode needs them"),
    "aten::*batch_norm*": (
        _empty_running_stats,
        "CPU segfaults (torch 2.13) on a batch norm forward with running_mean or running_var of shape [0]: "
        "batch_norm_cpu reads one per channel unchecked, training or not (fuzz seed 28 call 1: "
        "_native_batch_norm_legit_no_training of float32[1, 2, 3]); tpu refuses the stats' shape, as "
        "F.batch_norm does"),
    "aten::batch_norm_backward.*": (
        _batch_norm_backward_unchecked,
        "CPU segfaults (torch 2.13) on batch_norm_backward with update=False and no running stats (fuzz seed 5 call "
        "1), with update=True and no save_mean or save_var (seed 24 call 0: save_mean None; both None hangs), and "
        "with an input of no elements (SIGFPE, seed 74 call 0); tpu raises that the mode needs the stats"),
    "aten::_fft_c2r*": (
        lambda call: len(call.args) > 3 and isinstance(call.args[3], int) and (call.args[3] < 1 or _c2r_size_off(call)),
        "CPU's _fft_c2r kernel segfaults (torch 2.13) on last_dim_size 0 (fuzz seed 4 call 2); torch.fft.irfft refuses "
        "n < 1 first, in the words tpu raises. An input whose last transformed dim is neither last_dim_size // 2 + 1 "
        "nor last_dim_size is read with the wrong size: garbage (fuzz seed 19 call 1: complex64[4, 3, 1] over "
        "[0, 2, 1] with last_dim_size 2), an internal assert or 'double free or corruption' (4 elements, size 3); "
        "torch.fft resizes it first, tpu refuses it"),
    "aten::_fft_[rc]2[rc]*": (
        lambda call: len(call.args) > 1 and isinstance(call.args[1], (list, tuple)) and any(
            isinstance(d, int) and d < 0 for d in call.args[1]),
        "CPU's _fft_r2c/_fft_c2c/_fft_c2r kernels take their dims already wrapped (torch.fft wraps them first): a "
        "negative dim segfaults (torch 2.13; fuzz seed 9 call 1: _fft_r2c of float64[4, 2, 2] over [-3, -2]) or "
        "fails an internal assert ([-2, 0], seeds 3 and 8); tpu wraps them, as torch.fft does"),
    "aten::_pdist_forward*": (
        lambda call: len(call.args) > 0 and hasattr(call.args[0], "base") and call.args[0].base.dim() != 2,
        "CPU's _pdist_forward kernel segfaults (torch 2.13) on an input that is not 2-D (fuzz seed 11 call 1: "
        "float32[4, 1, 0, 5]); torch.pdist checks the rank before calling it"),
    "aten::_pdist_backward*": (
        lambda call: len(call.args) > 0 and hasattr(call.args[0], "base") and call.args[0].base.dim() != 1,
        "CPU's _pdist_backward kernel steps through grad by grad.stride(0) (torch 2.13): a grad that is not 1-D is "
        "read outside its buffer, giving values that change with the memory around it (fuzz seed 8 call 0: grad "
        "float32[1, 2, 3], 8.9e27 where the pairs' formula gives 0.36); pdist's own backward passes a 1-D grad"),
    "aten::smooth_l1_loss_backward*": (
        lambda call: _integer_tensors(call) and len(call.args) > 4 and _integer_beta_may_be_zero(call.args[4]),
        "CPU's smooth_l1_loss_backward kernel divides by beta cast to the integer dtype: SIGFPE for integer tensors "
        "with a beta that casts to 0 (torch 2.13; fuzz seed 11 call 1: int64, beta 0.357; seed 9 call 2: int16, "
        "beta NaN); a backward has no integer use"),
    "aten::_cholesky_solve_helper*": (
        _cholesky_solve_unchecked,
        "CPU's _cholesky_solve_helper kernel trusts its operands' shapes (torch.cholesky_solve checks and broadcasts "
        "them first): A of 3x2 matrices and B float64[1, 1, 4] with out= corrupts the heap (torch 2.13; fuzz seed 12 "
        "call 2: 'double free or corruption' a few calls later); tpu refuses them"),
    "aten::_logcumsumexp.out": (
        _narrower_logcumsumexp_out,
        "CPU's _logcumsumexp.out kernel never checks out's dtype: it writes self's type's bits into out, resized to "
        "self's shape in out's dtype, so a narrower out is written past its end (torch 2.13; fuzz seed 32 call 1: "
        "complex64[3, 3] into float32 out=, 'malloc(): unaligned fastbin chunk' a few calls later) and a wider or "
        "other one holds garbage; tpu refuses or casts (known.json)"),
    "aten::embedding_dense_backward*": (
        _embedding_rows_out_of_range,
        "CPU's embedding_dense_backward kernel adds into row indices[i] unchecked: index -1 with 2 rows corrupts the "
        "heap (torch 2.13; fuzz seed 16 call 1: 'free(): invalid pointer' a few calls later); tpu raises IndexError"),
    "aten::_weight_norm_interface*": (
        _weight_norm_unchecked,
        "CPU's weight-norm kernels read g by v's slice index unchecked: g with no elements segfaults (torch 2.13; fuzz "
        "seed 14 call 2: v float32[1], g float32[0]), more elements are ignored; tpu refuses g of another count. "
        "A v of no elements: SIGFPE (fuzz seed 2 call 27: v and g float32[0, 1], dim 0: the count divided by "
        "size 0) or a hang (v float32[1, 0], g float32[1, 1], dim 0: over 3 minutes, no CPU time); tpu's result has "
        "no elements"),
    "aten::_weight_norm_interface_backward*": (
        lambda call: any(hasattr(a, "base") and a.materialize("cpu").numel() == 0 for a in call.args[:4]),
        "CPU's weight-norm backward kernels divide by a slice's size and index its first element unchecked: any "
        "operand of no elements gives SIGFPE or a segfault (torch 2.13; fuzz seed 35 call 0: float32[0, 3] over "
        "dim 0; [3, 0] and [2, 0] over dims 0 and 1 too); tpu's result has no elements either"),
    "aten::_adaptive_avg_pool[23]d_backward*": (
        _adaptive_avg_grad_planes_overflow,
        "CPU's adaptive avg-pool backward kernels take the plane count from grad_output and write that many planes "
        "into a result of self's shape unchecked: more planes than self has write past it (torch 2.13: a bus error "
        "for grad float32[3, 2, 2] with self float32[2, 2, 3]); 3d leaves the planes past grad's uninitialized "
        "(its result is not zeroed); tpu refuses both"),
    "aten::avg_pool[23]d_backward*": (
        _avg_grad_batch_mismatch,
        "CPU's avg-pool backward kernels take the batch from self and read grad_output by it unchecked: a smaller "
        "grad_output batch gives 'double free or corruption', a larger one garbage and a segfault at exit (torch "
        "2.13; fuzz seed 25); tpu refuses grad_output's shape (ops/pool_checks.py)"),
    "aten::_fused_[as]*_.default": (
        _fused_optim_unchecked,
        "CPU's fused optimizer kernels read and write param.numel() elements at each grad's and state's data_ptr "
        "unchecked (torch 2.13): a grad float32[3] expanded and a momentum buffer float32[3] stepped for a param "
        "float32[2, 4] corrupt the heap (fuzz seed 33, _fused_sgd_: 'malloc_consolidate(): invalid chunk size' a "
        "few calls later); a non-contiguous one is read in memory order; tpu refuses another shape or layout "
        "(ops/fused_optim_checks.py)"),
    "aten::_segment_reduce_backward*": (
        _integer_tensors,
        "CPU's _segment_reduce_backward kernel aborts the process on integer tensors (torch 2.13; fuzz seed 2: "
        "int8, reduce='amax'); a backward has no integer use"),
    "aten::lcm*": (
        _lcm_divides_min_by_minus_one,
        "CPU's lcm kernel computes a / gcd(a, b) * b with ATen's calc_gcd, whose abs wraps: gcd(INT_MIN, INT_MAX) is "
        "-1 in C, and INT_MIN / -1 traps (SIGFPE, torch 2.13; fuzz seed 41 call 2: lcm of int64 -2^63 and 2^63 - 1; "
        "seed 44 call 0: lcm_ of int32); tpu computes the wrapped quotient"),
    "aten::_*softmax_backward_data*": (
        _softmax_backward_empty_grad,
        "CPU's softmax backward kernels trap (SIGFPE, torch 2.13; fuzz seed 65 call 1: _log_softmax_backward_data.out "
        "with grad float16[1, 1, 0], output [2], dim 1): an empty grad_output of another shape than output, not "
        "empty along dim, gives a zero divisor in the kernel's loop sizes; the shapes are never checked"),
}


def cpu_crashes(call: Any) -> str | None:
    """The reason `call` (a torchtpu.fuzz.args.Call) is one CPU PyTorch crashes on, else None."""
    name = f"{call.op._schema.name}.{call.op._overloadname}"
    for pattern, (which, reason) in CPU_CRASHES.items():
        if fnmatch.fnmatchcase(name, pattern) and which(call):
            return reason
    return None


def _resolve(qualified: str) -> OpOverload | None:
    ns_name, overload = qualified.rsplit(".", 1)
    ns, name = ns_name.split("::")
    packet = getattr(getattr(torch.ops, ns), name, None)
    return getattr(packet, overload, None) if packet is not None else None


def registered() -> list[OpOverload]:
    """Every overload registered for "tpu" (sorted by name), excluded ones left out."""
    import torchtpu  # noqa: F401 - registers the backend
    from torchtpu.ops import registry

    torch.empty(0, device="tpu")  # first use registers the lowering table
    ops = []
    for qualified in sorted(registry.registered()):
        if any(fnmatch.fnmatchcase(qualified, p) for p in EXCLUDED):
            continue
        op = _resolve(qualified)
        if op is not None:
            ops.append(op)
    return ops


def is_random(op: OpOverload) -> bool:
    from torchtpu.ops import registry

    if op in registry.TABLE and registry.TABLE[op].random:
        return True
    return torch.Tag.nondeterministic_seeded in op.tags


def undefined_values(op: OpOverload) -> bool:
    name = f"{op._schema.name}.{op._overloadname}"
    return any(fnmatch.fnmatchcase(name, p) for p in (*UNDEFINED_VALUES, *NONUNIQUE))


def select(ops: list[OpOverload], patterns: list[str] | None) -> list[OpOverload]:
    if not patterns:
        return ops
    return [op for op in ops if any(fnmatch.fnmatchcase(str(op), p) or fnmatch.fnmatchcase(
        f"{op._schema.name}.{op._overloadname}", p) for p in patterns)]
