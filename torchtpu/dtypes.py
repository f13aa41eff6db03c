"""The dtypes the "tpu" device supports, per op family, and the one check that refuses the others.

`STORAGE` dtypes may live on the device (`.to("tpu")`, factories, views, copies back to the host); `COMPUTE`
dtypes are the ones the IR has, so every lowered op accepts them; `FAMILIES` narrows that for op families with a
smaller set. A dtype outside `STORAGE` is refused when a tensor is copied to the device, one outside `COMPUTE` when
an op traces a tensor of it. The first raises `UnsupportedDtypeError`, a TypeError as MPS raises for a dtype it
cannot hold; the second `DtypeNotImplementedError`, a NotImplementedError as CPU and CUDA kernels raise ("add_stub"
not implemented for 'UInt16'; a TypeError there would be turned into NotImplemented by Tensor's binary operators).
Both name the dtype, the op and the supported set. docs/install.md has the same table for users.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import scalar_args

# The IR's dtypes (torchtpu.ops.tracing.TORCH_TO_IR maps them to IR names).
COMPUTE: tuple[torch.dtype, ...] = (
    torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8,
    torch.uint8, torch.bool, torch.complex64, torch.complex128,
)
# Kept as bytes (copies, views, hash_tensor's uint64 result); no op computes on them.
STORAGE_ONLY: tuple[torch.dtype, ...] = (torch.uint16, torch.uint32, torch.uint64)
# fp8: one byte per element (the IR's f8E4M3FN / f8E5M2), converted to and from the other dtypes on the VPU and
# multiplied on the MXU (torch._scaled_mm, on chips whose MXU has the format: sim/data/chips.json mxu_fp8).
# As on CPU, no arithmetic runs on them: FLOAT8_OPS lists the ops that take them.
FLOAT8: tuple[torch.dtype, ...] = (torch.float8_e4m3fn, torch.float8_e5m2)
FLOAT8_OPS = frozenset({
    "_to_copy", "_copy_from", "_copy_from_and_resize", "copy_", "copy", "clone", "_scaled_mm", "cat", "fill_",
    "zero_", "empty_like", "zeros_like", "contiguous", "index_select", "slice_scatter", "select_scatter",
    "as_strided_scatter",
    # views, which compiled graphs lower (eager mode aliases with ATen's own kernels)
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "slice", "select", "unsqueeze",
    "squeeze", "as_strided", "alias", "detach", "split", "split_with_sizes", "unbind", "narrow", "view_as",
})
# complex32 (ComplexHalf): two float16, real part first (c10::complex<Half>), taking CPU torch's ComplexHalf op set
# (COMPLEX32_OPS) and computing in complex64 with each part rounded to float16 once per op, as CPU does.
# COMPLEX32_REFUSED: CPU's NotImplementedError for the ops it lacks, in its words (its kernel's name); an op in
# neither set is refused naming COMPLEX32_OPS.
COMPLEX32_OPS = frozenset({
    "_to_copy", "_copy_from", "_copy_from_and_resize", "copy_", "copy", "clone", "contiguous", "empty_like",
    "zeros_like", "ones_like", "full_like", "fill_", "zero_", "fill", "zero", "normal_", "uniform_", "normal",
    "empty", "empty_strided", "zeros", "ones", "full", "scalar_tensor", "new_empty", "new_zeros", "new_ones",
    "new_full", "new_empty_strided",
    "uniform", "_local_scalar_dense", "cat", "stack", "index_select", "index", "index_put_", "index_put",
    "_index_put_impl_", "_unsafe_index_put", "_unsafe_index", "where", "masked_fill_", "masked_fill",
    "masked_select", "nonzero", "eq", "ne", "isnan", "isfinite", "abs", "sgn", "add", "add_", "sub", "sub_",
    "rsub", "mul", "mul_", "neg", "neg_", "addcmul", "addcmul_", "triu", "tril", "triu_", "tril_", "roll",
    "repeat", "narrow_copy", "complex", "isclose", "allclose", "conj_physical", "_conj_physical", "resolve_conj",
    "lift_fresh_copy", "constant_pad_nd", "slice_scatter", "select_scatter", "expand_copy", "view_as_real",
    "view_as_complex", "_conj", "conj", "real", "imag", "_foreach_add", "_foreach_sub", "_foreach_mul",
    "_foreach_add_", "_foreach_sub_", "_foreach_mul_",
    # views, which compiled graphs lower (eager mode aliases with ATen's own kernels)
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "slice", "select", "unsqueeze",
    "squeeze", "as_strided", "alias", "detach", "split", "split_with_sizes", "unbind", "narrow", "view_as",
    "_reshape_alias", "view_copy", "unsqueeze_copy", "permute_copy", "slice_copy", "select_copy", "squeeze_copy",
    "transpose_copy", "t_copy", "alias_copy", "detach_copy", "as_strided_copy", "unbind_copy", "split_copy",
    "split_with_sizes_copy", "view_as_real_copy", "view_as_complex_copy", "diagonal", "diagonal_copy", "unfold",
    "unfold_copy", "movedim", "flatten", "isinf", "index_fill", "index_fill_", "any", "all", "count_nonzero",
    "diag", "diag_embed",
    # where CPU's kernel only copies bytes (its layout rule: ops.shape.complex32_flip_computes; else "flip_cpu")
    "flip",
    # each part's in float16, then their float16 sum (and root), as CPU's std_var_out of a complex tensor
    "var", "std", "var_mean", "std_mean",
    # complex64's norm rounded to float16 once, as CPU's
    "linalg_vector_norm", "norm", "dist",
    # each index's slice added as CPU's add_(alpha) of ComplexHalf, every addition rounded
    "index_add", "index_add_",
})
# op -> the kernel CPU torch 2.13 names refusing ComplexHalf (probed: '"div_cpu" not implemented for 'ComplexHalf'')
COMPLEX32_REFUSED: dict[str, str] = {
    "div": "div_cpu", "div_": "div_cpu", "true_divide": "div_cpu", "sum": "sum_cpu", "mean": "sum_cpu",
    "prod": "prod_out_cpu", "cumsum": "cumsum_out_cpu", "cumprod": "cumprod_out_cpu", "exp": "exp_vml_cpu",
    "sqrt": "sqrt_vml_cpu", "log": "log_vml_cpu", "log1p": "log1p_vml_cpu", "sin": "sin_vml_cpu",
    "tanh": "tanh_vml_cpu", "sinh": "sinh_cpu", "rsqrt": "rsqrt_cpu", "exp2": "exp2", "pow": "pow",
    "gather": "scatter_gather_tensor_cpu", "scatter": "scatter_gather_tensor_cpu",
    "scatter_add": "scatter_gather_tensor_cpu", "take": "take_cpu", "put": "take_put_cpu", "put_": "take_put_cpu",
    "mm": "addmm_impl_cpu_", "addmm": "addmm_impl_cpu_", "bmm": "bmm", "mv": "addmv_impl_cpu", "dot": "dot",
    "vdot": "vdot", "sigmoid": "sigmoid_cpu", "reciprocal": "reciprocal_cpu", "lerp": "lerp_kernel_scalar",
    "arange": "arange_cpu", "linspace": "linspace_cpu", "eye": "eye", "unique": "unique",
    "_unique2": "unique", "angle": "angle_cpu", "max": "max_all", "min": "min_all", "masked_scatter":
    "masked_scatter", "nan_to_num": "nan_to_num", "equal": "equal_notnan_cpu", "logical_not": "logical_not_cpu",
    "logical_and": "logical_and_cpu", "fmod": "fmod_cpu", "trace": "trace", "addcdiv": "addcdiv_cpu_out",
    "cross": "cross", "linalg_cross": "cross", "sigmoid_backward": "sigmoid_backward_cpu",
}
# CPU's own words for the few ComplexHalf refusals that are no dispatch macro's
_COMPLEX32_WORDS: dict[str, tuple[type[Exception], str]] = {
    "sort": (RuntimeError, "Sort does not support complex dtypes on CPU"),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                                  "use torch.sgn instead."),
}
STORAGE: tuple[torch.dtype, ...] = COMPUTE + STORAGE_ONLY + FLOAT8 + (torch.complex32,)

FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
FAMILIES: dict[str, tuple[torch.dtype, ...]] = {
    "storage and copies": STORAGE,
    "elementwise, reductions, indexing, shape ops": COMPUTE,
    "matmul, conv (MXU)": FLOATS + (torch.complex64, torch.complex128, torch.int64, torch.int32, torch.int16,
                                    torch.int8, torch.uint8),
    "grouped_mm": (torch.float32, torch.bfloat16, torch.float16),
    "autocast": (torch.bfloat16, torch.float16),
    "float8: converts, copies, cat, _scaled_mm": FLOAT8,
    "complex32: CPU's ComplexHalf op set (dtypes.COMPLEX32_OPS)": (torch.complex32,),
}
NOTES: dict[torch.dtype, str] = {
    torch.float64: "exact on the simulator (host float64); a real TPU has no float64 units and emulates it",
    torch.complex128: "float64 parts, exact on the simulator as float64 is (matmuls too: four float64 products)",
    torch.bfloat16: "native; MXU products in bf16 with float32 accumulation",
    torch.float32: "MXU products as 1, 3 or 6 bf16 passes (torch.tpu.Precision)",
    torch.float8_e4m3fn: "storage, converts (saturating at +-448, as c10), _scaled_mm on the MXU of v7x",
    torch.float8_e5m2: "storage, converts, _scaled_mm on the MXU of v5p, v6e, v7x",
    torch.complex32: "two float16 (c10::complex<Half>); CPU's ComplexHalf op set, computed in complex64 and "
                     "rounded to float16 per part once per op, as CPU; other ops raise CPU's NotImplementedError",
}

_COMPUTE = frozenset(COMPUTE)
_STORAGE = frozenset(STORAGE)
_FLOAT8 = frozenset(FLOAT8)
_NARROW_HELD = _FLOAT8 | {torch.complex32}


class UnsupportedDtypeError(TypeError):
    """A dtype the tpu device cannot hold."""


class DtypeNotImplementedError(NotImplementedError):
    """A dtype that no tpu op (or no op of one family) computes on."""


def _names(dtypes: tuple[torch.dtype, ...]) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def _refuse(dtype: torch.dtype, op: str, allowed: tuple[torch.dtype, ...], what: str,
            cls: type[Exception] = DtypeNotImplementedError) -> Exception:
    return cls(
        f"{op}: dtype {dtype} is not supported on the tpu device ({what}); supported: {_names(allowed)}. "
        "Convert first (e.g. x.to(torch.float32)) or keep the tensor on the CPU.")


def storage_names() -> str:
    """The dtypes a tpu storage holds, as a refusal lists them (the C++ factories' refusal reads it)."""
    return _names(STORAGE)


def all_names() -> list[tuple[torch.dtype, str]]:
    """Every torch dtype with its Python name ("torch.complex128"), for the C++ factories' refusal."""
    return [(d, str(d)) for d in vars(torch).values() if isinstance(d, torch.dtype)]  # aliases repeat: harmless


def check_storage(dtype: torch.dtype, op: str) -> None:
    """Raises unless tensors of `dtype` may live on the device (`op` names what asked, e.g. "copy to tpu")."""
    if dtype not in _STORAGE:
        raise _refuse(dtype, op, STORAGE, "no device storage for it", UnsupportedDtypeError)


def _base(op: str) -> str:
    """"add" of "aten::add.Tensor" or "aten.add.Tensor"."""
    return op.replace("::", ".").removeprefix("aten.").split(".")[0]


def complex32_refusal(op: str) -> Exception:
    """The error for ATen op `op` on a complex32 tensor that is none of COMPLEX32_OPS: CPU's, in its class and
    words, where CPU refuses it too (COMPLEX32_REFUSED); else a DtypeNotImplementedError naming COMPLEX32_OPS."""
    base = _base(op)
    kernel = COMPLEX32_REFUSED.get(base) or COMPLEX32_REFUSED.get(base.rstrip("_"))
    if kernel is not None:
        return DtypeNotImplementedError(f"\"{kernel}\" not implemented for 'ComplexHalf'")
    if base in _COMPLEX32_WORDS:
        cls, words = _COMPLEX32_WORDS[base]
        return cls(words)
    return _refuse(torch.complex32, op, (torch.complex32,),
                   f"complex32 tensors take only CPU's ComplexHalf ops: {', '.join(sorted(COMPLEX32_OPS))}")


def check_compute(dtype: torch.dtype, op: str) -> None:
    """Raises unless lowered ops compute on `dtype` (`op` is the ATen op name, e.g. "aten::add.Tensor")."""
    if dtype not in _COMPUTE:
        if dtype == torch.complex32:
            if _base(op) not in COMPLEX32_OPS:
                raise complex32_refusal(op)
            return
        if dtype in _FLOAT8:
            if _base(op) in FLOAT8_OPS:
                return
            raise _refuse(dtype, op, COMPUTE, f"float8 tensors take only {', '.join(sorted(FLOAT8_OPS))}")
        what = "stored as bytes only, no op computes on it" if dtype in _STORAGE else "the IR has no such type"
        raise _refuse(dtype, op, COMPUTE, what)


def check_fp8_operands(values: Any, op: str) -> None:
    """Raises as `check_compute` does where a compiled graph's node `op` takes a float8 or complex32 value
    (`values`: its arguments, Syms among them) and is not one of FLOAT8_OPS / COMPLEX32_OPS; eager mode checks
    every traced tensor instead."""
    for v in values:
        if isinstance(v, list | tuple):
            check_fp8_operands(v, op)
        elif getattr(v, "dtype", None) in _NARROW_HELD and not isinstance(v, torch.Tensor):
            check_compute(v.dtype, op)


def check_complex32_results(results: Any, op: str) -> Any:
    """`results`; raises as `check_compute` does where op `op` (none of COMPLEX32_OPS) made a complex32 result from
    operands of other dtypes (float16 with a complex Scalar: CPU's pow and sigmoid_backward refuse ComplexHalf)."""
    for r in results if isinstance(results, list | tuple) else (results,):
        if isinstance(r, list | tuple):
            check_complex32_results(r, op)
        elif getattr(r, "dtype", None) == torch.complex32 and not isinstance(r, torch.Tensor):
            check_compute(torch.complex32, op)
    return results


def check_family(dtype: torch.dtype, op: str, family: str) -> None:
    """Raises unless `dtype` is in the op family's supported set (a key of FAMILIES)."""
    allowed = FAMILIES[family]
    if dtype not in allowed:
        raise _refuse(dtype, op, allowed, f"not supported by {family}")


def ir_name(dtype: torch.dtype, op: str) -> str:
    """The IR name of a compute dtype; raises UnsupportedDtypeError naming `op` for any other."""
    from torchtpu.ops.tracing import TORCH_TO_IR

    name = TORCH_TO_IR.get(dtype)
    if name is None:
        check_compute(dtype, op)
        raise _refuse(dtype, op, COMPUTE, "the IR has no such type")
    return name


def refusal_for(exc: KeyError, op: str) -> Exception | None:
    """The clear error for a dtype-table lookup (`TORCH_TO_IR[dtype]`) that failed inside a lowering, else None."""
    key = exc.args[0] if len(exc.args) == 1 else None
    if isinstance(key, torch.dtype):
        return _refuse(key, op, COMPUTE, "the IR has no such type")
    return None


# c10's names for the type a Scalar is converted to, as CPU's overflow message spells them.
_C_NAMES: dict[torch.dtype, str] = {
    torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t", torch.int32: "int",
    torch.int64: "int64_t", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16", torch.float32: "float",
    torch.float64: "double", torch.complex64: "c10::complex<float>", torch.complex128: "c10::complex<double>",
    torch.float8_e4m3fn: "c10::Float8_e4m3fn", torch.float8_e5m2: "c10::Float8_e5m2",
    torch.complex32: "c10::complex<c10::Half>",
}


def _real_overflows(v: float | int, dtype: torch.dtype) -> bool:
    if dtype.is_floating_point or dtype.is_complex:
        if dtype in (torch.float64, torch.complex128) or v != v or v in (float("inf"), float("-inf")):
            return False  # the target has NaN and infinities
        info = torch.finfo(dtype)
        return v < info.min or v > info.max
    if v != v or v in (float("inf"), float("-inf")):
        return True
    info = torch.iinfo(dtype)
    if isinstance(v, int) and info.min == 0:
        return v > info.max or v < -info.max  # c10 lets a negative integer wrap into an unsigned type
    if isinstance(v, float):  # c10 compares in double, where int64's max rounds up to 2**63
        return v < float(info.min) or v > float(info.max)
    return v < info.min or v > info.max


_COMPLEX_PART = {torch.complex64: torch.float32, torch.complex32: torch.float16}


def scalar_overflows(value: object, dtype: torch.dtype) -> bool:
    """True where c10's checked Scalar conversion (c10::overflows) refuses `value` for `dtype`."""
    if isinstance(value, bool) or dtype == torch.bool or not isinstance(value, (int, float, complex)):
        return False
    if isinstance(value, complex):
        if dtype.is_complex:
            part = _COMPLEX_PART.get(dtype, torch.float64)
            return _real_overflows(value.real, part) or _real_overflows(value.imag, part)
        if value.imag != 0:
            return True
        value = value.real
    if dtype.is_complex:
        dtype = _COMPLEX_PART.get(dtype, torch.float64)
    return _real_overflows(value, dtype)


def check_scalar_fits(value: object, dtype: torch.dtype, op: str, numel: int | None = None) -> None:
    """Raises RuntimeError, as CPU does, where `op` would convert the Python scalar `value` to `dtype` with overflow.

    CPU checks the ops that store a Scalar into a tensor of the tensor's own type (fill_, full, masked_fill,
    index_fill, scatter's value, clamp's bounds, where's scalar operand, add's alpha); it does not check arithmetic
    with a wrapped scalar (`int8_tensor + 1000` wraps), so callers are those ops only. `numel` is the filled
    tensor's size for fill_: CPU fills a one-element tensor on a path that checks no Half or BFloat16 value.
    """
    if numel == 1 and dtype in (torch.float16, torch.bfloat16):
        return
    if isinstance(value, scalar_args.Placeholder):  # a program input: checked at every call, on its value
        scalar_args.check_each_call(value, lambda v: check_scalar_fits(v, dtype, op, numel))
        return
    if scalar_overflows(value, dtype):
        lo_hi = (torch.iinfo(dtype) if not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
                 else None)
        valid = f" (valid range [{lo_hi.min}, {lo_hi.max}])" if lo_hi is not None else ""
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dtype, str(dtype))} without overflow: "
                           f"{op} got {value!r} for a {dtype} tensor{valid}")


def checked_scalar(value: Any, dtype: torch.dtype) -> Any:
    """`value` as a Scalar argument converted to the operand type `dtype` a kernel reads it in (a complex with no
    imaginary part: its real part); c10's RuntimeError where it cannot be (threshold_backward's complex threshold
    for a float tensor, hardtanh's complex bound for an int64 one, linspace's NaN bound for int64): Python's
    TypeError or ValueError would escape an `except RuntimeError`."""
    if isinstance(value, scalar_args.Placeholder):
        return value
    if scalar_overflows(value, dtype):
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dtype, str(dtype))} without overflow")
    return value.real if isinstance(value, complex) and not dtype.is_complex else value


def opmath(dtype: torch.dtype) -> torch.dtype:
    """The type a CPU kernel computes `dtype` in (its opmath_t: float for float16 and bfloat16)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def rounded_scalar(value: float, dtype: torch.dtype) -> float:
    """`value` (a double) cast to the floating `dtype` as C++ does (to float first for the 16-bit types), in plain
    Python: a decomposition under torch.compile may not make a tensor."""
    import ml_dtypes
    import numpy as np

    if dtype == torch.float64 or value != value:
        return value
    with np.errstate(over="ignore"):  # an overflow is inf, as the C++ cast
        single = float(np.float32(value))
        if dtype == torch.float16:
            return float(np.float16(single))
    if dtype == torch.bfloat16:  # c10's round to nearest even, as ml_dtypes casts
        return float(np.float32(single).astype(ml_dtypes.bfloat16))
    return single


def table() -> list[tuple[str, str]]:
    """(family, supported dtypes) rows, as docs/install.md shows them."""
    return [(family, _names(dtypes)) for family, dtypes in FAMILIES.items()]
