"""The dtype refusals of CPU's and CUDA's kernels, made on "tpu" too: an op given a dtype that neither reference
device computes it in (sort or max of complex numbers, floor of a complex, fmod of bools, softmax of integers)
raises CPU's exception class and message instead of returning a result that means nothing.

The table (`dtype_refusals.json`: op packet or `packet.overload` -> checked dtype -> [class, message]) is mined
from PyTorch's OpInfo samples by `scripts/mine_dtype_refusals.py`: only dtypes both CPU and CUDA refuse are
listed, so "tpu" never refuses what CUDA computes. The checked dtype is a `dtype=` argument's, else the promoted
type of the data operands (not indices, targets or masks), as the kernels' dispatch macros see it. Every eager
kernel of a listed op is wrapped by `guard` (the C++ launch cache is never filled for a refused call: the first
call raises before anything is traced); compiled graphs check each node in `check` (ops/registry.py `apply`).
"""

from __future__ import annotations

import functools
import json
import pathlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

_TABLE_PATH = pathlib.Path(__file__).with_name("dtype_refusals.json")
_CLASSES: dict[str, type[Exception]] = {"RuntimeError": RuntimeError, "NotImplementedError": NotImplementedError,
                                        "TypeError": TypeError, "ValueError": ValueError}


# ops a PrivateUse1 device is handed for another op: ATen's convolution calls convolution_overrideable there
_STANDS_FOR = {"convolution_overrideable": "convolution", "convolution_backward_overrideable": "convolution_backward"}
# a dtype refusal's words (not a shape or value check)
DTYPE_WORDS = re.compile(r"not implemented for|not supported for|not support|doesn't support|"
                         r"only supports? floating|floating[ -]point or complex|Unsupported input type|non-complex|"
                         r"dtype must be|not intended to support|inputs not supported|infer output dtype")


# a Python reference's Scalar argument check ("alpha argument of type <class 'complex'> cannot be safely cast")
_REF_SCALAR_CAST = re.compile(r"argument of type <class '\w+'> cannot be safely cast to type")


def packet_name(op: Any) -> str:
    """`floor` for aten.floor.default, aten.floor_.default and aten.floor.out alike."""
    name = op._schema.name.split("::")[1]
    name = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    return _STANDS_FOR.get(name, name)


def overload_name(op: Any) -> str:
    """`max.default`, `round.decimals` (and its out= form round.decimals_out): an overload's own refusals, where
    another overload of the op computes the dtype or says other words."""
    overload = op._overloadname
    overload = "default" if overload in ("out", "unary_out") else overload.removesuffix("_out")
    return f"{packet_name(op)}.{overload}"


def _dtype(value: Any) -> torch.dtype | None:
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, torch.dtype) else None


# operands that are indices, targets or masks: their dtype is not the computation's
# (bucketize's `boundaries` is data: searchsorted's kernel dispatches on the common dtype of it and the input)
_NOT_COMPUTED = frozenset({"index", "indices", "target", "offsets", "lengths", "mask", "generator", "noise"})
# losses whose target is a data operand: the kernel computes in self and target's promoted dtype
# (smooth_l1_loss(int8, float32) computes in float32 on CPU; issue 17)
_TARGET_IS_DATA = frozenset({"smooth_l1_loss", "mse_loss"})
# an op's operands that are not what its kernel dispatches on (bincount's: self's integral type; float weights are
# summed in float32, any other in float64)
# batch_norm_cpu_out dispatches on the input alone (fuzz seed 69: an int16 input with a float16 0-d bias keyed as
# float16 went unrefused to the lowering's channel read)
_BATCH_NORM_PARAMS = frozenset({"weight", "bias", "running_mean", "running_var"})
_NOT_DISPATCHED = {"bincount": frozenset({"weights"}),
                   **dict.fromkeys(("native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update"),
                                   _BATCH_NORM_PARAMS)}
# out= kernels that compute in the out tensor's dtype (normal's: their std check, then normal_ of out, whose own
# refusal is the out's dtype's; an empty out is never dispatched on): not guarded by the inputs' dtype
_OUT_DTYPE_DECIDES = frozenset({"normal.Tensor_float_out", "normal.float_Tensor_out", "normal.Tensor_Tensor_out"})


def checked_dtype(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> str | None:
    """The dtype `op`'s kernel dispatches on for these arguments, as a table key: "dtype=X" where a `dtype`
    argument names the computation's type (cumsum(bool, dtype=torch.bool)), else the promoted dtype of its data
    operands ("X": the tensors that are not indices, targets or masks; 0-dim ones only where no other is), with
    the call's string arguments ("complex64|rounding_mode=trunc"); None where the call has no tensor to check."""
    schema = op._schema.arguments
    bound = dict(zip([a.name for a in schema], args))
    bound.update(kwargs)
    if f"{packet_name(op)}.{op._overloadname}" in _OUT_DTYPE_DECIDES:
        return None
    for a in schema:  # out= tensors take the result; their dtype is checked as a cast (ops/out_rules.py)
        if a.is_out:
            bound.pop(a.name, None)
    if isinstance(bound.get("dtype"), torch.dtype):
        return f"dtype={_name(bound['dtype'])}"
    skipped = _NOT_COMPUTED - {"target"} if packet_name(op) in _TARGET_IS_DATA else _NOT_COMPUTED
    skipped |= _NOT_DISPATCHED.get(packet_name(op), frozenset())
    data = [v for k, v in bound.items() if k not in skipped and _dtype(v) is not None]
    if not data:
        return None
    dtype = result_dtype([v.dtype for v in data if getattr(v, "ndim", 0) > 0],
                         [v.dtype for v in data if getattr(v, "ndim", 0) == 0])
    for name in ("self", "other"):  # a Scalar operand raises the category only (bool % 1 computes in int64)
        value = bound.get(name)
        if isinstance(value, int | float | complex) and not isinstance(value, bool):
            dtype = _with_scalar(dtype, value)
    # a string argument picks the kernel (div's rounding_mode, scatter_reduce's reduce): part of the key
    return "|".join([_name(dtype), *(f"{k}={v}" for k, v in bound.items() if isinstance(v, str))])


def _category(dtype: torch.dtype) -> int:
    return 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype == torch.bool else 1


_COMPLEX_OF = {torch.float16: torch.complex32, torch.bfloat16: torch.complex64, torch.float32: torch.complex64,
               torch.float64: torch.complex128}


def result_dtype(dimensioned: list[torch.dtype], zero_dim: list[torch.dtype]) -> torch.dtype:
    """ATen's result type of tensors: the dimensioned ones' promoted dtype, unless the 0-d ones are of a higher
    category (float32[] with int64[3] computes in float32; complex128[] with float32[3] in complex64)."""
    promote = lambda dtypes: functools.reduce(torch.promote_types, dtypes)  # noqa: E731
    if not dimensioned or not zero_dim:
        return promote(dimensioned or zero_dim)
    dims, zeros = promote(dimensioned), promote(zero_dim)
    if _category(zeros) <= _category(dims):
        return dims
    if zeros.is_complex and dims.is_floating_point:
        return _COMPLEX_OF[dims]
    return zeros


def _with_scalar(dtype: torch.dtype, value: complex) -> torch.dtype:
    if isinstance(value, complex) and not dtype.is_complex:
        real = dtype if dtype.is_floating_point else torch.get_default_dtype()
        return {torch.float64: torch.complex128}.get(real, torch.complex64)
    if isinstance(value, float) and not (dtype.is_floating_point or dtype.is_complex):
        return torch.get_default_dtype()
    if isinstance(value, int) and dtype == torch.bool:
        return torch.int64
    return dtype


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@functools.cache
def table() -> dict[str, dict[str, tuple[type[Exception], str]]]:
    """op packet name -> {checked dtype key: (CPU's exception class, CPU's message)}."""
    raw = json.loads(_TABLE_PATH.read_text())
    return {op: {key: (_CLASSES[cls], msg) for key, (cls, msg) in rules.items()} for op, rules in raw.items()}


def rules_for(op: Any) -> dict[str, tuple[type[Exception], str]] | None:
    """The refusals of `op`: its packet's, with its own overload's words where they differ; a `_foreach_X` op
    without rules of its own takes X's (CPU's foreach kernels run X per tensor)."""
    packet = packet_name(op)
    rules = table().get(packet)
    if _in_place(op) and packet.removeprefix(_FOREACH) in _IN_PLACE:
        rules = {**(rules or {}), **_IN_PLACE[packet.removeprefix(_FOREACH)]}
    if packet in _FOREACH_OWN:
        return _FOREACH_OWN[packet]
    if not rules and packet.startswith(_FOREACH):
        base = packet.removeprefix(_FOREACH)
        base = _FOREACH_BASE.get(base, base)
        overloads = _FOREACH_OVERLOADS.get(op._overloadname.removesuffix("_out"), ())
        return {**table().get(base, {}), **{k: v for o in overloads for k, v in table().get(f"{base}.{o}", {}).items()}
                } or None
    if not rules:
        return None
    return {**rules, **table().get(overload_name(op), {})}


_FOREACH = "_foreach_"
# foreach ops whose CPU kernel is not their base op's (_foreach_max runs max_all's dispatch, in its words)
_FOREACH_OWN: dict[str, dict[str, tuple[type[Exception], str]]] = {
    "_foreach_max": {"complex64": (NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
                     "complex128": (NotImplementedError, "\"max_all\" not implemented for 'ComplexDouble'")},
}
# refusals of an in-place form only, which no OpInfo sample meets (ATen's abs_: the result is real)
_IN_PLACE: dict[str, dict[str, tuple[type[Exception], str]]] = {
    "abs": {k: (RuntimeError, "In-place abs is not supported for complex tensors.")
            for k in ("complex64", "complex128")},
}


_IN_PLACE_REFUSALS = frozenset(r for rules in _IN_PLACE.values() for r in rules.values())


def _in_place(op: Any) -> bool:
    name = op._schema.name.split("::")[1]
    return name.endswith("_") and not name.endswith("__")
# a foreach overload -> the base op's overloads it runs per tensor (their own words, where the table has them)
_FOREACH_BASE = {"maximum": "clamp_min", "minimum": "clamp_max"}  # CPU's foreach maximum is clamp_min per tensor
_FOREACH_OVERLOADS = {"Scalar": ("default", "Scalar"), "ScalarList": ("default", "Scalar"), "List": ("Tensor",),
                      "Tensor": ("Tensor",)}
# a foreach op's scalar operands (the base op's `other`)
_FOREACH_SCALARS = ("scalar", "scalars", "exponent", "other", "self")


def checked_keys(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> list[str | None]:
    """The table keys of a call: `checked_dtype`'s one key; for a `_foreach_` op, one per position of its tensor
    lists (the dtypes X's kernel dispatches on for that tensor), in order."""
    if not packet_name(op).startswith(_FOREACH):
        return [checked_dtype(op, args, kwargs)]
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    for a in op._schema.arguments:
        if a.is_out:
            bound.pop(a.name, None)
    lists = [v for v in bound.values() if isinstance(v, list | tuple) and v and isinstance(v[0], torch.Tensor)]
    keys: list[str | None] = []
    for i in range(len(lists[0]) if lists else 0):
        at = {k: v[i] if isinstance(v, list | tuple) and len(v) > i else v for k, v in bound.items()}
        data = [v for v in at.values() if isinstance(v, torch.Tensor)]
        # TensorIterator's promotion: a 0-dim tensor of a higher category counts (complex 0-dim with a float32
        # tensor is complex64: fuzz seed 71, _foreach_maximum.List_out)
        dtype = elementwise_dtypes(*data, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)[1]
        for name in _FOREACH_SCALARS:
            value = at.get(name)
            if isinstance(value, int | float | complex) and not isinstance(value, bool):
                dtype = _with_scalar(dtype, value)
        keys.append(_name(dtype))
    return keys


# kernels that return before their dtype dispatch when their tensors are empty (host_softmax: an empty bool
# softmax is an empty bool tensor on CPU, fuzz seed 4; the random samplers' TensorIterator never calls the kernel
# for no elements: normal of an empty uint8 tensor, seed 9)
_EMPTY_NOT_DISPATCHED = frozenset({"_softmax", "_log_softmax", "normal", "geometric", "exponential", "log_normal",
                                   "random", "bernoulli", "cumsum", "cumprod"})  # cumsum/cumprod: seed 64


def _all_empty(args: tuple, kwargs: Mapping[str, Any]) -> bool:
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    return bool(tensors) and all(t.numel() == 0 for t in tensors)


_HISTOGRAM_KERNEL = {"bool": "linspace_cpu"}  # the bin_ct edges' linspace refuses bool before histogram_cpu


def _histogram_refusal(refusal: tuple[type[Exception], str], op: Any, args: tuple,
                       kwargs: Mapping[str, Any]) -> tuple[type[Exception], str] | None:
    """histogram's "histogramdd" words are its aminmax of the input, made only for bin_ct without a range on an
    input with elements; else the edges' linspace (bin_ct) and the histogram_cpu kernel decide, and that kernel
    computes bfloat16 and float16 (histogram(bfloat16[3, 3], range=[1.0, 2.0]) on CPU, fuzz seeds 5 to 7)."""
    cls, words = refusal
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    if '"histogramdd"' not in words or (
            op._overloadname.startswith("bin_ct") and bound.get("range") is None and bound["self"].numel() > 0):
        return refusal
    dtype = _name(bound["self"].dtype)
    if dtype in ("bfloat16", "float16"):
        return None
    kernel = _HISTOGRAM_KERNEL.get(dtype, "histogram_cpu") if op._overloadname.startswith("bin_ct") else (
        "histogram_cpu")
    return cls, words.replace('"histogramdd"', f'"{kernel}"')


def _bin_edges_refusal(refusal: tuple[type[Exception], str], op: Any, args: tuple,
                       kwargs: Mapping[str, Any]) -> tuple[type[Exception], str] | None:
    """_histogramdd_bin_edges' "histogramdd" words are its min/max of an input with elements and no range; with a
    range (or no elements) only the edges' linspace dispatches, which refuses bool alone (bfloat16[5, 1] with
    range=[0.5, 1.0] computes on CPU: fuzz seed 60)."""
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    if bound.get("range") is None and bound["self"].numel() > 0:
        return refusal
    dtype = bound["self"].dtype
    if dtype == torch.bool:
        return refusal[0], refusal[1].replace('"histogramdd"', '"linspace_cpu"')
    if dtype.is_floating_point or dtype.is_complex:
        return None
    # CPU computes integer edges too (linspace_out of the double range into them), which the tpu's rounding does
    # not reproduce (int64 [0, 1, 1] for CPU's [0, 0, 1] with range=[0.5, 1.0]): refused in words of its own
    return NotImplementedError, (f"_histogramdd_bin_edges: integer ({dtype}) bin edges are not computed on the tpu "
                                 "(CPU's linspace into integer edges is not reproduced exactly); pass a floating input")


def _dispatched_unless(skip: Callable[[Any, Any], bool]) -> Callable[..., tuple[type[Exception], str] | None]:
    """The refusal, unless CPU's kernel returns before its dtype dispatch for this `self` (and overload)."""

    def refusal_for(refusal: tuple[type[Exception], str], op: Any, args: tuple,
                    kwargs: Mapping[str, Any]) -> tuple[type[Exception], str] | None:
        x = args[0] if args else kwargs.get("self")
        return None if isinstance(x, torch.Tensor) and skip(op, x) else refusal

    return refusal_for


# cummax/cummin fill a 0-d or empty self's result without a kernel; median/nanmedian of all elements return NaN
# for no elements (cummax(tensor(1j), 0) and nanmedian(complex64[4, 4, 1, 0]) compute on CPU: fuzz seed 32)
_CUM_UNDISPATCHED = _dispatched_unless(lambda op, x: x.dim() == 0 or x.numel() == 0)
_MEDIAN_UNDISPATCHED = _dispatched_unless(  # (a bool one's NaN is True on CPU: still refused)
    lambda op, x: op._overloadname in ("default", "out") and x.numel() == 0 and x.dtype != torch.bool)

# mode(complex64 0-d) computes on CPU (fuzz seed 61)
def _mode_refusal(refusal: tuple[type[Exception], str], op: Any, args: tuple,
                  kwargs: Mapping[str, Any]) -> tuple[type[Exception], str] | None:
    """mode: a 0-d self is its own mode, an empty reduced dim fails zero_numel_check_dims (the lowering's
    IndexError) and a self with no elements otherwise returns the empty result, all before the dispatch."""
    x = args[0] if args else kwargs.get("self")
    dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
    if not isinstance(x, torch.Tensor) or not isinstance(dim, int):
        return refusal
    if x.dim() == 0 or (-x.dim() <= dim < x.dim() and x.numel() == 0):
        return None
    return refusal

# packet name -> the call's own refusal, where the table's words hold for some calls only
_BY_CALL = {"histogram": _histogram_refusal, "cummax": _CUM_UNDISPATCHED, "cummin": _CUM_UNDISPATCHED,
            "median": _MEDIAN_UNDISPATCHED, "nanmedian": _MEDIAN_UNDISPATCHED, "mode": _mode_refusal,
            "_histogramdd_bin_edges": _bin_edges_refusal}


def _refusal(rules: Mapping[str, tuple[type[Exception], str]], op: Any, args: tuple,
             kwargs: Mapping[str, Any]) -> tuple[type[Exception], str] | None:
    if packet_name(op) in _EMPTY_NOT_DISPATCHED and _all_empty(args, kwargs):
        return None
    for key in checked_keys(op, args, kwargs):
        refusal = rules.get(key)
        if refusal is not None:
            by_call = _BY_CALL.get(packet_name(op))
            return by_call(refusal, op, args, kwargs) if by_call else refusal
    return None


def check(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Raises CPU's refusal where `op` is listed for the dtype these arguments dispatch on."""
    rules = rules_for(op)
    if rules:
        refusal = _refusal(rules, op, args, kwargs)
        if refusal is not None:
            _earlier(op, args, kwargs)
            raise refusal[0](refusal[1])


def guard(op: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`kernel` itself where `op` has no refusals; else the kernel behind `check`. A refused call first runs the
    op on meta tensors: ATen's shape and argument checks come before a kernel's dtype dispatch on CPU, so their
    error is raised where they fail."""
    rules = rules_for(op)
    if not rules:
        return kernel

    @functools.wraps(kernel)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        refuse(op, args, kwargs, rules)
        return kernel(*args, **kwargs)

    return guarded


def refuse(op: Any, args: tuple, kwargs: Mapping[str, Any],
           rules: Mapping[str, tuple[type[Exception], str]] | None = None) -> None:
    """Raises CPU's refusal of this call, after ATen's checks that come first (guard's kernel; under
    torch.compile for fake tensors, compile/fake_checks.py); returns where the table refuses nothing."""
    rules = rules_for(op) if rules is None else rules
    refusal = _refusal(rules, op, args, kwargs) if rules else None
    if refusal is not None:
        if packet_name(op).startswith(_FOREACH) and _in_place(op):  # CPU's loop: X_ per tensor, in order
            args, kwargs = _foreach_tensors_before(op, args, kwargs, rules)
        elif packet_name(op).startswith(_FOREACH):  # the functional's loop (an out= list's length checked after)
            op, args, kwargs = _foreach_prefix(op, args, kwargs, rules)
        if refusal not in _IN_PLACE_REFUSALS and packet_name(op) not in _FIRST_CHECK:  # ATen's first check
            _raise_earlier_check(op, args, kwargs)
        raise refusal[0](refusal[1])


# ops whose dtype refusal is their meta function's first check (check_argmax_argmin: complex, then bool, then the
# dim; fuzz seed 67: a complex argmax with dim 4 of a 4-d self raised the dim's IndexError)
_FIRST_CHECK = frozenset({"argmax", "argmin"})


def _foreach_tensors_before(op: Any, args: tuple, kwargs: Mapping[str, Any],
                            rules: Mapping[str, tuple[type[Exception], str]]) -> tuple[tuple, dict[str, Any]]:
    """The in-place checks of the tensors up to the first refused one (ops/foreach_order.py); the call cut to
    that tensor, whose own earlier checks come next."""
    from torchtpu.ops import foreach_order

    keys = checked_keys(op, args, kwargs)
    j = next((i for i, key in enumerate(keys) if key in rules), None)
    if j is None or not foreach_order.same_lengths(op, args, kwargs):
        return args, dict(kwargs)
    functional, _, _ = _functional_foreach(op, args, kwargs)
    foreach_order.check_tensors_before(op, functional, args, kwargs, j, _raise_earlier_check)
    return foreach_order.cut(op, args, kwargs, j)


def _foreach_prefix(op: Any, args: tuple, kwargs: Mapping[str, Any],
                    rules: Mapping[str, tuple[type[Exception], str]]) -> tuple[Any, tuple, dict[str, Any]]:
    """A functional (or out=, as its functional) foreach call cut to the tensors up to the first refused one: CPU's
    slow path calls X per tensor, so an earlier tensor's checks, then that tensor's own, come before its refusal,
    and an out= list's length after (fuzz seed 69: _foreach_clamp_max.List_out of complex tensors, the second pair
    not broadcastable; seed 71: _foreach_maximum.List_out with an out list of another length)."""
    from torchtpu.ops import foreach_order

    keys = checked_keys(op, args, kwargs)
    j = next((i for i, key in enumerate(keys) if key in rules), None)
    op, args, kwargs = _functional_foreach(op, args, kwargs)
    if j is None or not foreach_order.same_lengths(op, args, kwargs):
        return op, args, dict(kwargs)
    return op, *foreach_order.cut(op, args, kwargs, j, prefix=True)


def _on_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, torch.device):  # a factory's device= (else the meta run would come back here)
        return torch.device("meta")
    if isinstance(value, list | tuple):
        return type(value)(_on_meta(v) for v in value)
    return value


def _functional_foreach(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> tuple[Any, tuple, dict[str, Any]]:
    """A `_foreach_X_` or `_foreach_X.*out` call as its functional overload's (CPU checks the lists, computes each
    tensor's result, and only then casts into the written tensors or checks the out= list's length); any other
    call as it is."""
    out = [a.name for a in op._schema.arguments if a.is_out]
    if not (out or _in_place(op)) or not packet_name(op).startswith(_FOREACH):
        return op, args, dict(kwargs)
    overload = op._overloadname
    packet = getattr(torch.ops.aten, packet_name(op))
    functional = getattr(packet, "default" if overload == "out" else overload.removesuffix("_out"))
    return functional, args, {k: v for k, v in kwargs.items() if k not in out}


# packet name prefix -> the shape checks CPU's meta function makes first, where torch's meta kernel lacks them
# (upsampling's meta is a Python decomposition without ATen's checks: ops/spatial_checks.py)
def _upsample_checks(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    from torchtpu.ops import out_rules, spatial_checks

    spatial_checks.upsample_args(op, args, dict(kwargs))
    first = args[0] if args else None
    for a in op._schema.arguments:  # then the out= tensor's dtype (the structured kernel's set_output)
        out = kwargs.get(a.name) if a.is_out else None
        if isinstance(out, torch.Tensor) and isinstance(first, torch.Tensor):
            out_rules.check_out_dtype(op, first.dtype, out.dtype, str(op), False)


def _normal_std(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    from torchtpu.ops import normal_tensor

    normal_tensor.check_std_first(op, args, dict(kwargs))


def _pad_checks(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    from torchtpu.ops import spatial_checks

    packet = packet_name(op)
    mode = "reflect" if packet.startswith("reflection") else "replicate"
    nd = int(packet.split("_pad")[1][0])
    bound = dict(zip([a.name for a in op._schema.arguments], args)) | dict(kwargs)
    if packet.endswith("_backward"):
        spatial_checks.pad_backward(mode, nd, bound["grad_output"].shape, bound["self"].shape, bound["padding"])
    else:
        spatial_checks.pad_input(nd, bound["self"].shape, bound["padding"], mode)


def _lu_rank(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:  # the LU meta functions' first check
    api = {"linalg_lu": "linalg.lu", "linalg_lu_factor": "torch.lu_factor", "linalg_lu_factor_ex": "torch.lu_factor"}
    a = args[0] if args else kwargs.get("A")
    if packet_name(op) in api and a is not None and a.ndim < 2:
        raise RuntimeError(f"{api[packet_name(op)]}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(a.shape)} instead")


def _multilabel_target(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """multilabel_margin_loss's shape check, then (input with elements) its target's range, read before the
    kernel's floating dispatch; a traced target (a compiled graph's node) has no values to read."""
    from torchtpu.ops import loss_checks

    if packet_name(op).endswith("_backward"):
        return
    bound = dict(zip([a.name for a in op._schema.arguments], args)) | dict(kwargs)
    x, target = bound["self"], bound["target"]
    loss_checks.check_multilabel_margin(x, target)
    if isinstance(target, torch.Tensor) and x.numel() and target.numel():
        dim = 1 if x.ndim == 0 else x.shape[-1]
        if int(target.min().item()) < -1 or int(target.max().item()) >= dim:
            raise RuntimeError("argument #2 'target' is out of range")
    refusal = _refusal(rules_for(op) or {}, op, args, kwargs)  # ATen's checks passed: no meta run (the
    if refusal is not None:  # decomposition's shape check refuses a 0-d input that ATen takes)
        raise refusal[0](refusal[1])


EARLIER_CHECKS: dict[str, Callable[[Any, tuple, Mapping[str, Any]], None]] = {
    "multilabel_margin_loss": _multilabel_target,
    "linalg_lu": _lu_rank,
    "upsample_": _upsample_checks, "_upsample_": _upsample_checks, "normal": _normal_std,
    "reflection_pad": _pad_checks, "replication_pad": _pad_checks}


def _earlier(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    packet = packet_name(op)
    for prefix, earlier in EARLIER_CHECKS.items():
        if packet.startswith(prefix):
            earlier(op, args, kwargs)


# Python's own IndexError words (a meta function's slip), not one of ATen's c10::IndexError checks
_PYTHON_INDEX_SLIP = re.compile(r"^(tuple|list|string|range object|array) index out of range$|^pop from")


def _refuse_written_overlap(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """TensorIterator's checks of an in-place op's written tensor, which CPU makes before the kernel's dtype
    dispatch: its internal overlap (logit_ of an expanded complex view; a random op's too), then a binary op's
    broadcast shape (gcd_ of bfloat16 [1, 1] with [3, 2])."""
    from torchtpu.execution import eager
    from torchtpu.ops import arg_order_checks

    name = op._schema.name.split("::")[1]
    if not (_in_place(op) and args and isinstance(args[0], torch.Tensor)):
        return
    if not eager.overlap_allowed(name, args[0]):
        eager.refuse_internal_overlap(str(op), args[0])
    other = args[1] if len(args) > 1 else kwargs.get("other")
    if [a.name for a in op._schema.arguments[:2]] == ["self", "other"] and isinstance(other, torch.Tensor):
        arg_order_checks.binary_inplace({"self": args[0], "other": other})


def _raise_earlier_check(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    _earlier(op, args, kwargs)
    _refuse_written_overlap(op, args, kwargs)
    op, args, kwargs = _functional_foreach(op, args, kwargs)
    try:
        op(*_on_meta(args), **{k: _on_meta(v) for k, v in kwargs.items()})
    except NotImplementedError:
        return  # no meta kernel, or the meta kernel's own dtype refusal: CPU's words follow
    except IndexError as exc:  # ATen's dim and index checks (cummin(x, 64)); Python's own slips are not CPU's
        if not _PYTHON_INDEX_SLIP.search(str(exc)):
            raise exc from None
    except RuntimeError as exc:  # ATen's checks; a Python meta kernel's own slips (ValueError) are not CPU's
        # the meta kernel's own dtype check, or a Python reference's Scalar cast (ATen converts a Scalar inside
        # the kernel, after its dtype dispatch): CPU's words follow
        if not DTYPE_WORDS.search(str(exc)) and not _REF_SCALAR_CAST.search(str(exc)):
            raise exc from None
    except Exception:  # noqa: BLE001
        return
