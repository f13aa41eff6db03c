"""Linear-algebra emitters: cholesky and triangular_solve in StableHLO; eig through jaxlib's LAPACK custom call
(CPU only: on any other platform it is refused with an error naming the platform). lu, qr, svd and eigh are
lowerings over primitives (drivers/ir_lowerings_linalg.py) and have no emitter here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torchtpu.drivers.ir import Op
from torchtpu.drivers.pjrt.emit_core import Emitter, V, _list, _out, emits


# -- linear algebra --
def _linalg_operand(e: Emitter, x: V) -> V:
    return x if x.dtype in ("float32", "float64", "complex64", "complex128") else e.convert(x, "float32")


def _triangle_mask(e: Emitter, shape: Sequence[int], lower: bool) -> V:
    r = len(shape)
    rows, cols = e.iota(shape, r - 2), e.iota(shape, r - 1)
    return e.compare("GE" if lower else "LE", rows, cols)


@emits("cholesky")
def _emit_cholesky(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """The factor in one triangle, zeros in the other; a matrix that is not positive definite is all NaN (the
    sim's result: numpy raises for it and the sim fills NaN)."""
    x = _linalg_operand(e, args[0])
    lower = bool(op.attr("lower"))
    if 0 in x.shape:
        return [x]
    y = e.op("stablehlo.cholesky", [x], x.shape, x.dtype, f"lower = {'true' if lower else 'false'}")
    y = e.select(_triangle_mask(e, x.shape, lower), y, e.like(0, y))
    r = len(x.shape)
    real = _REAL_OF[y.dtype]
    finite = e.unary("stablehlo.is_finite", e.unary("stablehlo.real", y, real) if y.dtype != real else y, "bool")
    (ok,) = e.reduce([finite], [e.const(True, (), "bool")], [r - 2, r - 1],
                     lambda a: [e.binary("stablehlo.and", a[0], a[1])])
    ok = e.broadcast(ok, x.shape, list(range(r - 2)))
    return [e.convert(e.select(ok, y, e.like(math.nan, y)), op.outputs[0].dtype)]


@emits("triangular_solve")
def _emit_triangular_solve(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = (_linalg_operand(e, v) for v in args)
    shape, dtype = _out(op)
    if 0 in a.shape or 0 in b.shape:
        return [e.convert(b, dtype)]
    flag = lambda name: "true" if op.attr(name) else "false"  # noqa: E731
    y = e.op("stablehlo.triangular_solve", [a, b], b.shape, b.dtype,
             f"left_side = {flag('left_side')}, lower = {flag('lower')}, unit_diagonal = {flag('unit_diagonal')}, "
             f"transpose_a = #stablehlo<transpose {op.attr('transpose_a')}>")
    return [e.convert(y, dtype)]


# eig: LAPACK through jaxlib's CPU custom calls (the calls jax.lax.linalg emits on CPU).
_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}


def _layout(rank: int, matrix: bool) -> str:
    """Column-major matrices in a row-major batch (LAPACK's layout), or plain row-major."""
    dims = ([rank - 2, rank - 1] + list(range(rank - 3, -1, -1))) if matrix else list(range(rank - 1, -1, -1))
    return f"dense<{_list(dims) if dims else ''}> : tensor<{len(dims)}xindex>"


def _lapack(e: Emitter, op: Op, fn: str, operands: Sequence[V], results: Sequence[tuple[Sequence[int], str, bool]],
            config: str = "", alias: bool = True) -> list[V]:
    """One jaxlib LAPACK FFI call (`results`: shape, dtype, is-a-matrix) in MLIR's pretty form, as jax prints it."""
    if e.platform != "cpu":
        # (jax.lax.linalg emits cusolver custom calls on cuda and its own QR/Jacobi/LU expansions on tpu; neither
        # is printed here yet)
        raise NotImplementedError(f"IR op {op.name!r} is not supported by the pjrt driver on platform "
                                  f"{e.platform!r}: it calls jaxlib's LAPACK kernels, which exist on cpu only; "
                                  f"use the sim driver or TORCHTPU_PJRT_PLATFORM=cpu for it")
    batch = len(operands[0].shape) - 2
    target = f"lapack_{_LAPACK_PREFIX[operands[0].dtype]}{fn}_ffi"
    base = e.fresh()
    outs = [V(f"{base}#{i}" if len(results) > 1 else base, tuple(sh), dt) for i, (sh, dt, _) in enumerate(results)]
    in_layouts = ", ".join(_layout(len(v.shape), len(v.shape) == batch + 2) for v in operands)
    out_layouts = ", ".join(_layout(len(sh), m) for sh, _, m in results)
    aliases = (", output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
               f"{'[0]' if len(results) > 1 else '[]'}, operand_index = 0, operand_tuple_indices = []>]"
               if alias else "")
    attrs = (f'backend_config = "", mhlo.backend_config = {{{config}}}, mhlo.frontend_attributes = '
             f'{{num_batch_dims = "{batch}"}}, operand_layouts = [{in_layouts}]{aliases}, result_layouts = '
             f"[{out_layouts}]")
    types = ", ".join(o.type for o in outs)
    lhs = f"{base}:{len(outs)}" if len(outs) > 1 else base
    e.raw(f"{lhs} = stablehlo.custom_call @{target}({', '.join(v.name for v in operands)}) {{{attrs}}} : "
          f"({', '.join(v.type for v in operands)}) -> {'(' + types + ')' if len(outs) > 1 else types}")
    return outs


def _nan_unless_ok(e: Emitter, info: V, values: V) -> V:
    """NaN where LAPACK reported failure (info != 0), per matrix of the batch."""
    ok = e.compare("EQ", info, e.like(0, info))
    ok = e.broadcast(ok, values.shape, list(range(len(info.shape))))
    return e.select(ok, values, e.like(math.nan, values))


@emits("eig")
def _emit_eig(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (ws, wd), (vs, vd) = _out(op, 0), _out(op, 1)
    if 0 in x.shape:
        return [e.const(0, ws, wd), e.const(0, vs, vd)]
    config = "compute_left = 78 : ui8, compute_right = 86 : ui8"  # 'N', 'V'
    info_t = (x.shape[:-2], "int32", False)
    if x.dtype in ("complex64", "complex128"):
        w, _, v, info = _lapack(e, op, "geev", [x], [(ws, wd, False), (vs, vd, True), (vs, vd, True), info_t],
                                config, alias=False)
    else:
        wr, wi, _, v, info = _lapack(e, op, "geev", [x], [(ws, x.dtype, False), (ws, x.dtype, False), (vs, vd, True),
                                                          (vs, vd, True), info_t], config, alias=False)
        w = e.op("stablehlo.complex", [wr, wi], ws, wd)
    return [_nan_unless_ok(e, info, w), _nan_unless_ok(e, info, v)]
