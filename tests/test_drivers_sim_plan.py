"""The sim driver's launch plan: constant subgraphs folded at compile time give the same values as running
them, folded values are never written, big ones are left to run time, and errors still name the IR op."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import driver as sim_driver
from torchtpu.drivers.sim.driver import SimDriver


def _program(shape=(4, 3)):
    b = Builder()
    x = b.input(shape, "float32")
    two = b.emit("constant", [], value=2.0, shape=(), dtype="float32")[0]
    two_b = b.emit("broadcast_in_dim", [two], shape=shape, broadcast_dimensions=())[0]
    three = b.emit("constant", [], value=3.0, shape=(), dtype="float32")[0]
    three_b = b.emit("broadcast_in_dim", [three], shape=shape, broadcast_dimensions=())[0]
    six = b.emit("multiply", [two_b, three_b])[0]
    y = b.emit("add", [x, six])[0]
    return b.finish([y, six])


def _run(drv, program, x):
    outs = [np.empty(v.shape, np.float32) for v in program.outputs]
    drv.execute(drv.compile(program), [x], outs)
    return outs


def test_constant_subgraph_is_folded_and_matches():
    drv = SimDriver()
    program = _program()
    exe = drv.compile(program)
    assert [s.op.name for s in exe.payload.steps] == ["add"]  # the rest ran once, at compile time
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y, six = _run(drv, program, x)
    assert np.array_equal(y, x + 6) and np.array_equal(six, np.full((4, 3), 6, np.float32))
    six[:] = 0  # the caller's output buffer, not the folded value
    y2, six2 = _run(drv, program, x)
    assert np.array_equal(y2, x + 6) and np.array_equal(six2, np.full((4, 3), 6, np.float32))


def test_big_constants_are_left_to_run_time(monkeypatch):
    monkeypatch.setattr(sim_driver, "FOLD_MAX_BYTES", 16)
    drv = SimDriver()
    program = _program()
    names = [s.op.name for s in drv.compile(program).payload.steps]
    assert "multiply" in names  # 48 bytes materialized: computed per launch instead
    x = np.ones((4, 3), np.float32)
    assert np.array_equal(_run(drv, program, x)[0], x + 6)


def test_errors_name_the_op_by_its_program_index():
    drv = SimDriver()
    b = Builder()
    x = b.input((3,), "float32")
    c = b.emit("constant", [], value=1.0, shape=(), dtype="float32")[0]
    cb = b.emit("broadcast_in_dim", [c], shape=(3,), broadcast_dimensions=())[0]
    y = b.emit("add", [x, cb])[0]
    program = b.finish([y])
    exe = drv.compile(program)

    def boom(*args):
        raise ValueError("boom")

    step = exe.payload.last  # the final ufunc step, which writes into the output buffer
    assert step is not None and step.op.name == "add" and not exe.payload.steps
    step.fast = boom
    with pytest.raises(ExecutionError) as info:
        drv.execute(exe, [np.zeros(3, np.float32)], [np.empty(3, np.float32)])
    assert info.value.op_index == 2 and info.value.op_name == "add"
    step.fast, step.kernel = None, boom  # the generic kernel path names the op the same way
    with pytest.raises(ExecutionError) as info:
        drv.execute(exe, [np.zeros(3, np.float32)], [np.empty(3, np.float32)])
    assert info.value.op_index == 2 and info.value.op_name == "add"


def test_eager_values_unchanged_with_constants(tpu):
    import torch

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = x.to("tpu")
    for _ in range(3):  # the second and third launches reuse the folded constants
        assert torch.equal((t * 2.5 + 1).cpu(), x * 2.5 + 1)
        assert torch.equal(torch.full((2, 3), -0.0, device="tpu").cpu(), torch.full((2, 3), -0.0))
        assert torch.equal(torch.arange(5, device="tpu").cpu(), torch.arange(5))


def test_final_ufunc_writes_into_the_output_buffer():
    drv = SimDriver()
    b = Builder()
    x, y = b.input((4, 3), "float32"), b.input((3,), "float32")
    yb = b.emit("broadcast_in_dim", [y], shape=(4, 3), broadcast_dimensions=(1,))[0]
    program = b.finish([b.emit("multiply", [b.emit("exponential", [x])[0], yb])[0]])
    exe = drv.compile(program)
    assert exe.payload.last is not None and exe.payload.last.op.name == "multiply"
    xv = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    yv = np.array([1.5, -2.0, 0.25], np.float32)
    want = np.exp(xv) * yv
    strided = np.zeros((4, 6), np.float32)[:, ::2]  # a strided output view
    drv.execute(exe, [xv, yv], [strided])
    assert strided.tobytes() == want.tobytes()
    wide = np.zeros((4, 3), np.float64)  # another dtype: computed, then cast on the copy
    drv.execute(exe, [xv, yv], [wide])
    np.testing.assert_array_equal(wide, want.astype(np.float64))
    b = Builder()
    x = b.input((5,), "float32")
    exe = drv.compile(b.finish([b.emit("add", [x, x])[0]]))
    v = np.arange(5, dtype=np.float32)
    drv.execute(exe, [v], [v])  # in place: the output is the operand
    np.testing.assert_array_equal(v, 2 * np.arange(5, dtype=np.float32))


def test_straight_line_steps_equal_the_interpreter_and_name_a_failing_op():
    # the steps run as one generated function (straight_line.py); a step that raises is found again by the
    # interpreter, which names it by its program index
    drv = SimDriver()
    b = Builder()
    x, y = b.input((4,), "int64"), b.input((4,), "int64")
    q = b.emit("divide", [x, y])[0]  # generic kernel (integer division checks for zero)
    s = b.emit("add", [q, x])[0]
    m = b.emit("multiply", [s, y])[0]
    program = b.finish([m, q])
    exe = drv.compile(program)
    xv, yv = np.array([7, -7, 9, 1], np.int64), np.array([2, 2, -4, 3], np.int64)
    outs = [np.empty(4, np.int64), np.empty(4, np.int64)]
    drv.execute(exe, [xv, yv], outs)
    env = [xv, yv, *exe.payload.padding]
    sim_driver._interpret(exe.payload, env)
    want = [(3 + 7) * 2, (-3 - 7) * 2, (-2 + 9) * -4, (0 + 1) * 3]
    assert outs[0].tolist() == env[exe.payload.outputs[0]].tolist() == want
    with pytest.raises(ExecutionError) as info:
        drv.execute(exe, [xv, np.array([1, 0, 1, 1], np.int64)], outs)
    assert info.value.op_index == 0 and info.value.op_name == "divide"
