"""torch.normal's tensor forms (mean and/or std a tensor) and arange's out= overloads, as host kernels written as
ATen's CPU kernels are (DistributionTemplates.h normal_impl / normal_out_impl, RangeFactories.cpp arange_out), out
of ops that have lowerings.

normal: the result has mean's dtype (std's for `normal(float, std)`) and the broadcast shape; a tensor std is
checked as CPU checks it (non-complex; every element >= 0, read back as CPU reads it); the noise is normal_'s
(a complex result draws both parts with std / sqrt(2)), then scaled by std and shifted by mean in place. The
upstream decomposition this replaces promoted mean and std (a float16 mean with a float32 std gave float32) and
drew real noise for a complex mean (its imaginary part was the mean's, silently).

arange.out / arange.start_out: computed in the out tensor's dtype; the out tensor is resized (with CPU's warning)
only where its number of elements differs, else written in its own shape and strides, element by element in
logical order (a non-contiguous view keeps its layout; the decomposition resized it into a contiguous view).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from torchtpu import dtypes
from torchtpu.ops.cpu_raise_checks import broadcast

aten = torch.ops.aten


def _check_std_tensor(std: torch.Tensor) -> None:
    """CHECK_NORMAL_TENSOR_STD."""
    if std.is_complex():
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if std.numel() and not bool(std.min().ge(0).item()):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _check_std(std: float) -> None:
    """CHECK_NORMAL_STD."""
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def _check_mean_fits(mean: float, dtype: torch.dtype) -> None:
    """normal(float mean, Tensor std)'s at::full({}, mean, output.options()), before the kernel's dtype dispatch:
    c10's checked conversion refuses a mean out of an integer output's range (CPU's words)."""
    if not (dtype.is_floating_point or dtype.is_complex):
        dtypes.checked_scalar(mean, dtype)


def check_std_first(op: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """normal's std check, which CPU makes before its kernel's dtype dispatch (an int16 std with a negative element
    is refused for its sign, not its dtype); a traced std (a compiled graph's node) has no values to read."""
    names = [a.name for a in op._schema.arguments]
    if "std" not in names:
        return
    i = names.index("std")
    std = args[i] if i < len(args) else kwargs.get("std", 1.0)
    if isinstance(std, torch.Tensor):
        _check_std_tensor(std)
        mean = args[0] if args else kwargs.get("mean")
        if isinstance(mean, int | float) and op._overloadname == "float_Tensor":
            _check_mean_fits(mean, std.dtype)
    elif isinstance(std, int | float):
        _check_std(std)


def _resize_output(out: torch.Tensor, shape: torch.Size) -> None:
    from torch._prims_common.wrappers import _maybe_resize_out

    _maybe_resize_out(out, shape)


def _fill_mean_float(output: torch.Tensor, mean: torch.Tensor, std: float, generator: Any) -> torch.Tensor:
    if output.numel():  # CPU's kernel dispatches on no empty output (an empty uint8 out= is returned as it is)
        output.normal_(0.0, std, generator=generator)
    return output.add_(mean)


def _fill_float_std(output: torch.Tensor, mean: float, std: torch.Tensor, generator: Any) -> torch.Tensor:
    _check_mean_fits(mean, output.dtype)
    if output.numel():
        output.normal_(0.0, 1.0, generator=generator)
    return output.mul_(std).add_(_mean_tensor(mean, output.dtype, output.device))


def _mean_tensor(mean: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The mean as CPU's kernel converts it: checked into an integer, float32 or complex64 output (full's words),
    unchecked into float16 and bfloat16, where a mean beyond their range is +-inf (fuzz: a float16 mean of 1e10,
    CPU inf; tpu's full refused it)."""
    if dtype in (torch.float16, torch.bfloat16):
        return torch.full((), mean, dtype=torch.float64, device=device).to(torch.float32).to(dtype)
    return torch.full((), mean, dtype=dtype, device=device)


def _fill_tensors(output: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, generator: Any) -> torch.Tensor:
    if output.numel():
        output.normal_(0.0, 1.0, generator=generator)
    return output.mul_(std).add_(mean)


def normal_tensor_float(mean: torch.Tensor, std: float = 1.0, *, generator: Any = None) -> torch.Tensor:
    _check_std(std)
    output = torch.empty(mean.shape, dtype=mean.dtype, device=mean.device)
    return _fill_mean_float(output, mean, std, generator)


def normal_tensor_float_out(mean: torch.Tensor, std: float = 1.0, *, generator: Any = None,
                            out: torch.Tensor) -> torch.Tensor:
    _check_std(std)
    _resize_output(out, torch.Size(broadcast(mean.shape, out.shape)))
    return _fill_mean_float(out, mean, std, generator)


def normal_float_tensor(mean: float, std: torch.Tensor, *, generator: Any = None) -> torch.Tensor:
    _check_std_tensor(std)
    output = torch.empty(std.shape, dtype=std.dtype, device=std.device)
    return _fill_float_std(output, mean, std, generator)


def normal_float_tensor_out(mean: float, std: torch.Tensor, *, generator: Any = None,
                            out: torch.Tensor) -> torch.Tensor:
    _check_std_tensor(std)
    _resize_output(out, std.shape)
    return _fill_float_std(out, mean, std, generator)


def normal_tensor_tensor(mean: torch.Tensor, std: torch.Tensor, *, generator: Any = None) -> torch.Tensor:
    _check_std_tensor(std)
    shape = torch.Size(broadcast(mean.shape, std.shape))
    output = torch.empty(shape, dtype=mean.dtype, device=mean.device)
    return _fill_tensors(output, mean, std, generator)


def normal_tensor_tensor_out(mean: torch.Tensor, std: torch.Tensor, *, generator: Any = None,
                             out: torch.Tensor) -> torch.Tensor:
    _check_std_tensor(std)
    _resize_output(out, torch.Size(broadcast(mean.shape, std.shape)))
    return _fill_tensors(out, mean, std, generator)


def arange_start_out(start: Any, end: Any, step: Any = 1, *, out: torch.Tensor) -> torch.Tensor:
    values = torch.arange(start, end, step, dtype=out.dtype, device=out.device)
    size = values.numel()
    if out.numel() != size:
        if out.numel() > 0:
            warnings.warn(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} "
                          f"which does not match the computed number of elements {size}. Note that this may occur "
                          "as a result of rounding error. The out tensor will be resized to a tensor of shape "
                          f"({size},).", UserWarning, stacklevel=2)
        out.resize_((size,))
    if any(st == 0 and n > 1 for n, st in zip(out.shape, out.stride())):  # result.copy_(r)'s overlap check
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    return out.copy_(values.view(out.shape))


def arange_out(end: Any, *, out: torch.Tensor) -> torch.Tensor:
    return arange_start_out(0, end, 1, out=out)


def register(kernel: Any) -> None:
    kernel(aten.normal.Tensor_float, normal_tensor_float)
    kernel(aten.normal.Tensor_float_out, normal_tensor_float_out)
    kernel(aten.normal.float_Tensor, normal_float_tensor)
    kernel(aten.normal.float_Tensor_out, normal_float_tensor_out)
    kernel(aten.normal.Tensor_Tensor, normal_tensor_tensor)
    kernel(aten.normal.Tensor_Tensor_out, normal_tensor_tensor_out)
    kernel(aten.arange.start_out, arange_start_out)
    kernel(aten.arange.out, arange_out)
