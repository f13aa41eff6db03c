"""Special-function emitters (`special_unary` / `special_binary`, selected by `function`)."""

from __future__ import annotations

import math

from torchtpu.drivers.ir import Op
from torchtpu.drivers.pjrt.emit_core import Emitter, V, emits

# -- special functions (`special_unary` / `special_binary`, selected by `function`) --
# Those CHLO has, or that are short expressions of CHLO ops; the sim computes them in float64, and so does the
# CPU platform here (TPU: float32). The others (Bessel J/Y/K, airy, igamma, the orthogonal polynomials) need
# series/recurrence expansions that are not emitted yet: compiling them raises NotImplementedError.
SPECIAL_EMITTED = ("bessel_i1e", "bessel_i1", "spherical_bessel_j0", "erfcx", "ndtri", "zeta", "polygamma")


def _special_math(e: Emitter, fn: str, xs: list[V]) -> V:
    x = xs[0]
    if fn == "bessel_i1e":
        return e.unary("chlo.bessel_i1e", x)
    if fn == "bessel_i1":
        return e.binary("stablehlo.multiply", e.unary("chlo.bessel_i1e", x),
                        e.unary("stablehlo.exponential", e.unary("stablehlo.abs", x)))
    if fn == "spherical_bessel_j0":
        y = e.binary("stablehlo.divide", e.unary("stablehlo.sine", x), x)
        return e.select(e.compare("EQ", x, e.like(0, x)), e.like(1, x), y)
    if fn == "erfcx":
        return e.binary("stablehlo.multiply", e.unary("stablehlo.exponential", e.binary("stablehlo.multiply", x, x)),
                        e.unary("chlo.erfc", x))
    if fn == "ndtri":
        v = e.binary("stablehlo.subtract", e.binary("stablehlo.multiply", x, e.like(2, x)), e.like(1, x))
        return e.binary("stablehlo.multiply", e.unary("chlo.erf_inv", v), e.like(math.sqrt(2.0), x))
    if fn == "zeta":
        return e.binary("chlo.zeta", xs[0], xs[1])
    if fn == "polygamma":
        return e.binary("chlo.polygamma", xs[0], xs[1])
    raise KeyError(fn)


@emits("special_unary", "special_binary")
def _emit_special(e: Emitter, op: Op, args: list[V]) -> list[V]:
    fn = op.attr("function")
    if fn not in SPECIAL_EMITTED:
        raise NotImplementedError(f"the pjrt driver has no StableHLO expansion of the special function {fn!r} yet "
                                  f"(IR op {op.name}); supported: {', '.join(SPECIAL_EMITTED)}")
    wide = "float64" if e.platform == "cpu" else "float32"
    xs = [e.convert(a, wide) for a in args]
    return [e.convert(_special_math(e, fn, xs), op.outputs[0].dtype)]
