"""ATen's argument and shape checks of max and average pooling (2d and 3d, forward and backward), made before a
pooling lowering builds its windows, so invalid input raises CPU's error class and message instead of giving a
result (a negative padding or a kernel larger than the input used to give an empty output).

The rules and their order follow ATen's `Pool.h` (`pooling_output_shape`, `pool2d_shape_check`,
`pool3d_shape_check`) and the avg/max pooling meta functions; `tests/test_pool_checks.py` compares every case with
CPU. `params` returns the per-dimension kernel, stride, padding and dilation the lowerings use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.ops.arg_checks import dim_size
from torchtpu.ops.tracing import aten_meta_name, aten_type_name

_WORDS = {2: "two", 3: "three"}


def _per_dim(value: Sequence[int] | int, nd: int, message: str, *, empty_ok: bool = False) -> list[int] | None:
    v = [value] if isinstance(value, int) else list(value)
    if empty_ok and not v:
        return None
    if len(v) not in (1, nd):
        raise RuntimeError(message)
    return v * nd if len(v) == 1 else v


def per_dim(value: Sequence[int] | int, nd: int, message: str, *, empty_ok: bool = False) -> list[int] | None:
    """One value per pooled dimension (a single one repeated), else RuntimeError(`message`)."""
    return _per_dim(value, nd, message, empty_ok=empty_ok)


def max_pool_messages(nd: int) -> dict[str, str]:
    """The words of max pooling's kernel_size / stride / padding / dilation count checks."""
    return _messages("max", nd)


def _messages(kind: str, nd: int) -> dict[str, str]:
    name, n = f"{kind}_pool{nd}d", _WORDS[nd]
    if kind == "avg" and nd == 3:
        return {"kernel_size": f"{name}: kernel_size must be a single int, or a tuple of {n} ints",
                "stride": f"{name}: stride must be omitted, a single int, or a tuple of {n} ints",
                "padding": f"{name}: padding must be a single int, or a tuple of {n} ints"}
    return {"kernel_size": f"{name}: kernel_size must either be a single int, or a tuple of {n} ints",
            "stride": f"{name}: stride must either be omitted, a single int, or a tuple of {n} ints",
            "padding": f"{name}: padding must either be a single int, or a tuple of {n} ints",
            "dilation": f"{name}: dilation must be either a single int, or a tuple of {n} ints"}


def output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """ATen's `pooling_output_shape` with its checks (stride, padding's sign and its bound by the kernel)."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                           f"kernel_size={k} and dilation={d}")
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def params(kind: str, nd: int, shape: Sequence[int], kernel_size: Sequence[int] | int,
           stride: Sequence[int] | int, padding: Sequence[int] | int, dilation: Sequence[int] | int = 1,
           ceil_mode: bool = False, divisor_override: int | None = None, backward: bool = False
           ) -> tuple[list[int], list[int], list[int], list[int]]:
    """Checks one pooling call as ATen does (`kind` "max" or "avg", `nd` 2 or 3, `shape` the input's, `backward`:
    the max pooling backward's words) and returns (kernel, stride, padding, dilation) per pooled dimension."""
    msg = _messages(kind, nd)
    k = _per_dim(kernel_size, nd, msg["kernel_size"])
    s = _per_dim(stride, nd, msg["stride"], empty_ok=True) or list(k)
    p = _per_dim(padding, nd, msg["padding"])
    d = _per_dim(dilation, nd, msg["dilation"]) if kind == "max" else [1] * nd
    ndim = len(shape)
    if (kind == "max" and ndim not in (nd + 1, nd + 2)) or (kind == "avg" and nd == 3 and ndim not in (4, 5)):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if kind == "avg" and divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if kind == "avg" and nd == 2 and ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got -3)")
    spatial = list(shape[ndim - nd:])
    outs = [output_size(n, *a, ceil_mode) for n, *a in zip(spatial, k, s, p, d)]
    if nd == 2:
        _check_2d(shape, k, s, d, p, outs)
    else:
        where = f"{kind}_pool3d()"
        if kind == "max":
            where = f"max_pool3d_with_indices{'_backward' if backward else ''}_out_cpu_template()"
        _check_3d(kind, where, shape, k, s, d, p, outs)
    return k, s, p, d


def _positive(what: str, values: Sequence[int], names: str) -> None:
    if any(v <= 0 for v in values):
        got = " ".join(f"{n}: {v}" for n, v in zip(names.split(), values))
        raise RuntimeError(f"{what} should be greater than zero, but got {got}")


def _too_small(shape: Sequence[int], nd: int, outs: Sequence[int]) -> None:
    if min(outs) < 1:
        planes = shape[-nd - 1] if len(shape) > nd else 1
        given = "x".join(str(v) for v in (planes, *shape[len(shape) - nd:]))
        calc = "x".join(str(v) for v in (planes, *outs))
        raise RuntimeError(f"Given input size: ({given}). Calculated output size: ({calc}). Output size is too small")


def _check_2d(shape: Sequence[int], k: list[int], s: list[int], d: list[int], p: list[int], outs: list[int]) -> None:
    _positive("kernel size", k, "kH kW")
    _positive("stride", s, "dH dW")
    _positive("dilation", d, "dilationH dilationW")
    ndim = len(shape)
    valid = ndim >= 3 and shape[1] != 0 and shape[2] != 0  # ATen: sizes 1 and 2 whatever the rank
    if not ((ndim == 3 and shape[0] != 0 and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"[{', '.join(map(str, shape))}]")
    if not (k[1] // 2 >= p[1] and k[0] // 2 >= p[0]):  # the plain kernel's half (pooling_output_shape: dilated)
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {p[1]}, "
                           f"padH = {p[0]}, kW = {k[1]}, kH = {k[0]}")
    _too_small(shape, 2, outs)


def _check_3d(kind: str, where: str, shape: Sequence[int], k: list[int], s: list[int], d: list[int], p: list[int],
              outs: list[int]) -> None:
    _positive("kernel size", k, "kT kH kW")
    _positive("stride", s, "dT dH dW")
    _positive("dilation", d, "dilationT dilationH dilationW")
    ndim = len(shape)
    for size in shape[1:] if ndim == 5 else shape:
        if size <= 0:
            raise RuntimeError(f"{where}: Expected input's non-batch dimensions to have positive length, but "
                               f"input has a shape of [{', '.join(map(str, shape))}] and non-batch dimension {size} "
                               "has length zero!")
    t, h, w = shape[-3:]
    if kind == "avg" and (t < k[0] or h < k[1] or w < k[2]):
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if not (k[0] // 2 >= p[0] and k[2] // 2 >= p[2] and k[1] // 2 >= p[1]):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {k[0]} kW: "
                           f"{k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
    _too_small(shape, 3, outs)


def _sizes(shape: Sequence[int]) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _dim_out_of_range(dim: int, ndim: int) -> IndexError:
    if ndim == 0:
        return IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")


def adaptive(kind: str, nd: int, shape: Sequence[int], output_size: Sequence[int]) -> None:
    """ATen's checks of adaptive_{avg,max}_pool{2,3}d (`kind` "avg" or "max"): output_size has `nd` entries, the
    input is (nd+1)-D or (nd+2)-D and its non-batch dims are non-empty."""
    name = f"adaptive_{kind}_pool{nd}d"
    if kind == "avg" and len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if len(shape) not in (nd + 1, nd + 2):
        got = "got:" if kind == "max" else "got"
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but {got} {_sizes(shape)}")
    for i in range(1, len(shape)):
        if shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {_sizes(shape)} with dimension {i} being empty")
    if len(output_size) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")


def pooled_sizes(grad_shape: Sequence[int], shape: Sequence[int], nd: int, outs: Sequence[int]) -> None:
    """check_dim_size of a pooling backward's gradOutput (or indices), one dim at a time: the input's rank, its
    planes, then the pooled sizes `outs`."""
    ndim = len(shape)
    for dim, want in zip(range(ndim - nd - 1, ndim), (shape[ndim - nd - 1], *outs)):
        if len(grad_shape) != ndim or grad_shape[dim] != want:
            raise RuntimeError(f"Expected a tensor of dimension {ndim} and tensor.size[{dim}] == {want} but got: "
                               f"dimension {len(grad_shape)} and tensor.size[{dim}] = {dim_size(grad_shape, dim)}")


def avg_backward(nd: int, grad_shape: Sequence[int], shape: Sequence[int], kernel: Sequence[int],
                 stride: Sequence[int], padding: Sequence[int], ceil_mode: bool) -> None:
    """ATen's avg_pool{2,3}d_backward_shape_check after `params`' checks: grad_output has the input's rank, its
    planes and the pooled sizes (check_dim_size, one dim at a time; a tpu grad of another shape broadcast or gave
    a result of its shape, fuzz seed 25). ATen leaves the batch unchecked and reads past a smaller grad_output
    (heap corruption): refused here."""
    ndim = len(shape)
    outs = [output_size(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(shape[ndim - nd:], kernel, stride, padding)]
    pooled_sizes(grad_shape, shape, nd, outs)
    if ndim == nd + 2 and grad_shape[0] != shape[0]:
        raise RuntimeError(f"avg_pool{nd}d_backward: grad_output has batch size {grad_shape[0]} but the input "
                           f"{shape[0]} (CPU does not check it and reads past grad_output)")


def adaptive_avg_backward(nd: int, grad_shape: Sequence[int], self_shape: Sequence[int],
                          grad_dtype: torch.dtype | None = None, self_dtype: torch.dtype | None = None) -> None:
    """ATen's checks of _adaptive_avg_pool{2,3}d_backward: grad_output has the input's rank, which is 3-D or 4-D
    (2d) or at least 4-D (3d, whose kernel indexes dim -4), and grad_output's non-batch dims are non-empty; then
    the dtypes: 2d checks grad_output's and dispatches on it, 3d dispatches on the input and reads grad_output as
    its type (data_ptr<scalar_t>; fuzz seed 38: both computed integers, bools and mixed dtypes)."""
    _adaptive_avg_backward_shapes(nd, grad_shape, self_shape)
    if grad_dtype is None or self_dtype is None:
        return
    kernel = "adaptive_avg_pool2d_backward" if nd == 2 else "adaptive_avg_pool3d_backward_cpu"
    if nd == 2 and grad_dtype != self_dtype:
        raise RuntimeError(f"adaptive_avg_pool2d_backward_out_cpu_template: Expected dtype {_cpp(self_dtype)} for "
                           f"`grad_output` but got dtype {_cpp(grad_dtype)}")
    if self_dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(self_dtype)}'")
    if grad_dtype != self_dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(self_dtype)} but found {aten_type_name(grad_dtype)}")


def _cpp(dtype: torch.dtype) -> str:
    from torchtpu.ops.out_rules import _CPP_NAMES

    return _CPP_NAMES.get(dtype, str(dtype))


def _adaptive_avg_backward_shapes(nd: int, grad_shape: Sequence[int], self_shape: Sequence[int]) -> None:
    where = f"adaptive_avg_pool{nd}d_backward_out_cpu_template"
    ndim = len(self_shape)
    if len(grad_shape) != ndim:
        grad = "grad_output" if nd == 2 else "gradOutput_"
        raise RuntimeError(f"{where}: Expected dimensions {ndim} for `{grad}` but got dimensions {len(grad_shape)}")
    if nd == 2 and ndim not in (3, 4):
        raise RuntimeError(f"{where}: Expected 3D or 4D tensor, but got {_sizes(self_shape)}")
    if nd == 3 and ndim < 4:
        raise _dim_out_of_range(-4, ndim)
    for i in range(1, ndim):
        if grad_shape[i] == 0:
            raise RuntimeError(f"adaptive_avg_pool{nd}d_backward(): Expected grad_output to have non-zero size for "
                               f"non-batch dimensions, but grad_output has sizes {_sizes(grad_shape)} with dimension "
                               f"{i} being empty")


def adaptive_max_backward(nd: int, grad: Any, self: Any, indices: Any) -> None:
    """ATen's checks of adaptive_max_pool{2,3}d_backward: grad_output is (nd+1)-D or (nd+2)-D and of the input's
    dtype, indices have the input's rank and grad_output's sizes."""
    grad_shape, self_shape, indices_shape = grad.shape, self.shape, indices.shape
    if len(grad_shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"adaptive_max_pooling2d_backward(): Expected 3D or 4D grad_output, but got: "
                           f"{_sizes(grad_shape)}" if nd == 2 else
                           f"adaptive_max_pool3d_backward(): Expected 4D or 5D gradOutput, but got: "
                           f"{_sizes(grad_shape)}")
    for i in range(1, len(grad_shape)):  # adaptive_pool_empty_output_check (fuzz seed 33: tpu gave a result)
        if int(grad_shape[i]) <= 0:
            raise RuntimeError(f"adaptive_max_pool{nd}d_backward(): Expected grad_output to have non-zero size for "
                               f"non-batch dimensions, but grad_output has sizes {_sizes(grad_shape)} with dimension "
                               f"{i} being empty")
    if grad.dtype != self.dtype:
        name = "grad_output" if nd == 2 else "gradOutput"
        raise RuntimeError(f"expected dtype {aten_meta_name(self.dtype)} for `{name}` but got dtype "
                           f"{aten_meta_name(grad.dtype)}")
    if len(indices_shape) != len(self_shape):
        raise RuntimeError(f"expected dimensions {len(self_shape)} for `indices` but got dimensions "
                           f"{len(indices_shape)}")
    if tuple(indices_shape) != tuple(grad_shape):
        raise RuntimeError(f"expected sizes {_sizes(indices_shape)} for `gradOutput` but got sizes "
                           f"{_sizes(grad_shape)}")
    long_indices(indices)  # the kernel's indices.data_ptr<int64_t>(), empty or not (fuzz seed 45)


def max_pool3d_out(b: dict[str, Any]) -> None:
    """max_pool3d_with_indices.out: the call's checks, then the kernel's typed pointers (data_ptr): out of the
    input's dtype, then int64 indices."""
    self = b["self"]
    params("max", 3, self.shape, b["kernel_size"], b["stride"], b["padding"], b["dilation"], b["ceil_mode"])
    if b["out"].dtype != self.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(self.dtype)} but found "
                           f"{aten_type_name(b['out'].dtype)}")
    long_indices(b["indices"])


def long_indices(indices: Any) -> None:
    """A CPU kernel's `indices.data_ptr<int64_t>()`."""
    if indices.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {aten_type_name(indices.dtype)}")


def unpool(nd: int, shape: Sequence[int], indices: Any, output_size: Sequence[int],
           stride: Sequence[int] = (), padding: Sequence[int] = ()) -> None:
    """ATen's checks of max_unpool2d (max_unpooling2d_forward_out_cpu) and max_unpool3d
    (max_unpooling3d_shape_check), in CPU's order; the kernel's index range check is the scatter's."""
    ndim = len(shape)
    if nd == 2:
        if indices.dtype != torch.int64:
            raise RuntimeError(f"elements in indices should be type int64 but got: {aten_type_name(indices.dtype)}")
        if len(output_size) != 2:
            raise RuntimeError(f"There should be exactly two elements (height, width) in output_size, but got "
                               f"{len(output_size)} elements.")
        if ndim not in (3, 4):
            raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with {ndim} "
                               "dimensions.")
    else:
        if indices.dtype != torch.int64:
            raise RuntimeError("elements in indices should be type int64")
        if ndim not in (4, 5):
            raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with {ndim} "
                               "dimensions.")
        for what, v in (("output_size", output_size), ("stride", stride), ("padding", padding)):
            if len(v) != 3:
                got = "" if what == "output_size" else ":"
                raise RuntimeError(f"There should be exactly three elements (depth, height, width) in {what}, but "
                                   f"got{got} {len(v)} elements.")
    if tuple(shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({_sizes(shape)}) but "
                           f"got indices tensor with shape: {_sizes(indices.shape)}")
    for i in range(1, ndim):
        if shape[i] <= 0:
            raise RuntimeError(f"max_unpooling{nd}d_forward_out_cpu(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but got {_sizes(shape)} with dimension {i} being empty.")
    if nd == 3 and any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {_sizes(stride)}")


def unpool_kernel(nd: int, dtype: torch.dtype, out_numel: int, out_dtype: torch.dtype | None = None) -> None:
    """max_unpool's kernel, run for a non-empty output only: AT_DISPATCH_FLOATING_TYPES_AND2 on the input's dtype
    (bool and complex too: fuzz seed 69), then the output's data_ptr<scalar_t>() (an out= of another dtype), both
    before the kernel's index range check."""
    if not out_numel:
        return
    if dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise NotImplementedError(f"\"max_unpool{nd}d\" not implemented for '{aten_type_name(dtype)}'")
    if out_dtype is not None and out_dtype != dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(dtype)} but found {aten_type_name(out_dtype)}")


def unpool_out(nd: int) -> Callable[[dict[str, Any]], None]:
    """max_unpool2d.out / max_unpool3d.out: the call's checks, then the kernel's (unpool_kernel)."""

    def check(b: dict[str, Any]) -> None:
        self, size = b["self"], list(b["output_size"])
        unpool(nd, self.shape, b["indices"], size, b.get("stride", ()), b.get("padding", ()))
        numel = 1
        for n in (*self.shape[:self.dim() - len(size)], *size):
            numel *= n
        unpool_kernel(nd, self.dtype, numel, b["out"].dtype)

    return check

