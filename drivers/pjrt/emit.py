"""Program -> StableHLO text: the module assembly, and the public names of the emitters.

One emitter per IR op, printed in MLIR's generic form; the emitters live in sibling modules by op family and
register themselves in `EMITTERS` on import:

    emit_core.py         MLIR types and literals, SSA values, the `Emitter` printer, the op table
    emit_elementwise.py  unary/binary math, compare/select/convert, constants, iota, rng, complex, fft
    emit_shape.py        broadcast, reshape, transpose, slice, reverse, concatenate, pad, gather, scatter
    emit_reduce.py       reduce, argreduce, cumulative, sort, reduce_window
    emit_dot.py          dot_general and convolution (precision config, bf16-pass emulation)
    emit_linalg.py       cholesky, triangular_solve; lu/qr/svd/eigh/eig through jaxlib's LAPACK calls (CPU)
    emit_control.py      while (the element-wise bounded loop the special-function lowerings iterate with)

Nothing here imports jax: the text is plain strings, checked by the golden tests and compiled by `client.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchtpu.drivers import ir
from torchtpu.drivers.ir import Program
from torchtpu.drivers.pjrt import (  # noqa: F401 - imported to register their emitters
    emit_control,
    emit_dot,
    emit_elementwise,
    emit_expansions,
    emit_linalg,
    emit_reduce,
    emit_shape,
)
from torchtpu.drivers.pjrt.emit_core import (  # noqa: F401 - re-exported
    EMITTERS,
    MLIR_TYPES,
    NP_DTYPES,
    Check,
    Emitter,
    Module,
    V,
    literal,
    numel,
    tensor_type,
)


def missing_emitters(names: Sequence[str] | None = None) -> list[str]:
    """IR ops that have no StableHLO emitter (all of `ir.OPS` by default)."""
    from torchtpu.drivers.ir import OPS

    return sorted(n for n in (names if names is not None else OPS) if n not in EMITTERS)


def emit(program: Program, platform: str = "cpu", donate: dict[int, int] | None = None,
         checks: bool = False, emulate_passes: bool | None = None) -> Module:
    """The StableHLO module for `program`: flat 1-D parameters and results, reshaped inside.

    `donate` maps a parameter index to the result index that may reuse its buffer (`tf.aliasing_output`).
    With `checks`, the errors the sim raises inside ops (index out of range, integer division by zero, ...) are
    computed on the device and returned as one extra result (see `Module.checks`).
    """
    e = Emitter(platform, checks, emulate_passes)
    env: dict[int, V] = {}
    params = []
    for i, v in enumerate(program.inputs):
        flat = V(f"%arg{i}", (numel(v.shape),), v.dtype)
        alias = f" {{tf.aliasing_output = {donate[i]} : i32}}" if donate and i in donate else ""
        params.append(f"{flat.name}: {flat.type}{alias}")
        env[v.id] = e.reshape(flat, v.shape)
    for index, op in enumerate(program.ops):
        emitter = EMITTERS.get(op.name)
        if emitter is None:
            raise ir.unsupported_error("pjrt", op.name)
        e.raw(f"// #{index} {op.name}")
        e.current = (index, op.name)
        outs = emitter(e, op, [env[v.id] for v in op.inputs])
        for value, out in zip(op.outputs, outs):
            if (out.shape, out.dtype) != (value.shape, value.dtype):
                raise AssertionError(f"emitter for {op.name} gave {out.type}, expected "
                                     f"{tensor_type(value.shape, value.dtype)}")
            env[value.id] = out
    results = [e.reshape(env[v.id], (numel(v.shape),)) for v in program.outputs]
    if e.checks:
        e.raw("// checks")
        parts = []
        for _, flag, detail in e.checks:
            parts += [e.reshape(e.convert(flag, "int64"), (1,)), e.reshape(detail, (1,))]
        status = parts[0] if len(parts) == 1 else e.op("stablehlo.concatenate", parts, (len(parts),), "int64",
                                                        "dimension = 0 : i64")
        results.append(status)
    body = "\n".join(e.lines)
    result_types = ", ".join(r.type for r in results)
    ret = (f'    "func.return"({", ".join(r.name for r in results)}) : ({result_types}) -> ()')
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in program.name) or "main"
    text = (f"module @{name} attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{\n"
            f"  func.func public @main({', '.join(params)}) -> ({result_types}) {{\n"
            f"{body}{chr(10) if body else ''}{ret}\n  }}\n}}\n")
    return Module(text, tuple(c for c, _, _ in e.checks))


def emit_module(program: Program, platform: str = "cpu", donate: dict[int, int] | None = None,
                checks: bool = False, emulate_passes: bool | None = None) -> str:
    """The module text (see `emit`)."""
    return emit(program, platform, donate, checks, emulate_passes).text
