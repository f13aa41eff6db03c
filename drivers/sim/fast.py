"""Direct numpy callables for the sim's most frequent steps, chosen once per step at compile time.

The generic kernels (kernels*.py) take `(op, args)` and look up the op's function, widen narrow floats, round
results to the storage dtype and wrap results in lists: a few microseconds per call, which on the small arrays
of eager ops is most of a step's cost. When a step's operands and result need none of that (float32/float64/
int64/int32 in and out, a non-scalar result, no zero-size reduction), `specialize` returns the numpy function
(or a closure over the step's fixed shapes) that the generic kernel would end up calling, so the value is the
same bit for bit (tests/sim/test_fast_kernels.py checks each against the generic kernel).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim.kernels import _BINARY, _COMPARE, _UNARY_ANY, _UNARY_FLOAT
from torchtpu.drivers.sim.kernels_data import _broadcast_plan

FastKernel = Callable[..., np.ndarray]

_PLAIN = frozenset({"float32", "float64", "int64", "int32"})  # computed as stored: no widening, no rounding
_FLOATS = frozenset({"float32", "float64"})
_RAW_BINARY = frozenset({"add", "subtract", "multiply", "maximum", "minimum"})  # no per-dtype checks in _binary
_RAW_FLOAT_BINARY = frozenset({"divide", "atan2", "hypot", "copysign", "nextafter"})
_RAW_UNARY = frozenset({"abs", "negate", "square", "sign"})
# np.sum/np.prod/np.max/np.min (kernels_data._REDUCERS) are these reductions behind a Python wrapper
_REDUCE_UFUNC = {"sum": np.add.reduce, "prod": np.multiply.reduce, "max": np.maximum.reduce,
                 "min": np.minimum.reduce}


def specialize(op: Op) -> FastKernel | None:
    """A callable taking the step's operand arrays and returning its one result, or None for the generic kernel."""
    if len(op.outputs) != 1 or op.outputs[0].shape == ():  # numpy would hand back a scalar, not a 0-d array
        return None
    out = op.outputs[0].dtype
    ins = [v.dtype for v in op.inputs]
    name = op.name
    if name in _BINARY:
        if ins != [out, out] or out not in _PLAIN:
            return None
        if name in _RAW_BINARY or (name in _RAW_FLOAT_BINARY and out in _FLOATS):
            return _BINARY[name] if name != "divide" else np.divide
        return None
    if name in _UNARY_FLOAT and ins == [out] and out in _FLOATS:
        return _UNARY_FLOAT[name]
    if name in _RAW_UNARY and ins == [out] and out in _PLAIN:
        return _UNARY_ANY[name]
    if name == "compare" and len(set(ins)) == 1 and ins[0] in _PLAIN:
        return _COMPARE[op.attr("direction")]
    if name == "select" and ins[1] == ins[2] == out:
        return np.where
    if name == "reshape":
        shape = tuple(op.attr("shape"))
        return lambda x: np.reshape(x, shape)
    if name == "broadcast_in_dim":
        shape = tuple(op.attr("shape"))
        transpose, expanded = _broadcast_plan(shape, tuple(op.attr("broadcast_dimensions")), op.inputs[0].shape)
        if transpose is not None:
            return None
        return lambda x: np.broadcast_to(x.reshape(expanded), shape)
    if name == "reduce" and ins == [out] and out in _PLAIN:
        kind = op.attr("kind")
        dims = tuple(op.attr("dimensions"))
        if kind not in _REDUCE_UFUNC or not dims or any(op.inputs[0].shape[d] == 0 for d in dims):
            return None
        reduce = _REDUCE_UFUNC[kind]
        return lambda x: reduce(x, axis=dims)
    return None
