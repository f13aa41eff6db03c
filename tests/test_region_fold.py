"""Reshape chains folded in DEFER_AND_FUSE region programs (execution/region_fold.py): a chain reads its source
once, an identity reshape is its source, the event an op belongs to is still found, and a region's results are
bit-identical to DEFER_NEVER's."""

from __future__ import annotations

import torch
from torchtpu.drivers.ir import Builder

import torchtpu
from torchtpu.execution import deferred, region_fold


def _chain_program():
    b = Builder()
    x = b.input((2, 6), "float32")
    flat = b.emit("reshape", [x], shape=(12,))[0]  # event 0: ops 0-1
    y = b.emit("negate", [flat])[0]
    back = b.emit("reshape", [y], shape=(3, 4))[0]  # event 1: ops 2-4
    again = b.emit("reshape", [back], shape=(12,))[0]
    z = b.emit("add", [again, y])[0]
    same = b.emit("reshape", [b.emit("reshape", [x], shape=(3, 4))[0]], shape=(2, 6))[0]  # event 2: ops 5-6
    return b.finish([z, same, back]), [0, 2, 5], x


def test_a_chain_reads_its_source_and_an_identity_reshape_is_its_source():
    program, starts, x = _chain_program()
    folded, moved = region_fold.fold_reshapes(program, starts)
    names = [op.name for op in folded.ops]
    assert names == ["reshape", "negate", "reshape", "add", "reshape"]
    y = folded.ops[1].outputs[0]
    assert folded.ops[3].inputs == (y, y)  # reshape(reshape(y, (3, 4)), (12,)) is y itself
    assert folded.ops[4].inputs[0] is x and folded.ops[4].attr("shape") == (3, 4)  # fed nothing: pruning drops it
    assert folded.outputs[1] is x  # reshape(reshape(x, (3, 4)), (2, 6)) is x itself
    assert moved == [0, 2, 4]


def test_a_program_without_chains_is_returned_as_it_was():
    b = Builder()
    x = b.input((4,), "float32")
    program = b.finish([b.emit("reshape", [b.emit("negate", [x])[0]], shape=(2, 2))[0]])
    ops = list(program.ops)
    folded, moved = region_fold.fold_reshapes(program, [0])
    assert folded is program and folded.ops == ops and moved == [0]


def test_a_region_of_views_keeps_its_values_and_has_no_reshape_chain():
    torch.manual_seed(0)
    a = torch.randn(4, 6)
    outs = {}
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        ta = a.to("tpu")
        with torchtpu.eager_mode(mode):
            torch.tpu.synchronize()
            y = (ta * 2).view(2, 12).sin().view(24).cos().view(3, 8) + 1
            ta.view(6, 4).mul_(3)
            torch.tpu.synchronize()
            if mode == "DEFER_AND_FUSE":
                program = deferred.stats.last_program
                made_by = {o.id: op.name for op in program.ops for o in op.outputs}
                assert not [op for op in program.ops if op.name == "reshape"
                            and made_by.get(op.inputs[0].id) == "reshape"]
        outs[mode] = (y.cpu(), ta.cpu())
    assert torch.equal(outs["DEFER_NEVER"][0], outs["DEFER_AND_FUSE"][0])
    assert torch.equal(outs["DEFER_NEVER"][1], outs["DEFER_AND_FUSE"][1])
    assert torch.equal(outs["DEFER_NEVER"][1], a * 3)
