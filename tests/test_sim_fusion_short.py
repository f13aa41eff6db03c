"""The sim driver's short exp groups and int64 mask chains (drivers/sim/fusion.py `SHORT_EXP`, `FUSE_INT64`): SiLU's
`x * logistic(x)` and softmax's `exp(x - max)` run as one loop, and int64 compares (RoPE's slice-gradient masks)
fuse with their and/or and select; the same bits as the steps (NaN/inf/-0.0, odd sizes, int64 extremes), and a
compiled training step through slices is DEFER_NEVER's bits."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.sim import fusion
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.drivers.sim.fusion import FusedStep

N = 4099  # odd: the tests lower MIN_ELEMENTS to fuse these
_F32 = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.7, -103.9, 1e-40, -1e-40, 3.4e38], np.float32)
_I64 = np.array([0, -1, 1, np.iinfo(np.int64).min, np.iinfo(np.int64).max, np.iinfo(np.int64).min + 1,
                 np.iinfo(np.int64).max - 1, 1 << 32, -(1 << 32), 255, 256], np.int64)


def _run(program: Program, inputs: list[np.ndarray], fuse: bool, monkeypatch) -> tuple[list[np.ndarray], list]:
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1 if fuse else 1 << 62)
    drv = SimDriver()
    exe = drv.compile(program)
    fused = [s for s in exe.payload.steps if isinstance(s, FusedStep)]
    outs = [np.empty(v.shape, v.dtype) for v in program.outputs]
    with np.errstate(all="ignore"):
        drv.execute(exe, inputs, outs)
    return outs, fused


def _same_bits(plain: list[np.ndarray], fused: list[np.ndarray]) -> None:
    for p, f in zip(plain, fused):
        assert p.dtype == f.dtype and p.shape == f.shape
        p, f = p.reshape(-1), f.reshape(-1)
        assert np.array_equal(p.view(np.uint8), f.view(np.uint8)), p[p != f][:5]


def _floats(rng: np.random.Generator) -> np.ndarray:
    x = np.concatenate([np.tile(_F32, 40), rng.standard_normal(N - 40 * _F32.size).astype(np.float32) * 30])
    return rng.permutation(x)


def _silu_softmax() -> Program:
    """SiLU (x * logistic(x)) and softmax's numerator (exp(x - m)): two 2-op chains, of two shapes (two groups)."""
    b = Builder()
    x, y, m = b.input((N,), "float32"), b.input((N + 2,), "float32"), b.input((N + 2,), "float32")
    silu = b.emit("multiply", [x, b.emit("logistic", [x])[0]])[0]
    e = b.emit("exponential", [b.emit("subtract", [y, m])[0]])[0]
    return b.finish([silu, e], name="short_exp")


@pytest.mark.skipif(not fusion.exp_numpy.AVAILABLE,
                    reason="this numpy's np.exp is not exp_numpy's routine: exp is not fused")
def test_short_exp_groups_fuse_with_the_steps_bits(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_EXP", True)  # off by default (slower than np.exp)
    rng = np.random.default_rng(3)
    inputs = [_floats(rng), np.append(_floats(rng), [-0.0, np.nan]), np.append(_floats(rng), [0.0, 1.0])]
    plain, none = _run(_silu_softmax(), inputs, False, monkeypatch)
    fused, steps = _run(_silu_softmax(), inputs, True, monkeypatch)
    assert not none and len(steps) == 2
    assert {st.op.name for f in steps for st in f.steps} == {"multiply", "logistic", "subtract", "exponential"}
    _same_bits(plain, fused)
    monkeypatch.setattr(fusion, "SHORT_EXP", False)  # the old rule: 2-op groups stay steps
    old, steps = _run(_silu_softmax(), inputs, True, monkeypatch)
    assert not steps
    _same_bits(plain, old)


def test_short_groups_without_exp_stay_steps(monkeypatch):
    b = Builder()
    x, y = b.input((N,), "float32"), b.input((N,), "float32")
    out = b.emit("multiply", [b.emit("add", [x, y])[0], x])[0]
    rng = np.random.default_rng(4)
    _, steps = _run(b.finish([out]), [_floats(rng), _floats(rng)], True, monkeypatch)
    assert not steps


def _mask_chain() -> Program:
    """RoPE's slice-gradient shape: int64 compares of an index against bounds, and/or, select over float32 and
    int64, a convert of the mask; every compare direction."""
    b = Builder()
    i, lo, hi = (b.input((N,), "int64") for _ in range(3))
    g = b.input((N,), "float32")
    bound = b.emit("broadcast_in_dim", [b.emit("constant", [], value=7, shape=(), dtype="int64")[0]],
                   shape=(N,), broadcast_dimensions=())[0]
    masks = [b.emit("compare", [i, lo], direction="GE")[0], b.emit("compare", [i, hi], direction="LT")[0],
             b.emit("compare", [i, bound], direction="EQ")[0], b.emit("compare", [lo, hi], direction="NE")[0],
             b.emit("compare", [hi, i], direction="LE")[0], b.emit("compare", [hi, lo], direction="GT")[0]]
    inside = b.emit("and", [masks[0], masks[1]])[0]
    either = b.emit("or", [b.emit("or", [masks[2], masks[3]])[0], b.emit("and", [masks[4], masks[5]])[0]])[0]
    zero = b.emit("broadcast_in_dim", [b.emit("constant", [], value=-0.0, shape=(), dtype="float32")[0]],
                  shape=(N,), broadcast_dimensions=())[0]
    picked = b.emit("select", [inside, g, zero])[0]
    index = b.emit("select", [either, i, lo])[0]
    return b.finish([picked, index, either], name="masks")


def _ints(rng: np.random.Generator) -> np.ndarray:
    x = np.concatenate([np.tile(_I64, 100), rng.integers(-10, 10, N - 100 * _I64.size)])
    return rng.permutation(x).astype(np.int64)


def test_int64_mask_chains_fuse_with_the_steps_bits(monkeypatch):
    rng = np.random.default_rng(5)
    inputs = [_ints(rng), _ints(rng), _ints(rng), _floats(rng)]
    plain, none = _run(_mask_chain(), inputs, False, monkeypatch)
    fused, steps = _run(_mask_chain(), inputs, True, monkeypatch)
    assert not none
    inside = [st.op.name for f in steps for st in f.steps]
    assert inside.count("compare") == 6 and inside.count("select") == 2, inside
    assert "c_int64" in "".join(f.source for f in steps)
    _same_bits(plain, fused)
    monkeypatch.setattr(fusion, "FUSE_INT64", False)  # the old rule: int64 compares and selects stay steps
    old, steps = _run(_mask_chain(), inputs, True, monkeypatch)
    assert "compare" not in [st.op.name for f in steps for st in f.steps]
    _same_bits(plain, old)


def test_loops_without_int64_constants_keep_their_source(monkeypatch):
    """A loop with no int64 constant takes no int64 constant array: its source (and so its disk cache) is the
    one it had before int64 fused."""
    rng = np.random.default_rng(6)
    inputs = [_floats(rng), np.append(_floats(rng), [1, 2]), np.append(_floats(rng), [3, 4])]
    _, steps = _run(_silu_softmax(), [a.astype(np.float32) for a in inputs], True, monkeypatch)
    assert all("int64" not in f.source for f in steps)


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "compile"])
def test_training_through_slices_and_silu_is_defer_never_bits(mode, monkeypatch):
    import torch

    import torchtpu  # noqa: F401 - registers the tpu device
    from torchtpu.runtime import driver

    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(fusion, "FUSE_EXP", True)  # off by default (slower); fuses where exp_numpy.AVAILABLE
    torch.manual_seed(0)
    w = torch.randn(24, 38) * 0.3
    x = torch.randn(3, 53, 24) * 3
    x[0, 0, :4] = torch.tensor([-0.0, 0.0, 40.0, -40.0])  # NaN/inf are the unit tests': here they'd spread to all

    def step(x, w):
        h = x @ w
        a, c = h[..., :19], h[..., 19:]  # RoPE's rotate_half: slices whose gradients pad and select
        rot = torch.cat([-c, a], -1)
        y = torch.nn.functional.silu(h * 0.5 + rot * 0.25)
        loss = torch.softmax(y, -1).square().sum()
        (g,) = torch.autograd.grad(loss, [w])
        return loss, y, g

    def run(fn, grad_mode):
        wt = w.to("tpu").requires_grad_()
        if grad_mode is None:
            out = fn(x.to("tpu"), wt)
        else:
            with torch.tpu.eager_mode(grad_mode):
                out = fn(x.to("tpu"), wt)
        return [t.detach().cpu().numpy() for t in out]

    ref = run(step, "DEFER_NEVER")
    drv = driver()
    before = set(map(id, drv._cache.values()))
    got = run(torch.compile(step, backend="tpu"), None) if mode == "compile" else run(step, mode)
    fused = [st for exe in drv._cache.values() if id(exe) not in before
             for s in getattr(exe.payload, "steps", ()) if isinstance(s, FusedStep) for st in s.steps]
    assert fused
    _same_bits(ref, got)
