"""ATen's shape checks of grid_sampler_2d / grid_sampler_3d (forward and backward), made before the lowerings in
ops/grid.py read the shapes, so a mismatched batch or grid raises CPU's RuntimeError and words instead of failing
inside the lowering (a reshape's element count) or computing from the wrong dims.

Rules and order as ATen's `check_grid_sampler_common`, `check_grid_sampler_2d` and `check_grid_sampler_3d`
(aten/src/ATen/native/GridSamplerUtils.h). `tests/test_grid_checks.py` compares the cases with CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchtpu.ops.arg_checks import dim_size, sizes_text

BICUBIC = 2


def check_grid_sampler(input_shape: Sequence[int], grid_shape: Sequence[int], nd: int, mode: int,
                       padding: int = 0) -> None:
    """The checks of an `nd`-d grid sampler (nd = 2 or 3) of an input and a grid of these shapes; then the modes,
    which ATen does not check: its kernels leave the output unwritten for an interpolation or padding mode they do
    not know (uninitialized memory: fuzz seed 35, grid_sampler_2d.out with padding_mode 3), tpu refuses it."""
    ins, gs = sizes_text(input_shape), sizes_text(grid_shape)
    if dim_size(input_shape, 0) != dim_size(grid_shape, 0):
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {ins} and grid with sizes {gs}")
    if dim_size(grid_shape, -1) != len(input_shape) - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {len(input_shape) - 2} in last dimension, "
                           f"but got grid with sizes {gs}")
    for i in range(2, len(input_shape)):
        if int(input_shape[i]) <= 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {ins} with dimension {i} being empty")
    if len(input_shape) != nd + 2 or len(grid_shape) != len(input_shape):
        raise RuntimeError(f"grid_sampler(): expected {nd + 2}D input and grid with same number of dimensions, but "
                           f"got input with sizes {ins} and grid with sizes {gs}")
    if nd == 3 and mode == BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if mode not in (0, 1, 2) or padding not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): interpolation_mode {mode} or padding_mode {padding} is not one of 0, 1, "
                           "2 (bilinear/nearest/bicubic, zeros/border/reflection): CPU's kernel leaves its output "
                           "unwritten; tpu refuses it")
