"""Errors the sim raises inside ops are raised by pjrt too (checked on the device), naming the same op."""

from __future__ import annotations

import numpy as np
import pytest
from pjrt_run import run
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder


def _prog(op: str, arrays: list[np.ndarray], dtypes: list[str], **attrs):
    b = Builder()
    xs = [b.input(a.shape, d) for a, d in zip(arrays, dtypes)]
    (pre,) = b.emit("negate", [xs[0]]) if dtypes[0] != "bool" else (xs[0],)
    outs = b.emit(op, [pre, *xs[1:]], **attrs)
    return b.finish(outs), arrays


X = np.arange(12, dtype=np.float32).reshape(3, 4)
CASES = {
    "gather_axis": _prog("gather_axis", [X, np.array([[0], [4], [1]], np.int64)], ["float32", "int64"], dimension=1),
    "gather_axis_negative": _prog("gather_axis", [X, np.array([[0], [-5], [1]], np.int64)], ["float32", "int64"],
                                  dimension=1),
    "index_select": _prog("index_select", [X, np.array([7], np.int64)], ["float32", "int64"], dimension=0),
    "index_select_empty": _prog("index_select", [np.zeros((0, 2), np.float32), np.array([0], np.int64)],
                                ["float32", "int64"], dimension=0),
    "scatter_axis": _prog("scatter_axis", [X, np.array([[9]] * 3, np.int64), np.ones((3, 1), np.float32)],
                          ["float32", "int64", "float32"], dimension=1, reduce="add"),
    "index_add": _prog("index_add", [X, np.array([3], np.int32), np.ones((1, 4), np.float32)],
                       ["float32", "int32", "float32"], dimension=0),
    "divide": _prog("divide", [np.array([4, 2], np.int32), np.array([2, 0], np.int32)], ["int32", "int32"]),
    "remainder": _prog("remainder", [np.array([4, 2], np.int64), np.array([0, 1], np.int64)], ["int64", "int64"]),
    "floor_divide": _prog("floor_divide", [np.array([4], np.int32), np.array([0], np.int32)], ["int32", "int32"]),
    "argreduce_empty": _prog("argreduce", [np.zeros((2, 0), np.float32)], ["float32"], kind="max", dimension=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_errors_match_the_sim(name, sim, pjrt):
    program, arrays = CASES[name]
    with pytest.raises(ExecutionError) as want:
        run(sim, program, arrays)
    with pytest.raises(ExecutionError) as got:
        run(pjrt, program, arrays)
    assert type(got.value.cause) is type(want.value.cause)
    assert (got.value.op_index, got.value.op_name) == (want.value.op_index, want.value.op_name)
    if isinstance(want.value.cause, IndexError) and "index" in str(want.value.cause):
        assert str(got.value.cause) == str(want.value.cause)


def test_a_failed_launch_leaves_its_output_storage_unchanged(pjrt):
    program, arrays = CASES["index_select"]
    exe = pjrt.compile(program)
    k_in, k_idx, k_out = 1 << 50, (1 << 50) + 64, (1 << 50) + 128
    pjrt.write_storage(k_in, arrays[0].reshape(-1).copy(), 0)
    pjrt.write_storage(k_idx, arrays[1].copy(), 0)
    pjrt.write_storage(k_out, np.full(4, 5, np.float32), 0)
    refs = [pjrt.storage_buffer(k, n, d, 0) for k, n, d in ((k_in, 48, "float32"), (k_idx, 8, "int64"))]
    with pytest.raises(ExecutionError, match="out of bounds"):
        pjrt.execute(exe, refs, [pjrt.storage_buffer(k_out, 16, "float32", 0)], 0)
    np.testing.assert_array_equal(pjrt.read_storage(k_out, 16, "float32", 0), np.full(4, 5, np.float32))


def test_checks_can_be_turned_off(monkeypatch):
    from torchtpu.drivers.pjrt.driver import PjrtDriver

    monkeypatch.setenv("TORCHTPU_PJRT_CHECKS", "0")
    drv = PjrtDriver("cpu")
    program, arrays = CASES["index_select"]
    (out,) = run(drv, program, arrays)  # XLA clamps the index
    np.testing.assert_array_equal(out, -X[2:3])


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_eig_names_op_and_platform_off_cpu(platform):
    """eig calls jaxlib's CPU LAPACK kernel (XLA has no TPU eig): on other platforms emitting it says so."""
    from torchtpu.drivers.pjrt.emit import emit

    b = Builder()
    program = b.finish(b.emit("eig", [b.input((3, 3), "float32")]))
    with pytest.raises(NotImplementedError, match=f"eig.*{platform}.*cpu only"):
        emit(program, platform=platform)


@pytest.mark.parametrize("op", ["lu", "qr", "svd", "eigh"])
def test_lowered_linalg_emits_for_tpu_without_custom_calls(op):
    """lu/qr/svd/eigh are lowerings over primitives (drivers/ir_lowerings_linalg.py): plain StableHLO anywhere."""
    from torchtpu.drivers.pjrt.emit import emit

    attrs = {"qr": {"full_matrices": False}, "svd": {"full_matrices": False},
             "eigh": {"lower": True}}.get(op, {})
    b = Builder()
    program = b.finish(b.emit(op, [b.input((3, 3), "float32")], **attrs))
    text = str(emit(program, platform="tpu"))
    assert "stablehlo.while" in text and "custom_call" not in text
