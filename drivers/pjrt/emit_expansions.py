"""The StableHLO of the IR ops whose pjrt form is their expansion over primitive IR ops, printed inline:
`ragged_paged_attention` (drivers/ir_ragged_attention.py `expand`: one block of gathers and two dot_generals per
request) and `ragged_dot` (drivers/ir_ragged_dot.py `expand`: every group's product, masked). A real chip's
Pallas kernels (ragged attention, megablox's grouped matmul) would replace them; the math is the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchtpu.drivers import ir_ragged_attention, ir_ragged_dot
from torchtpu.drivers.ir import Builder, Op
from torchtpu.drivers.pjrt.emit_control import emit_program
from torchtpu.drivers.pjrt.emit_core import Emitter, V, emits


def _emit_expansion(name: str, expand: Callable[..., Any]) -> None:
    @emits(name)
    def _emit(e: Emitter, op: Op, args: list[V]) -> list[V]:
        b = Builder()
        ins = [b.input(v.shape, v.dtype) for v in op.inputs]
        program = b.finish([expand(b, *ins, op.attr_dict)])
        return emit_program(e, program, args)


for _module in (ir_ragged_attention, ir_ragged_dot):
    _emit_expansion(_module.NAME, _module.expand)
