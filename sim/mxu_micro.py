"""The register-blocked micro kernel of the exact-order MXU dot (sim/mxu_kernel.py), written as LLVM vector IR.

`tile_block(af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first)` adds one K tile to an _R x _C block of
outputs: for each output (r, c) it forms s = +0.0, then s = fl32(s + a[r, k] * b[k, c]) for k = k0..k0+kt-1 in
order, and stores out[r, c] = fl32(acc + s) with acc = +0.0 when `first` is true, else the stored out[r, c].
That is one tile of `mxu_kernel`'s summation order, per output, exactly (fmul and fadd without fast-math
flags, so LLVM neither contracts them into an FMA nor reassociates; multiplication commutes exactly).

Element (r, k) of A is af[ao + r*lda + k], element (k, c) of B is bf[bo + k*ldb + c], output (r, c) is
of[oo + r*ldo + c]; all three are flat float32 arrays and the caller keeps every index in bounds (no checks).

Why IR: numba compiles with LLVM's SLP vectorizer off (numba.config.SLP_VECTORIZE) and the loop vectorizer
only vectorizes the innermost loop, so a numba loop nest keeps the partial sums in memory and reloads the
same B row for every output row (load-bound, Session 50). Here the _R x _C partial sums are _R*_W vectors of
_V float32 lanes that stay in registers for the whole tile; each k loads _W vectors of B once for _R rows and
broadcasts _R scalars of A.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_V = 8  # derived: float32 lanes per vector (ymm; numba's LLVM prefers 256-bit vectors on AVX-512 hosts)
_W = 2  # derived: vectors per block row (measured, see benchmarks/dispatch.py Session 51)
_R = 8  # derived: rows per register block (measured, see _W)
_C = _V * _W  # columns per register block

_F32 = ir.FloatType()
_VEC = ir.VectorType(_F32, _V)
_I64 = ir.IntType(64)


def _address(builder: ir.IRBuilder, base: ir.Value, index: ir.Value, typ: ir.Type) -> ir.Value:
    """A pointer to `typ` at float32 element `index` of the buffer whose address (i64) is `base`."""
    addr = builder.add(base, builder.mul(index, ir.Constant(_I64, 4)))
    return builder.inttoptr(addr, typ.as_pointer())


def _data(context, builder: ir.IRBuilder, aryty, value) -> ir.Value:
    return builder.ptrtoint(context.make_array(aryty)(context, builder, value).data, _I64)


@intrinsic
def tile_block(typingctx, af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first):
    """See the module docstring; `first` is a boolean, the integers are int64."""
    sig = types.void(af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first)

    def codegen(context, builder, signature, args):
        a_ty, _, _, b_ty, _, _, _, _, o_ty = signature.args[:9]
        af_v, ao_v, lda_v, bf_v, bo_v, ldb_v, k0_v, kt_v, of_v, oo_v, ldo_v, first_v = args
        abase, bbase, obase = (_data(context, builder, a_ty, af_v), _data(context, builder, b_ty, bf_v),
                               _data(context, builder, o_ty, of_v))
        zero = ir.Constant(_VEC, None)
        sums = [[cgutils.alloca_once_value(builder, zero) for _ in range(_W)] for _ in range(_R)]
        rows = [builder.add(ao_v, builder.add(builder.mul(ir.Constant(_I64, r), lda_v), k0_v)) for r in range(_R)]
        bstart = builder.add(bo_v, builder.mul(k0_v, ldb_v))
        with cgutils.for_range(builder, kt_v) as loop:
            k = loop.index
            brow = builder.add(bstart, builder.mul(k, ldb_v))
            bv = [builder.load(_address(builder, bbase, builder.add(brow, ir.Constant(_I64, w * _V)), _VEC),
                               align=4, typ=_VEC) for w in range(_W)]
            for r in range(_R):
                av = builder.load(_address(builder, abase, builder.add(rows[r], k), _F32), align=4, typ=_F32)
                splat = builder.shuffle_vector(builder.insert_element(ir.Constant(_VEC, ir.Undefined), av,
                                                                      ir.Constant(ir.IntType(32), 0)),
                                               ir.Constant(_VEC, ir.Undefined),
                                               ir.Constant(ir.VectorType(ir.IntType(32), _V), [0] * _V))
                for w in range(_W):
                    prod = builder.fmul(splat, bv[w])
                    builder.store(builder.fadd(builder.load(sums[r][w], typ=_VEC), prod), sums[r][w])
        is_first = context.cast(builder, first_v, signature.args[11], types.boolean)
        for r in range(_R):
            orow = builder.add(oo_v, builder.mul(ir.Constant(_I64, r), ldo_v))
            for w in range(_W):
                ptr = _address(builder, obase, builder.add(orow, ir.Constant(_I64, w * _V)), _VEC)
                old = builder.load(ptr, align=4, typ=_VEC)
                acc = builder.select(is_first, zero, old)
                builder.store(builder.fadd(acc, builder.load(sums[r][w], typ=_VEC)), ptr, align=4)
        return context.get_dummy_value()

    return sig, codegen
