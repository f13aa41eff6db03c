"""The sim prices an in-place scatter (index_copy_, index_put_, index_add_ into a large tensor) as the elements it
writes, as a chip that donates the target's buffer does; everything it cannot prove in place is priced whole."""

import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim.in_place import external_bytes

import torchtpu
from torchtpu.execution import modes

ROWS, WIDTH, N = 4096, 512, 16  # an 8 MiB float32 target, 16 rows written (32 KiB)
ROW_BYTES = WIDTH * 4


def _bytes(op_name: str, fn) -> tuple[int, torch.Tensor]:
    """(simulated HBM bytes `op_name`'s launches moved, the result on the CPU)."""
    torchtpu.reset_stats()
    out = fn()
    torch.tpu.synchronize()
    return torchtpu.stats()["by_op"][op_name]["hbm_bytes"], out.cpu()


def _operands(tpu):
    x = torch.randn(ROWS, WIDTH)
    src = torch.randn(N, WIDTH)
    idx = torch.randperm(ROWS)[:N]
    return x, src, idx, x.to(tpu), src.to(tpu), idx.to(tpu)


@pytest.mark.sim_only("asserts simulated costs (stats hbm_bytes)")
def test_in_place_index_copy_costs_the_rows_written(tpu):
    x, src, idx, xt, st, it = _operands(tpu)
    moved, got = _bytes("aten.index_copy_.default", lambda: xt.index_copy_(0, it, st))
    assert moved == N * 8 + 2 * N * ROW_BYTES  # indices + updates read + rows written
    assert torch.equal(got, x.index_copy_(0, idx, src))


@pytest.mark.sim_only("asserts simulated costs (stats hbm_bytes)")
def test_out_of_place_index_copy_costs_the_whole_tensor(tpu):
    x, src, idx, xt, st, it = _operands(tpu)
    moved, got = _bytes("aten.index_copy.default", lambda: xt.index_copy(0, it, st))
    assert moved == 2 * ROWS * ROW_BYTES + N * 8 + N * ROW_BYTES
    assert torch.equal(got, x.index_copy(0, idx, src))


@pytest.mark.sim_only("asserts simulated costs (stats hbm_bytes)")
def test_in_place_index_put_and_index_add(tpu):
    x, src, idx, xt, st, it = _operands(tpu)
    moved, got = _bytes("aten.index_put_.default", lambda: xt.index_put_((it,), st))
    assert moved == N * 8 + 2 * N * ROW_BYTES
    assert torch.equal(got, x.index_put_((idx,), src))
    moved, got = _bytes("aten.index_add_.default", lambda: xt.index_add_(0, it, st))
    assert moved == N * 8 + 3 * N * ROW_BYTES  # the old rows are read too
    assert torch.equal(got, x.index_add_(0, idx, src))


@pytest.mark.sim_only("asserts simulated costs (stats hbm_bytes)")
def test_in_place_non_scatter_costs_the_whole_tensor(tpu):
    x = torch.randn(ROWS, WIDTH)
    xt = x.to(tpu)
    moved, got = _bytes("aten.add_.Tensor", lambda: xt.add_(xt))
    assert moved == 3 * ROWS * ROW_BYTES  # both operands read whole, the result written whole
    assert torch.equal(got, x.add_(x))


@pytest.mark.sim_only("asserts simulated costs (stats hbm_bytes)")
@pytest.mark.parametrize("mode", [modes.EagerMode.LAUNCH_BLOCKING, modes.EagerMode.DEFER_AND_FUSE])
def test_in_place_values_in_every_mode(tpu, mode):
    x, src, idx, xt, st, it = _operands(tpu)
    with modes.eager_mode(mode):
        xt.index_copy_(0, it, st)
        xt.index_put_((it,), st * 2)
    assert torch.equal(xt.cpu(), x.index_copy_(0, idx, src).index_put_((idx,), src * 2))


def _scatter_program(extra_reader: bool, aliases: tuple[tuple[int, int], ...] = ((0, 0),)):
    b = Builder()
    x, i, s = b.input((ROWS, WIDTH), "float32"), b.input((N, WIDTH), "int64"), b.input((N, WIDTH), "float32")
    (out,) = b.emit("scatter_axis", [x, i, s], dimension=0, reduce="replace")
    outs = [out]
    if extra_reader:  # the target is read whole by another op: its bytes must stay
        outs.append(b.emit("negate", [x])[0])
    program = b.finish(outs)
    program.aliases = aliases
    return program


def test_alias_unknown_or_target_read_elsewhere_costs_whole():
    whole = 2 * ROWS * ROW_BYTES + N * WIDTH * 8 + N * ROW_BYTES
    assert external_bytes(_scatter_program(False)) == N * WIDTH * 8 + 2 * N * ROW_BYTES
    assert external_bytes(_scatter_program(False, aliases=())) == whole
    assert external_bytes(_scatter_program(True)) == whole + ROWS * ROW_BYTES
    assert _scatter_program(False).key() != _scatter_program(False, aliases=()).key()
