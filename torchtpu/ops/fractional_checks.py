"""ATen's argument checks of fractional_max_pool2d/3d (the structured meta functions, then
`fractional_max_pool_check_shape` of FractionalMaxPooling.h), in CPU's order, class and words, made before the
lowering builds its windows: without them a malformed `_random_samples` gave a ValueError from a reshape, an
IndexError, or (a last dimension longer than the pooled dims) a silent result where CPU raises.

`samples_rows` says how many leading rows of `_random_samples` the kernel reads: CPU reads the first N (1 for an
unbatched input) and ignores the rest. `tests/test_autograd_parity.py` compares every case with CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchtpu.ops.arg_checks import dim_size

_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def check(nd: int, shape: Sequence[int], dtype: torch.dtype, kernel_size: Sequence[int],
          output_size: Sequence[int], samples_shape: Sequence[int], samples_dtype: torch.dtype) -> int:
    """Raise CPU's RuntimeError for invalid arguments; return the batch size N (1 for an unbatched input)."""
    name = f"fractional_max_pool{nd}d"
    many = "Ints" if nd == 2 else "three Ints"
    if len(kernel_size) != nd:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of {many}")
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of {many}")
    where = f"{name}()" if nd == 2 else f"{name}_out()"
    sizes = "[" + ", ".join(str(s) for s in shape) + "]"
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{where}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {sizes}")
    for i in range(1, len(shape)):
        if shape[i] <= 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{sizes} with dimension {i} being empty.")
    batched = len(shape) == nd + 2
    spatial = shape[-nd:]
    for d, what in enumerate(_NAMES[nd]):
        last = output_size[d] + kernel_size[d] - 1  # the 2-d kernel allows the last window to end at the edge,
        if last > spatial[d] or (nd == 3 and last == spatial[d]):  # the 3-d one checks `< input` (CPU's rules)
            raise RuntimeError(f"{where}: pool {what} {kernel_size[d]} too large relative to input {what} "
                               f"{spatial[d]}")
    if samples_dtype != dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if len(samples_shape) != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {len(samples_shape)}")
    n, c = (shape[0], shape[1]) if batched else (1, shape[0])
    if samples_shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples_shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples_shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples_shape[2]}.")
    return n


def check_backward(nd: int, grad_shape: Sequence[int], shape: Sequence[int], output_size: Sequence[int],
                   indices_shape: Sequence[int] | None = None) -> None:
    """The backward's first checks (FractionalMaxPool2d.cpp's meta, FractionalMaxPool3d.cpp's template): the
    input's plane and pooled dims read by index (IndexError, ATen's words, for a rank below nd + 1), then (3-d)
    grad_output's time, height and width against output_size (read by index too), (2-d) grad_output's and indices'
    whole shapes."""
    first = 1 if len(shape) == nd + 2 else 0
    for dim in range(first, first + nd + 1):
        dim_size(shape, dim)
    if nd == 3:
        for i, what in enumerate(_NAMES[3]):
            if dim_size(grad_shape, first + 1 + i) != output_size[i]:
                raise RuntimeError(f"fractional_max_pool3d_backward_out(): gradOutput {what} unexpected")
    else:  # 2-d: grad_output's and indices' whole shape against the input's leading dims and output_size
        expected = (*shape[:first + 1], *output_size)
        for what, got in (("gradOutput", grad_shape), ("indices", indices_shape)):
            if got is not None and tuple(got) != expected:
                raise RuntimeError(f"fractional_max_pool2d_backward(): {what} sizes unexpected")
