"""Argument checks of the batch and layer norm lowerings (forward forms and backward), made before a lowering traces
anything, so a direct call of `aten.native_batch_norm` / `_native_batch_norm_legit*` / `_batch_norm_*` /
`(native_)batch_norm_backward` with inconsistent arguments raises a RuntimeError naming the argument, instead of a
broadcast error from deep in the lowering or a result.

Where CPU's kernel checks (input rank < 2: channel dim 1 out of range; an integral input: the dispatch macro's
NotImplementedError) the class and words are CPU's. Where CPU's kernel does not check (a weight, bias, running
statistic or saved statistic whose length is not the channel count, a grad_output not of the input's shape: CPU
reads past the end or the start of the buffer; eval mode or a backward without the statistics it reads: CPU
dereferences a null tensor) we raise RuntimeError naming what was wrong and what is valid: there is no CPU result
to match. `tests/test_norm_checks.py` compares every case with CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.dtypes import FLOATS
from torchtpu.ops.tracing import Sym, aten_type_name


def _check_input(op: str, input: Sym, pair: tuple[Sym | None, Sym | None] = (None, None),  # noqa: A002
                 dtype_first: bool = False) -> int:
    """The input's rank and dtype and the running statistics given as a pair, in batch_norm_cpu's order: in
    evaluation mode (and _batch_norm_no_update) the pair and the dispatch come before the channel dim's read,
    in training after it."""
    if input.ndim == 0:  # CPU: a SmallVector of size -1
        raise ValueError(f"{op}: input should have at least 2 dimensions (N, C, *), but got a 0-d tensor")
    if dtype_first:
        _check_pair(pair)
        _check_dtype(input)
    if input.ndim < 2:
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got 1)")
    if not dtype_first:
        _check_pair(pair)
        _check_dtype(input)
    return input.shape[1]


def _check_input_dtype_first(input: Sym, pair: tuple[Sym | None, Sym | None]) -> None:  # noqa: A002
    _check_pair(pair)
    _check_dtype(input)


def _check_as_nd(op: str, named: Sequence[tuple[str, Sym | None]]) -> None:
    """CPU's strided path views each vector as_nd, an internal assert of `t.dim() == 1` (a RuntimeError); refused
    in CPU's class, in our words."""
    for name, t in named:
        if t is not None and t.ndim != 1:
            raise RuntimeError(f"{op}: {name} should be a 1-d tensor of one element per channel, but got a "
                               f"{t.ndim}-d tensor of shape {list(t.shape)}")


def strided(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A batch norm lowering's prepare step: `_strided` where the input or a vector (the first five arguments) is
    not contiguous (see check_forward); arguments unchanged otherwise."""
    if all(not isinstance(t, torch.Tensor) or t.is_contiguous() for t in args[:5]):
        return args, kwargs
    return args, {**kwargs, "_strided": True}


def _check_pair(pair: tuple[Sym | None, Sym | None]) -> None:
    if (pair[0] is None) != (pair[1] is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")


def _check_dtype(input: Sym) -> None:  # noqa: A002
    if input.dtype not in FLOATS:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{aten_type_name(input.dtype)}'")


def _check_dtypes(input: Sym, params: Sequence[Sym | None]) -> None:  # noqa: A002
    """batch_norm_cpu's dtype rules: parameters (weight, bias, running_mean, running_var) of the input's dtype,
    or all float32 with a float16/bfloat16 input (the mixed type), decided by the first defined parameter."""
    given = [p for p in params if p is not None]
    if not given:
        return
    if given[0].dtype != input.dtype:
        for p in given:
            if p.dtype != torch.float32:
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if input.dtype not in (torch.float16, torch.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return
    for p in given:
        if p.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {aten_type_name(input.dtype)} but found "
                               f"{aten_type_name(p.dtype)}")


def check_out_first(input: Sym, params: Sequence[Sym | None], training: bool) -> None:  # noqa: A002
    """batch_norm_cpu_out (the out= forwards): the dispatch on the input, then, where the first given parameter's
    dtype differs from the input's, the mixed type's check, before any read of the input's dims (fuzz seed 66: a
    0-d float16 input with a complex64 weight is "mixed dtype", not the rank's error); in training then the saved
    statistics' resize to size(1) (seeds 74, 76: a 0-d input's IndexError, not the functional's ValueError)."""
    _check_dtype(input)
    given = [p for p in params if p is not None]
    if given and given[0].dtype != input.dtype:
        _check_dtypes(input, params)
    if training and input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")


def _check_channels(op: str, channels: int, named: Sequence[tuple[str, Sym | None]]) -> None:
    for name, t in named:
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{op}: {name} should have one element per channel ({channels}), but got {name} of "
                               f"shape {list(t.shape)}")


def check_forward(op: str, input: Sym, weight: Sym | None, bias: Sym | None,  # noqa: A002
                  running_mean: Sym | None, running_var: Sym | None, training: bool, strided: bool = False) -> None:
    """A batch norm forward: input rank and dtype, the parameters' dtypes, one element per channel in each given
    vector, and running statistics present in eval mode. `strided`: input or a vector is not contiguous, so
    CPU's batch_norm_cpu_transform_input_template views each vector it reads as_nd (asserting it 1-d): in eval
    mode the running statistics, weight and bias before the channel dim's read, in training weight and bias."""
    eval_mode = not training or op == "_batch_norm_no_update"
    params = (weight, bias, running_mean, running_var)
    if eval_mode and input.ndim:  # the mixed-type check precedes the channel dim's read in eval mode
        _check_input_dtype_first(input, (running_mean, running_var))
        _check_dtypes(input, params)
        if strided:
            _check_as_nd(op, (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                              ("bias", bias)))
    c = _check_input(op, input, (running_mean, running_var), eval_mode)
    _check_dtypes(input, params)
    if training or input.numel():  # eval of an empty input: batch_norm_cpu returns before reading any vector
        for stat in (running_mean, running_var):  # batch_norm_cpu reads them through 1-d TensorAccessors
            if stat is not None and stat.ndim != 1:
                raise RuntimeError(f"TensorAccessor expected 1 dims but tensor has {stat.ndim}")
    if strided and not eval_mode:
        _check_as_nd(op, (("weight", weight), ("bias", bias)))
    if training or input.numel():
        _check_channels(op, c, (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                                ("running_var", running_var)))
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"{op}: running_mean and running_var must be defined in evaluation mode (training=False)")


def check_backward(op: str, grad_out: Sym, input: Sym, weight: Sym | None,  # noqa: A002
                   running_mean: Sym | None, running_var: Sym | None, save_mean: Sym | None,
                   save_invstd: Sym | None, train: bool) -> None:
    """A batch norm backward: the forward's checks, grad_output of input's shape, and the statistics that the
    mode reads (save_mean / save_invstd in training, running_mean / running_var in eval)."""
    c = _check_input(op, input)
    if tuple(grad_out.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: grad_out should have the shape of input {list(input.shape)}, but got grad_out of "
                           f"shape {list(grad_out.shape)}")
    if not (input.ndim == 2 and input.dtype in (torch.float32, torch.float64)):
        # batch_norm_backward_cpu_template's conditional_accessor_1d of every given vector, in either mode; a 2-d
        # float/double input takes a path that reads none (torch 2.13 probe; fuzz seed 43: bfloat16 [1, 1])
        for t in (weight, running_mean, running_var, save_mean, save_invstd):
            if t is not None and t.ndim != 1:
                raise RuntimeError(f"TensorAccessor expected 1 dims but tensor has {t.ndim}")
    need = (("save_mean", save_mean), ("save_invstd", save_invstd)) if train else (
        ("running_mean", running_mean), ("running_var", running_var))
    _check_channels(op, c, (("weight", weight), *need))
    for name, t in need:
        if t is None:
            mode = "training (train=True)" if train else "evaluation mode (train=False)"
            raise RuntimeError(f"{op}: {need[0][0]} and {need[1][0]} must be defined in {mode}, but {name} is None")


# --- layer norm (nn.py's lowerings) -----------------------------------------------------------------------------

def _check_layer_norm_dtype(kernel: str, input: Sym) -> None:  # noqa: A002
    if input.dtype not in FLOATS:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(input.dtype)}'")


def layer_norm_stats_dtype(input: Sym, weight: Sym | None, bias: Sym | None) -> torch.dtype:  # noqa: A002
    """The dtype of layer norm's mean and rstd: float32 where the parameters are float32 and the input reduced
    (CPU's mixed type), else the input's."""
    given = [p for p in (weight, bias) if p is not None]
    return given[0].dtype if given and given[0].dtype != input.dtype else input.dtype


def check_layer_norm(input: Sym, weight: Sym | None, bias: Sym | None) -> None:  # noqa: A002
    """native_layer_norm's dtype checks (layer_norm_cpu: the mixed-type rule, the kernel's dispatch)."""
    _check_dtypes(input, (weight, bias))
    _check_layer_norm_dtype("LayerNormKernelImpl", input)


def check_layer_norm_backward(grad_out: Sym, input: Sym, mean: Sym, rstd: Sym,  # noqa: A002
                              weight: Sym | None, bias: Sym | None) -> None:
    """native_layer_norm_backward's dtype checks: the kernel's dispatch on the input, then grad_out of the input's
    dtype, and mean, rstd, weight and bias all float32 (a reduced input with float32 parameters) or all of the
    input's dtype."""
    _check_layer_norm_dtype("LayerNormBackwardKernelImpl", input)
    stats = layer_norm_stats_dtype(input, weight, bias)
    if stats != torch.float32 or input.dtype not in (torch.float16, torch.bfloat16):
        stats = input.dtype
    for t, want in ((grad_out, input.dtype), (mean, stats), (rstd, stats), (weight, stats), (bias, stats)):
        if t is not None and t.dtype != want:
            raise RuntimeError(f"expected scalar type {aten_type_name(want)} but found {aten_type_name(t.dtype)}")


# --- group norm (run by its upstream decomposition, decompositions.ACCEPTED) ------------------------------------

def _enforce(ok: bool, condition: str) -> None:
    if not ok:
        raise RuntimeError(f"Expected {condition} to be true, but got false.  (Could this error message be improved?  "
                           "If so, please report an enhancement request to PyTorch.)")


def check_group_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, n: int, c: int,
                      hxw: int, group: int) -> None:
    """native_group_norm's checks (check_group_norm_inputs, the mixed-dtype rules, GroupNormKernelImpl's), in
    ATen's order and words; CPU's bias message prints the weight's shape ([0] when there is none)."""
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    if c % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(weight.shape) if weight is not None else [0]} and "
                               f"input of shape {list(x.shape)}")
    _check_dtypes(x, (weight, bias))
    if n < 0:  # at::empty({N, group}) for mean and rstd, before the kernel (fuzz seed 57)
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}, {group}]")
    if x.dtype not in FLOATS:  # GroupNormKernelImpl's dispatch, then its size check (fuzz seed 54)
        raise NotImplementedError(f"\"GroupNormKernelImpl\" not implemented for '{aten_type_name(x.dtype)}'")
    _enforce(x.numel() == n * c * hxw, "X.numel() == N * C * HxW")


def _group_norm(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, n: int, c: int, hxw: int,
               group: int, eps: float, **out: torch.Tensor) -> Any:
        check_group_norm(x, weight, bias, n, c, hxw, group)
        if out:  # the .out overload: its decomposition writes the given tensors
            return fn(x, weight, bias, n, c, hxw, group, eps, **out)
        first = weight if weight is not None else bias
        mixed = first is not None and first.dtype != x.dtype  # float32 parameters: float32 statistics, as CPU
        xs = x.float() if mixed else x
        y, mean, rstd = fn(xs if x.ndim >= 2 else xs.reshape(n, c, hxw), weight, bias, n, c, hxw, group, eps)
        return y.to(x.dtype).reshape(x.shape), mean, rstd  # a 1-d X: CPU reads it flat

    return kernel


def _group_norm_backward(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(grad: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
               weight: torch.Tensor | None, n: int, c: int, hxw: int, group: int, output_mask: list[bool],
               **out: torch.Tensor) -> Any:
        _check_dtypes(x, (mean, rstd))
        _enforce(grad.numel() == n * c * hxw, "dY.numel() == N * C * HxW")
        _enforce(x.numel() == n * c * hxw, "X.numel() == N * C * HxW")
        _enforce(mean.numel() == n * group, "mean.numel() == N * group")
        _enforce(rstd.numel() == n * group, "rstd.numel() == N * group")
        _enforce(weight is None or weight.numel() == c, "!gamma.defined() || gamma.numel() == C")
        return fn(grad, x, mean, rstd, weight, n, c, hxw, group, output_mask, **out)

    return kernel


def _batch_norm(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A batch norm forward's checks (`check_forward`, the eager kernels' and lowerings'), in front of upstream's
    decomposition that compile's fake tensors run (compile/fake_checks.py): it checks nothing (fuzz seed 37:
    _batch_norm_with_update with a 3-d running_var computed a [3, 4, 4] result under compile)."""
    name = op._schema.name.split("::")[1]
    names = [a.name for a in op._schema.arguments]
    out = any(a.is_out for a in op._schema.arguments)  # batch_norm_cpu_out: its dispatch before any read

    def kernel(*args: Any, **kwargs: Any) -> Any:
        b = {**dict(zip(names, args)), **kwargs}
        rm, rv = b.get("running_mean"), b.get("running_var")
        if "training" in b:
            training = b["training"]
        else:  # with_update trains; no_training does not; no_update trains without both statistics
            training = name == "_batch_norm_with_update" or (name == "_batch_norm_no_update" and (rm is None or
                                                                                               rv is None))
        if out:
            check_out_first(b["input"], [b.get(n) for n in ("weight", "bias", "running_mean", "running_var")],
                            training)
        check_forward(name, b["input"], b.get("weight"), b.get("bias"), rm, rv, training)
        return fn(*args, **kwargs)

    return kernel


_WRAPPERS = {torch.ops.aten.native_group_norm: _group_norm,
             torch.ops.aten.native_group_norm_backward: _group_norm_backward,
             **{getattr(torch.ops.aten, n): _batch_norm for n in (
                 "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                 "_native_batch_norm_legit_no_training", "_batch_norm_with_update", "_batch_norm_no_update")}}
WRAPPED = frozenset(_WRAPPERS)


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind CPU's argument checks for op."""
    return _WRAPPERS[op.overloadpacket](op, fn)
