"""drivers/sim/fusion.py across runtime scalars: small pure steps (an optimizer's bias corrections from a step
count: power, subtract, sqrt on 0-d values) are no barrier to fusion, and a broadcast of one such value is read
once by the loop, so an AdamW-like chain over a parameter fuses into one loop; the results are the steps' bits
(NaN payloads aside), for special values of the step count and of the tensors."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.sim import fusion
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.drivers.sim.fusion import FusedStep

N = 4096
_BITS = {4: np.uint32, 8: np.uint64}


def _adam_like(dtype: str, scalar_shape: tuple[int, ...]) -> Program:
    b = Builder()
    p, g, m, v = (b.input((N,), dtype) for _ in range(4))
    step = b.input(scalar_shape, dtype)

    def const(x: float) -> object:
        return b.emit("constant", [], value=x, shape=scalar_shape, dtype=dtype)[0]

    bc1 = b.emit("subtract", [const(1.0), b.emit("power", [const(0.9), step])[0]])[0]
    bc2 = b.emit("sqrt", [b.emit("subtract", [const(1.0), b.emit("power", [const(0.999), step])[0]])[0]])[0]
    dims = tuple(range(len(scalar_shape))) if scalar_shape else ()
    bc1, bc2 = (b.emit("broadcast_in_dim", [b.emit("reshape", [x], shape=())[0]], shape=(N,),
                       broadcast_dimensions=())[0] if dims else
                b.emit("broadcast_in_dim", [x], shape=(N,), broadcast_dimensions=())[0] for x in (bc1, bc2))
    m2 = b.emit("add", [m, b.emit("multiply", [b.emit("subtract", [g, m])[0], g])[0]])[0]
    v2 = b.emit("add", [b.emit("multiply", [v, v])[0], b.emit("multiply", [g, g])[0]])[0]
    denom = b.emit("add", [b.emit("divide", [b.emit("sqrt", [v2])[0], bc2])[0], p])[0]
    p2 = b.emit("subtract", [p, b.emit("divide", [b.emit("divide", [m2, denom])[0], bc1])[0]])[0]
    return b.finish([p2, m2, v2])


def _run(program: Program, inputs: list[np.ndarray], limit: int, monkeypatch) -> tuple[list[np.ndarray], list]:
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", limit)
    drv = SimDriver()
    exe = drv.compile(program)
    outs = [np.empty(v.shape, v.dtype) for v in program.outputs]
    with np.errstate(all="ignore"):
        drv.execute(exe, inputs, outs)
    return outs, list(exe.payload.steps)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a)
    bits = _BITS[a.itemsize]
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(bits), b[~nan].view(bits))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scalar_shape", [(), (1,)])
@pytest.mark.parametrize("step_value", [1.0, 7.0, 0.0, -3.0, np.inf, np.nan])
def test_chain_over_runtime_scalars_fuses_into_one_loop_with_the_steps_bits(dtype, scalar_shape, step_value,
                                                                           monkeypatch):
    program = _adam_like(dtype, scalar_shape)
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, 1.0, -1.0], dtype)
    inputs = []
    for _ in range(4):
        x = rng.standard_normal(N).astype(dtype)
        x[rng.integers(0, N, N // 8)] = special[rng.integers(0, len(special), N // 8)]
        inputs.append(x)
    inputs.append(np.full(scalar_shape, step_value, dtype))
    plain, plain_steps = _run(program, inputs, 1 << 62, monkeypatch)
    fused, steps = _run(program, inputs, N, monkeypatch)  # the N-element steps fuse, the scalar ones are small
    assert not any(isinstance(s, FusedStep) for s in plain_steps)
    groups = [s for s in steps if isinstance(s, FusedStep)]
    assert len(groups) == 1 and not any(type(s).__name__ != "FusedStep" and s.op.outputs[0].shape == (N,)
                                        for s in steps), [getattr(s, "op", s) for s in steps]
    assert "= a" in groups[0].source and "[0]" in groups[0].source  # the scalars read once, before the loop
    for p, f in zip(plain, fused):
        assert _same(p, f), p[p.view(_BITS[p.itemsize]) != f.view(_BITS[f.itemsize])][:5]


def test_a_scalar_of_another_shape_at_run_time_runs_the_steps(monkeypatch):
    """The loop reads the scalar operand as compiled (one element); given anything else it runs the steps."""
    program = _adam_like("float32", ())
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(N).astype(np.float32) for _ in range(4)] + [np.float32(3.0) * np.ones(())]
    inputs[-1] = inputs[-1].astype(np.float64)  # a float64 step count buffer: not what the loop was built for
    plain, _ = _run(program, inputs, 1 << 62, monkeypatch)
    fused, _ = _run(program, inputs, N, monkeypatch)
    assert all(_same(p, f) for p, f in zip(plain, fused))
