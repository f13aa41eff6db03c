"""The StableHLO of IR op `ragged_paged_attention`: its expansion over primitive IR ops
(drivers/ir_ragged_attention.py `expand`) printed inline, one block of gathers and two dot_generals per request.
A real chip's Pallas ragged kernel would replace it; the math is the same."""

from __future__ import annotations

from torchtpu.drivers.ir import Builder, Op
from torchtpu.drivers.ir_ragged_attention import expand
from torchtpu.drivers.pjrt.emit_control import emit_program
from torchtpu.drivers.pjrt.emit_core import Emitter, V, emits


@emits("ragged_paged_attention")
def _emit_ragged_paged_attention(e: Emitter, op: Op, args: list[V]) -> list[V]:
    b = Builder()
    ins = [b.input(v.shape, v.dtype) for v in op.inputs]
    program = b.finish([expand(b, *ins, op.attr_dict)])
    return emit_program(e, program, args)
