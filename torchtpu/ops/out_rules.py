"""Which out= overloads require `out.dtype` to equal the result dtype exactly (ATen's rule, read from data).

ATen's structured kernels that are not built on TensorIterator check the out tensor in their generated
`set_output` ("Expected out tensor to have dtype float, but got double instead": a castable dtype is refused), and
so do torchgen's generated (`autogen:`) out= kernels, which copy with `copy_arg`; TensorIterator kernels only
require the result to be castable to the out dtype. Both sets come from the `native_functions.yaml` torchgen ships
in torch's wheel (`structured: True` without `structured_inherits: TensorIteratorBase`; `autogen:` lists), read
once on the first out= call whose dtype differs from its result (a line scan, ~30 ms; a yaml parse takes seconds).
Where CPU differs from the yaml rule (a TensorIterator op configured to require equal dtypes, a structured meta
that takes the out dtype as its result dtype), the CPU probe in tests/test_out_dtype.py found it and the two
tables below follow CPU.
"""

from __future__ import annotations

import os
import re
import warnings
from functools import lru_cache
from typing import Any

import torch

from torchtpu.ops.tracing import aten_type_name

# Exact by the yaml rule, but CPU accepts a castable out dtype (the meta takes the out's dtype as the result dtype,
# e.g. sum/mean/prod/cumsum with dtype=None; autogen factories copy with a cast): found by the CPU probe.
LENIENT: frozenset[str] = frozenset({
    "_efficientzerotensor.out", "all.out", "any.dims_out", "any.out", "cat.out", "cumprod.out", "cumsum.out",
    "empty_like.out", "mean.out", "new_empty.out", "new_full.out", "new_ones.out", "new_zeros.out",
    "ones_like.out", "pow.Scalar_out", "prod.int_out", "sum.IntList_out", "tril_indices.out", "triu_indices.out",
    "zeros_like.out",
})

# Not structured-non-TensorIterator in the yaml, but CPU refuses a castable out dtype (TensorIterator configured
# with `check_all_same_dtype`, or a hand-written check): found by the CPU probe.
EXACT: frozenset[str] = frozenset({
    "_native_batch_norm_legit.no_stats_out", "abs.out", "binary_cross_entropy_backward.grad_input",
    "bitwise_not.out", "ceil.out", "clamp.out", "clamp_max.out", "clamp_min.out", "col2im.out", "dot.out",
    "elu.out", "floor.out", "frac.out", "gelu.out", "hardshrink.out", "hardsigmoid.out", "hardswish.out",
    "hardtanh.out", "heaviside.out", "histc.out", "histogram.bin_ct_out", "histogram.bins_tensor_out",
    "huber_loss_backward.out", "im2col.out", "index.Tensor_out", "index_select.out", "isposinf.out",
    "kthvalue.values", "leaky_relu.out", "lerp.Tensor_out", "linalg_solve_triangular.out",
    "log_sigmoid_backward.grad_input", "log_sigmoid_forward.output", "median.dim_values", "mish.out",
    "multilabel_margin_loss_forward.output", "nan_to_num.out", "narrow_copy.out", "neg.out",
    "reflection_pad2d.out", "round.decimals_out", "round.out", "sgn.out", "sign.out", "silu.out",
    "soft_margin_loss.out", "softplus.out", "softshrink.out", "sort.values", "take.out", "trunc.out", "vdot.out",
    "where.self_out",
})

# Exact only with `dtype=` given (CPU probe, issue 17 seed 3): without it nansum's out= kernel takes the out
# tensor's dtype, as LENIENT's reductions do; with it, "Expected out tensor to have dtype long int, but got float".
# mean.dtype_out (seed 21) is mean.out over every dim.
EXACT_WITH_DTYPE: frozenset[str] = frozenset({"nansum.out", "mean.dtype_out"})

# LENIENT reductions whose meta computes in the out tensor's dtype (no dtype= given), also where the default result
# dtype cannot be cast to it (CPU probe, issue 17: sum(bool, out=<bool>) computes; a bfloat16 sum into a float32
# out= is not rounded to bfloat16).
RESULT_IN_OUT_DTYPE: frozenset[str] = frozenset({"sum.IntList_out", "prod.int_out", "cumsum.out", "cumprod.out"})

# out= kernels whose TensorIterator writes the out= tensor itself: computed in the inputs' common dtype, cast to
# the out's, refused only where that cast is unsafe (the functional's output is zeros_like(self), whose dtype the
# lowering takes otherwise; fuzz seeds 21-22: a float64 grad_input got float16's inf). The lowering takes the
# out's dtype as `dtype`.
ITERATOR_WRITES_OUT: frozenset[str] = frozenset({"mse_loss_backward.grad_input"}) | frozenset(
    # all / any (get_allany_iter): CPU reduces the input cast to the out's dtype (0.5 into uint8 is 0; fuzz seed 38)
    f"{op}.{overload}" for op in ("all", "any") for overload in ("out", "dims_out", "all_out"))

# Reductions whose out= kernel reads the input in the out tensor's dtype (fuzz seed 22), behind the cast check of
# the functional's result dtype into it: a float16 input into a float32 out= is not rounded to float16 first (with
# no dtype= given). The lowering takes the out's dtype as `dtype`, as ITERATOR_WRITES_OUT's.
# max/min.unary_out (max_unary_out: canCast, then out.fill_(self.max())) take it to check fill_'s conversion.
READS_IN_OUT_DTYPE: frozenset[str] = frozenset({"logsumexp.out", "mean.dtype_out", "mean.out", "std.correction_out",
                                                "var.correction_out", "max.unary_out", "min.unary_out"})

# Factories whose out= kernel fills the out tensor in its own dtype (no result dtype to cast from): CPU writes
# eye/full/_efficientzerotensor into a bool or uint8 out= where a float/int64 result "can't be cast" by the
# promotion rule (found by the fuzzer, issue 17). A complex fill value into a real out still fails, except into a
# bool one (fill_'s value.to<bool>() is Scalar::toBool(), unchecked: full.out(1j, out=<bool>) is True; seed 60).
FILLS_OUT_DTYPE: frozenset[str] = frozenset({"_efficientzerotensor.out", "eye.m_out", "eye.out", "full.out"})

# out= kernels that compute into a new tensor and `out.copy_(result)`: any out dtype, a complex result into a real
# out keeps the real part (the FFTs' _fft_*_mkl_out; fuzz seed 9: _fft_r2c.out into a float32 out).
COPIES_INTO_OUT: frozenset[str] = frozenset({"_fft_r2c.out", "_fft_c2c.out", "_fft_c2r.out"}) | frozenset(
    # all / any (allany_meta): a bool or uint8 out= whatever the input (others refused first, cpu_raise_checks)
    f"{op}.{overload}" for op in ("all", "any") for overload in ("out", "dims_out", "all_out"))

# Factories whose out= kernel computes in the out tensor's dtype (ATen's linspace_out and logspace_out: the dtype
# of `result`).
TAKES_OUT_DTYPE: frozenset[str] = frozenset({"linspace.out", "linspace.Tensor_Tensor_out", "linspace.Tensor_Scalar_out",
                                            "linspace.Scalar_Tensor_out", "logspace.out",
                                            "logspace.Tensor_Tensor_out", "logspace.Tensor_Scalar_out",
                                            "logspace.Scalar_Tensor_out"})

# Non-structured linalg out= kernels that check castability with checkLinalgCompatibleDtype's words: the
# overload -> (the name ATen prints, each out= argument's name).
LINALG_CASTABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "cholesky_inverse.out": ("cholesky_inverse", ("result",)),
    "linalg_eig.out": ("torch.linalg.eig", ("eigenvalues", "eigenvectors")),
    "linalg_householder_product.out": ("torch.linalg.householder_product", ("result",)),
}

_FUNC = re.compile(r"^- func: ([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\(")


def yaml_path() -> str:
    import torchgen

    return os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")


def scan(text: str) -> frozenset[str]:
    """"name.overload" of each `structured: True` entry whose `structured_inherits` is not TensorIteratorBase, and
    of each `autogen:` out= overload (torchgen's generated out= kernels check the dtype exactly too)."""
    found: set[str] = set()
    name, structured, inherits = None, False, None

    def close() -> None:
        if name is not None and structured and inherits != "TensorIteratorBase":
            found.add(name)

    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            close()
            name, structured, inherits = f"{m.group(1)}.{m.group(2) or 'default'}", False, None
        elif line.startswith("  structured:"):
            structured = line.split(":", 1)[1].strip() == "True"
        elif line.startswith("  structured_inherits:"):
            inherits = line.split(":", 1)[1].strip()
        elif line.startswith("  autogen:"):  # generated out= kernels copy with `copy_arg`: dtype checked exactly
            found.update(n.strip() if "." in n else f"{n.strip()}.default"
                         for n in line.split(":", 1)[1].split(",") if n.strip())
    close()
    return frozenset(found)


@lru_cache(maxsize=1)
def yaml_autogen() -> frozenset[str]:
    """torchgen's generated out= overloads (`autogen:`): the functional runs first, then `copy_arg` checks the
    dtype, so the functional's own refusals come before the out dtype's."""
    with open(yaml_path(), encoding="utf-8") as f:
        return frozenset(n.strip() if "." in n else f"{n.strip()}.default"
                         for line in f if line.startswith("  autogen:")
                         for n in line.split(":", 1)[1].split(",") if n.strip())


@lru_cache(maxsize=1)
def yaml_exact() -> frozenset[str]:
    """The yaml rule alone (no CPU overrides): structured, non-TensorIterator overloads."""
    with open(yaml_path(), encoding="utf-8") as f:
        return scan(f.read())


def _local(op: torch._ops.OpOverload) -> str:
    return f"{op._schema.name.split('::')[1]}.{op._overloadname}"


def requires_exact(op: torch._ops.OpOverload, dtype_given: bool = False) -> bool:
    """Whether CPU refuses an out= tensor of `op` whose dtype is castable from, but not equal to, the result's.
    `dtype_given`: the call passed `dtype=`; a LENIENT meta takes the out dtype only when it did not (with
    `dtype=` it checks the out tensor against that dtype exactly: `mean(x, 1, dtype=torch.half, out=<float>)`)."""
    name = _local(op)
    if name in EXACT:
        return True
    if name in EXACT_WITH_DTYPE:
        return dtype_given
    return name in yaml_exact() and (name not in LENIENT or dtype_given)


# c10's TypeMeta names, as ATen's "Expected out tensor to have dtype ..." message prints them.
_CPP_NAMES = {
    torch.bool: "bool", torch.uint8: "unsigned char", torch.int8: "signed char", torch.int16: "short int",
    torch.int32: "int", torch.int64: "long int", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
    torch.float32: "float", torch.float64: "double", torch.complex64: "c10::complex<float>",
    torch.complex128: "c10::complex<double>", torch.complex32: "c10::complex<c10::Half>",
}


def fills_out_dtype(op: torch._ops.OpOverload, dtype_given: bool = False) -> bool:
    """Whether `op`'s out= kernel fills the out tensor in its own dtype (FILLS_OUT_DTYPE, no dtype= given)."""
    return not dtype_given and _local(op) in FILLS_OUT_DTYPE


def iterator_writes_out(op: torch._ops.OpOverload) -> bool:
    """Whether `op`'s out= kernel computes into the out tensor's dtype (ITERATOR_WRITES_OUT, READS_IN_OUT_DTYPE)."""
    return _local(op) in ITERATOR_WRITES_OUT or _local(op) in READS_IN_OUT_DTYPE


def reads_in_out_dtype(op: torch._ops.OpOverload) -> bool:
    """Whether `op` is a READS_IN_OUT_DTYPE reduction (the functional's result dtype cast-checked first)."""
    return _local(op) in READS_IN_OUT_DTYPE


def takes_out_dtype(op: torch._ops.OpOverload) -> bool:
    """Whether `op`'s out= kernel computes in the out tensor's dtype (TAKES_OUT_DTYPE)."""
    return _local(op) in TAKES_OUT_DTYPE


def out_dtype_as_result(op: torch._ops.OpOverload, result: torch.dtype, targets: list[Any],
                        dtype_given: bool) -> torch.dtype | None:
    """The out tensor's dtype where a LENIENT reduction (a `dtype` argument, none given) computes in it: ATen's
    meta takes the out's dtype as the result's (infer_dtype_from_optional) whenever it differs, so a bfloat16
    sum into a float32 out= is summed in float32 (never rounded to bfloat16 first), sum(bool, out=<bool>) and
    prod(int, out=<bool>) compute, cumsum(bool, out=<bool>) meets the kernel's dtype refusal. None where the
    result already has the out's dtype (mean.out is not one: its kernel divides the sum in the out tensor,
    which refuses the cast)."""
    if dtype_given or len(targets) != 1 or _local(op) not in RESULT_IN_OUT_DTYPE:
        return None
    target = targets[0].dtype
    return target if target != result else None


def check_out_dtype(op: torch._ops.OpOverload, result: torch.dtype, target: torch.dtype, name: str,
                    dtype_given: bool = False, index: int = 0) -> None:
    """Raises CPU's error where `result` cannot be written into an out= tensor of dtype `target` (`dtype_given`:
    the call passed `dtype=`, see requires_exact; `index`: which out= tensor)."""
    if result == target or _local(op) in COPIES_INTO_OUT:
        return
    linalg = LINALG_CASTABLE.get(_local(op))
    if linalg is not None and not torch.can_cast(result, target):
        api, outs = linalg
        out = outs[min(index, len(outs) - 1)]
        raise RuntimeError(f"{api}: Expected {out} to be safely castable from {aten_type_name(result)} dtype, but "
                           f"got {out} with dtype {aten_type_name(target)}")
    if _local(op) in ("complex.out", "polar.out"):  # complex_check_dtype: the parts' complex dtype exactly
        from torchtpu.ops.complex_checks import check_out

        check_out(result, target)
    if fills_out_dtype(op, dtype_given) and not (result.is_complex and not target.is_complex
                                                 and target != torch.bool):  # Scalar::toBool(): z != 0
        return
    exact = requires_exact(op, dtype_given)
    if not torch.can_cast(result, target) and not (exact and _local(op) in yaml_exact()):
        raise RuntimeError(f"{name}: result type {aten_type_name(result)} can't be cast to the desired output "
                           f"type {aten_type_name(target)}")
    if exact:  # a structured kernel's set_output checks the dtype exactly, with no castability step before
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES.get(result, str(result))}, but got "
                           f"{_CPP_NAMES.get(target, str(target))} instead ({name}: this out= overload requires "
                           "the result dtype exactly)")


def first_tpu_device(values: Any) -> torch.device | None:
    """The device of the first tpu tensor among `values` (looking into lists and tuples), or None."""
    for x in values:
        if isinstance(x, torch.Tensor) and x.device.type == "tpu":
            return x.device
        if isinstance(x, list | tuple):
            found = first_tpu_device(x)
            if found is not None:
                return found
    return None


def check_out_devices(args: tuple, kwargs: dict[str, Any], targets: list[Any], name: str) -> None:
    """Refuses an out= tensor on another device than the call's tpu inputs, as CUDA does ("Expected out tensor to
    have device cuda:0, but got cpu instead"): a CPU out= would otherwise be written through a host copy."""
    device = first_tpu_device((*args, *kwargs.values()))
    if device is None:  # factories: the out tensor names the device
        return
    device = torch.device("tpu", device.index or 0)
    for t in targets:
        if isinstance(t, torch.Tensor) and t.device != device:
            raise RuntimeError(f"Expected out tensor to have device {device}, but got {t.device} instead ({name}: "
                               f"an out= tensor must be on the inputs' device; move it with .to('{device}'))")


def check_out_count(results: int, targets: int, name: str) -> None:
    """Refuses an out= list (`_foreach_*.out`) that does not hold one tensor per result, after the results are
    computed, as CPU (its internal assert `dst.size() == src.size()`, a RuntimeError): writing the common prefix
    would leave the rest of the list silently unwritten."""
    if results != targets:
        raise RuntimeError(f"{name}: out= holds {targets} tensors but the op returns {results} (one per input "
                           f"tensor; dst.size() == src.size() in ATen); pass an out= list of {results} tensors")


def resize_out(target: torch.Tensor, shape: tuple[int, ...] | torch.Size) -> None:
    """Resizes an out= tensor to the result's shape as ATen's resize_output does: with _resize_output_check's
    warning (in ATen's words) when the tensor held elements; a tensor of that shape is left as it is."""
    if tuple(target.shape) == tuple(shape):
        return
    if target.numel() != 0:
        warnings.warn(f"An output with one or more elements was resized since it had shape {list(target.shape)}, "
                      f"which does not match the required output shape {list(shape)}. This behavior is deprecated, "
                      "and in a future PyTorch release outputs will not be resized unless they have zero elements. "
                      "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                      "t.resize_(0).", UserWarning, stacklevel=4)
    target.resize_(shape)
