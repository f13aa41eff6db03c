"""ATen's shape checks of upsampling (forward and backward) and of reflection / replication padding, made before
the lowerings in ops/resize.py build their matrices, so invalid input raises CPU's exception class and words
instead of computing a result from the wrong dims (a silent result) or failing inside the lowering (an IndexError
from a shape tuple).

The rules and their order follow ATen's `upsample_{1,2,3}d_common_check` (UpSample.h), the upsample meta
functions and their backward's grad_output checks, and `padding::check_valid_input` with the padding ops' size
checks. Each function takes shapes (tuples of ints), so the lowerings (Sym shapes) and `dtype_refusals` (real
tensors' shapes: CPU checks shapes before its kernel's dtype dispatch) call the same rule.
`tests/test_spatial_checks.py` compares the cases with CPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from torchtpu.ops.arg_checks import dim_size, sizes_text

_LETTERS = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}




def upsample_common(nd: int, input_size: Sequence[int], output_size: Sequence[int]) -> list[int]:
    """ATen's upsample_{nd}d_common_check: returns the full output size (N, C, *output_size)."""
    if len(output_size) != nd:
        raise RuntimeError(f"It is expected output_size equals to {nd}, but got size {len(output_size)}")
    if len(input_size) != nd + 2:
        raise RuntimeError(f"It is expected input_size equals to {nd + 2}, but got size {len(input_size)}")
    spatial = [int(s) for s in input_size[2:]]
    outs = [int(s) for s in output_size]
    if any(s <= 0 for s in spatial) or any(s <= 0 for s in outs):
        letters = _LETTERS[nd]
        if nd == 1:
            raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (W: {spatial[0]}) "
                               f"and output (W: {outs[0]})")
        got_in = ", ".join(f"{k}: {v}" for k, v in zip(letters, spatial))
        got_out = ", ".join(f"{k}: {v}" for k, v in zip(letters, outs))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({got_in}) "
                           f"output ({got_out})")
    return [int(input_size[0]), int(input_size[1]), *outs]


def upsample(nd: int, shape: Sequence[int], output_size: Sequence[int]) -> None:
    """The forward meta's checks of an {nd}-d upsampling of an input of `shape`."""
    upsample_common(nd, shape, output_size)
    if nd == 1:
        ok = shape[1] != 0 and shape[2] != 0
    else:
        rest = 1
        for s in shape[1:]:
            rest *= int(s)
        ok = rest != 0
    if not ok:
        raise RuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with sizes {sizes_text(shape)}")


def upsample_backward(nd: int, grad_shape: Sequence[int], output_size: Sequence[int],
                      input_size: Sequence[int]) -> None:
    """The backward meta's checks: the common check on `input_size`, then grad_output has the output's shape
    (the 1-d ops by `check_dim_size`, the 2-d and 3-d ones by their own words)."""
    full = upsample_common(nd, input_size, output_size)
    dim = nd + 2
    if nd == 1:
        for i, want in enumerate(full):
            if len(grad_shape) != dim or grad_shape[i] != want:
                raise RuntimeError(f"Expected a tensor of dimension {dim} and tensor.size[{i}] == {want} but got: "
                                   f"dimension {len(grad_shape)} and tensor.size[{i}] = {dim_size(grad_shape, i)}")
        return
    if len(grad_shape) != dim:
        raise RuntimeError(f"Expected grad_output to be a tensor of dimension {dim} but got: dimension "
                           f"{len(grad_shape)}")
    for i, want in enumerate(full):
        if grad_shape[i] != want:
            raise RuntimeError(f"Expected grad_output to have the same shape as output; output.size({i}) = {want} "
                               f"but got grad_output.size({i}) = {grad_shape[i]}")


def upsample_args(op: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """The shape checks of an upsampling call on real tensors (what `dtype_refusals` runs before a dtype
    refusal, as CPU's meta function comes before its kernel's dtype dispatch)."""
    name = op._schema.name.split("::")[1]
    nd = int(re.search(r"(\d)d", name).group(1))  # type: ignore[union-attr]
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    first = args[0] if args else None
    if not hasattr(first, "shape") or not isinstance(bound.get("output_size"), list | tuple):
        return
    if name.endswith("_backward"):
        upsample_backward(nd, tuple(first.shape), bound["output_size"], bound["input_size"])
    else:
        upsample(nd, tuple(first.shape), bound["output_size"])


# --- padding ------------------------------------------------------------------------------------------------------

def pad_input(nd: int, shape: Sequence[int], padding: Sequence[int], mode: str) -> None:
    """ATen's padding::check_valid_input (the padding's length, then an (nd+1)-D or (nd+2)-D input whose only
    empty dim may be the batch), then reflection's bound by the input size and the output size's positivity."""
    if len(padding) != 2 * nd:
        more = "" if mode == "replicate" else f", but got: {len(padding)}"
        raise RuntimeError(f"padding size is expected to be {2 * nd}{more}")
    ndim = len(shape)
    if ndim == nd + 2:
        valid = all(s != 0 for s in shape[1:])
    else:
        valid = ndim == nd + 1 and all(s != 0 for s in shape)
    if not valid:
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {sizes_text(shape)}")
    spatial = [int(s) for s in shape[ndim - nd:]]
    pads = [(int(padding[2 * (nd - 1 - i)]), int(padding[2 * (nd - 1 - i) + 1])) for i in range(nd)]  # D, H, W
    if mode == "reflect":
        for k, i in enumerate(_REFLECT_ORDER[nd]):
            lo, hi = pads[i]
            if not (lo < spatial[i] and hi < spatial[i]):
                raise RuntimeError(f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {ndim - nd + i} of input "
                                   f"{sizes_text(shape)}")
    outs = [s + lo + hi for s, (lo, hi) in zip(spatial, pads)]
    if all(o < 1 for o in outs):  # CPU's quirk: only when every output dim is below 1 (else see below)
        letters = _LETTERS[nd]
        if nd == 1:
            given = f"W: {spatial[0]}"
        elif nd == 2:
            given = f"H: {spatial[0]}, W: {spatial[1]}" + (" " if mode == "replicate" else "")
        else:
            given = f"D: {spatial[0]} H: {spatial[1]}, W: {spatial[2]}"
        calc = " ".join(f"{k}: {o}" for k, o in zip(letters, outs))
        raise RuntimeError(f"input ({given}) is too small. Calculated output {calc}")
    result = [int(v) for v in shape[:ndim - nd]] + outs
    numel = 1
    for v in result:
        numel *= v
    if mode == "reflect" and nd == 2 and numel < 0:
        raise RuntimeError("numel: integer multiplication overflow")
    for v in result:  # then the output's allocation refuses a negative size
        if v < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {v}: {sizes_text(result)}")


_REFLECT_ORDER = {1: (0,), 2: (1, 0), 3: (2, 1, 0)}  # the dims whose padding reflection checks, in CPU's order


def pad1d_backward(mode: str, grad_shape: Sequence[int], shape: Sequence[int], padding: Sequence[int]) -> None:
    """The meta checks of reflection_pad1d_backward / replication_pad1d_backward: the width dim (2 for a 3-D
    input, else 1) read by index, reflection's padding bound, then grad_output's width."""
    if mode == "replicate" and len(padding) != 2:
        raise RuntimeError("padding size is expected to be 2")
    dim_w = 2 if len(shape) == 3 else 1
    width = dim_size(shape, dim_w)
    lo, hi = int(padding[0]), int(padding[1])
    if mode == "reflect" and not (lo < width and hi < width):
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({lo}, {hi}) at dimension {dim_w} of input {sizes_text(shape)}")
    got = dim_size(grad_shape, dim_w)
    if width + lo + hi != got:
        grad, sep = ("grad_output", ",") if mode == "reflect" else ("gradOutput", "")
        raise RuntimeError(f"{grad} width unexpected. Expected: {width + lo + hi}{sep} Got: {got}")


_CHECK_TAIL = "  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"


def pad_backward(mode: str, nd: int, grad_shape: Sequence[int], shape: Sequence[int],
                 padding: Sequence[int]) -> None:
    """The checks of the padding backward ops before their kernel: pad1d_backward's, else (2-D and 3-D) the
    padding's length (reflection_pad2d_backward reads four values unchecked), reflection_pad3d_backward's rank
    checks, the input's D, H, W read by index (the batch dim shifts them), then grad_output's W, H, D sizes."""
    if nd == 1:
        pad1d_backward(mode, grad_shape, shape, padding)
        return
    reflect = mode == "reflect"
    if len(padding) != 2 * nd and not (reflect and nd == 2):
        more = f", but got: {len(padding)}" if reflect else ""
        raise RuntimeError(f"padding size is expected to be {2 * nd}{more}")
    if reflect and nd == 3:
        if not len(shape) > 3:
            raise RuntimeError(f"Expected input.dim() > 3 to be true, but got false.{_CHECK_TAIL}")
        if len(grad_shape) != len(shape):
            raise RuntimeError(f"Expected grad_output.dim() == input.dim() to be true, but got false.{_CHECK_TAIL}")
    if len(padding) < 2 * nd:
        return  # ATen reads past the list (undefined); the lowering refuses it
    dims = [i + (2 if len(shape) == nd + 2 else 1) for i in range(nd)]  # D, H, W (or H, W)
    sizes = [dim_size(shape, d) for d in dims]
    if not reflect and nd == 3 and dim_size(shape, dims[0] - 1) != dim_size(grad_shape, dims[0] - 1):
        raise RuntimeError(f"gradOutput channel unexpected. Expected: {dim_size(shape, dims[0] - 1)}, Got: "
                           f"{dim_size(grad_shape, dims[0] - 1)}")  # replication_pad3d_backward's first size check
    grad = "grad_output" if reflect and nd == 3 else "gradOutput"
    for k, name in enumerate(("width", "height", "depth")[:nd]):  # W first
        i = nd - 1 - k
        expected = sizes[i] + int(padding[2 * k]) + int(padding[2 * k + 1])
        got = dim_size(grad_shape, dims[i])
        if expected != got:
            raise RuntimeError(f"{grad} {name} unexpected. Expected: {expected}, Got: {got}")
