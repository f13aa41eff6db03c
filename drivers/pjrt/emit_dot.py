"""MXU emitters: dot_general and convolution, with the precision config and the bf16-pass emulation."""

from __future__ import annotations

import math
from collections.abc import Callable

from torchtpu.drivers.ir import FLOAT8_DTYPES, Op
from torchtpu.drivers.pjrt.emit_core import Emitter, V, _ints, _list, _out, emits

# -- MXU ops --
_ALGORITHM_PASSES = {"DEFAULT": 1, "HIGH": 3, "HIGHEST": 6}


def _precision_attrs(e: Emitter, precision: str, operand_dtype: str) -> str:
    """XLA's precision config; on TPU, the BF16_BF16_F32(_X3/_X6) algorithm that the precision names."""
    if e.platform == "tpu" and operand_dtype == "float32":
        passes = _ALGORITHM_PASSES[precision]
        return ("precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], "
                "algorithm = #stablehlo.dot_algorithm<lhs_precision_type = bf16, rhs_precision_type = bf16, "
                "accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
                f"num_primitive_operations = {passes}, allow_imprecise_accumulation = false>")
    return f"precision_config = [#stablehlo<precision {precision}>, #stablehlo<precision {precision}>]"


def _round_bf16(e: Emitter, x: V) -> V:
    return e.unary("stablehlo.convert", e.unary("stablehlo.convert", x, "bfloat16"), "float32")


def _truncate_bf16(e: Emitter, x: V) -> V:
    bits = e.bitcast(x, "int32")
    return e.bitcast(e.binary("stablehlo.and", bits, e.const(-65536, x.shape, "int32")), "float32")


def _guard(e: Emitter, x: V) -> V:
    """XLA's ReplaceNaNWithZeros: keep x where inf >= |x|, else +0."""
    return e.select(e.compare("GE", e.like(math.inf, x), e.unary("stablehlo.abs", x)), x, e.like(0, x))


def _mxu_passes(e: Emitter, a: V, b: V, precision: str, dot: Callable[[V, V], V]) -> V:
    """The bf16 passes of XLA's BF16_BF16_F32(_X3/_X6) rewrite, as the sim's MXU model combines them (`dot` runs
    one product of bf16-valued f32 operands exactly)."""
    if precision == "DEFAULT":
        return dot(_round_bf16(e, a), _round_bf16(e, b))
    if precision == "HIGH":
        parts = []
        for x in (a, b):
            t = _truncate_bf16(e, x)
            parts.append((_round_bf16(e, t), _round_bf16(e, e.binary("stablehlo.subtract", x, t))))
        (ah, al), (bh, bl) = parts
        low = e.binary("stablehlo.add", dot(al, bh), dot(ah, bl))
        return e.binary("stablehlo.add", _guard(e, low), dot(ah, bh))
    split = []
    for x in (a, b):
        th = _truncate_bf16(e, x)
        r1 = e.binary("stablehlo.subtract", x, th)
        tm = _truncate_bf16(e, r1)
        r2 = e.binary("stablehlo.subtract", r1, tm)
        split.append((_round_bf16(e, th), _round_bf16(e, tm), _round_bf16(e, r2)))
    (ah, am, al), (bh, bm, bl) = split
    r = e.binary("stablehlo.add", dot(am, bm), dot(ah, bl))
    for x, w in ((al, bh), (ah, bm), (am, bh)):
        r = e.binary("stablehlo.add", r, dot(x, w))
    return e.binary("stablehlo.add", _guard(e, r), dot(ah, bh))


def _mxu_operands(e: Emitter, a: V, b: V, out_dtype: str) -> tuple[V, V, str]:
    """Operand and accumulator dtypes as the sim's MXU model takes them (bf16 pairs stay bf16)."""
    if a.dtype in ("int64", "int32", "int16", "int8", "uint8", "bool") or out_dtype in ("int64", "int32"):
        return e.convert(a, "int64"), e.convert(b, "int64"), "int64"
    if a.dtype == "bfloat16" and b.dtype == "bfloat16":
        return a, b, "float32"
    if a.dtype in FLOAT8_DTYPES or b.dtype in FLOAT8_DTYPES:  # fp8 values are exact in bf16, as the sim takes them
        return e.convert(a, "bfloat16"), e.convert(b, "bfloat16"), "float32"
    if "float64" in (a.dtype, b.dtype, out_dtype):  # exact, as the sim computes float64 (host numpy)
        return e.convert(a, "float64"), e.convert(b, "float64"), "float64"
    return e.convert(a, "float32"), e.convert(b, "float32"), "float32"


@emits("dot_general")
def _emit_dot_general(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    a, b, acc = _mxu_operands(e, args[0], args[1], dtype)
    fields = [(k, op.attr(n)) for k, n in (("lhs_batching_dimensions", "lhs_batch"),
                                           ("rhs_batching_dimensions", "rhs_batch"),
                                           ("lhs_contracting_dimensions", "lhs_contract"),
                                           ("rhs_contracting_dimensions", "rhs_contract"))]
    dn = ", ".join(f"{k} = {_list(v)}" for k, v in fields if len(v))
    attrs = f"dot_dimension_numbers = #stablehlo.dot<{dn}>"
    precision = op.attr("precision")
    if acc == "float32" and a.dtype == "float32" and e.emulate_passes and precision != "HIGHEST":
        exact = attrs + ", " + _precision_attrs(e, "HIGHEST", "bfloat16")
        y = _mxu_passes(e, a, b, precision, lambda x, w: e.op("stablehlo.dot_general", [x, w], shape, acc, exact))
        return [e.convert(y, dtype)]
    if acc == "float64":
        attrs += ", " + _precision_attrs(e, "HIGHEST", "float64")
    elif acc != "int64":
        attrs += ", " + _precision_attrs(e, precision, a.dtype)
    y = e.op("stablehlo.dot_general", [a, b], shape, acc, attrs)
    return [e.convert(y, dtype)]


@emits("convolution")
def _emit_convolution(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    lhs, rhs = args
    if not (lhs.dtype == "bfloat16" and rhs.dtype == "bfloat16"):
        lhs, rhs = e.convert(lhs, "float32"), e.convert(rhs, "float32")
    spatial = ", ".join(str(i) for i in range(len(lhs.shape) - 2))
    sep = ", " if spatial else ""
    dn = f"#stablehlo.conv<[b, f{sep}{spatial}]x[o, i{sep}{spatial}]->[b, f{sep}{spatial}]>"
    pads = [list(p) for p in op.attr("padding")]
    npad = len(pads)
    pad_text = (f"dense<{[[int(a), int(b)] for a, b in pads]}> : tensor<{npad}x2xi64>" if npad
                else "dense<> : tensor<0x2xi64>")
    attrs = (f"batch_group_count = 1 : i64, dimension_numbers = {dn}, "
             f"feature_group_count = {op.attr('feature_group_count')} : i64, "
             f"lhs_dilation = {_ints(op.attr('lhs_dilation'))}, padding = {pad_text}, "
             f"precision_config = [#stablehlo<precision {op.attr('precision')}>, "
             f"#stablehlo<precision {op.attr('precision')}>], "  # (convolution takes no dot algorithm)
             f"rhs_dilation = {_ints(op.attr('rhs_dilation'))}, window_strides = {_ints(op.attr('window_strides'))}")
    precision = op.attr("precision")
    if lhs.dtype == "float32" and e.emulate_passes and precision != "HIGHEST":
        exact = attrs.replace(f"#stablehlo<precision {precision}>", "#stablehlo<precision HIGHEST>")
        y = _mxu_passes(e, lhs, rhs, precision,
                        lambda x, w: e.op("stablehlo.convolution", [x, w], shape, "float32", exact))
        return [e.convert(y, dtype)]
    y = e.op("stablehlo.convolution", [lhs, rhs], shape, "float32", attrs)
    return [e.convert(y, dtype)]
