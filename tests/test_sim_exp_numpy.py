"""drivers/sim/exp_numpy.py: numpy's float32 exp (AVX512F simd_exp_FLOAT) as numba code, and fused exp chains.

tests/data/exp_numpy246.npz holds numpy 2.4.6's np.exp bits (X86_V4 dispatch) for hard inputs: specials and NaN
payloads, the overflow/underflow thresholds and the ends of the subnormal result range +-3 ulps, a stride of
subnormal results, and 4096 inputs where np.exp is not the correctly rounded exp (benchmarks/exp_numpy_table.py
wrote it; benchmarks/exp_numpy_exhaustive.py compares all 2^32 inputs with the running np.exp).
"""

from __future__ import annotations

import os

import numba
import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import exp_numpy, fusion
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.drivers.sim.fusion import FusedStep

_TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "exp_numpy246.npz"))
X = _TABLE["x"].view(np.float32)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


def test_table_covers_the_hard_cases():
    assert X.size > 10000 and np.isnan(X).sum() >= 4 and (X == 0).sum() == 2 and np.isinf(X).sum() == 2
    ref = _TABLE["exp"].view(np.float32)
    assert ((_TABLE["exp"] & 0x7FFFFFFF) < 0x800000).sum() > 1000  # subnormal results
    with np.errstate(all="ignore"):
        rounded = np.exp(X.astype(np.float64)).astype(np.float32)
    assert (_bits(rounded) != _TABLE["exp"]).sum() >= 4096  # not correctly rounded ones
    assert (_bits(ref[np.isnan(X)]) == 0x7FC00000).all()  # numpy's NPY_NANF whatever the NaN's sign and payload


def test_table_bits():
    got = _bits(exp_numpy.exp(X))
    bad = got != _TABLE["exp"]
    assert not bad.any(), [tuple(map(hex, t)) for t in zip(_TABLE["x"][bad], got[bad], _TABLE["exp"][bad])][:5]


@pytest.mark.skipif(not exp_numpy.AVAILABLE, reason=f"the running np.exp is not the ported one: {exp_numpy.REASON}")
def test_running_numpy_is_the_table():
    with np.errstate(all="ignore"):
        assert np.array_equal(_bits(np.exp(X)), _TABLE["exp"])


@pytest.mark.skipif(not exp_numpy.AVAILABLE, reason=f"the running np.exp is not the ported one: {exp_numpy.REASON}")
def test_random_inputs_match_the_running_numpy():
    rng = np.random.default_rng(22)
    x = np.concatenate([rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.uniform(-110, 95, 1 << 18).astype(np.float32)])
    with np.errstate(all="ignore"):
        want = _bits(np.exp(x))
    got = _bits(exp_numpy.exp(x))
    assert np.array_equal(got, want), x[got != want][:5]


def test_layouts_and_shapes():
    x = X[:1001].reshape(7, 11, 13)[:, ::2, 1:]  # non-contiguous, odd sizes
    got = exp_numpy.exp(x)
    assert got.shape == x.shape and got.dtype == np.float32
    assert np.array_equal(_bits(got), _TABLE["exp"][:1001].reshape(7, 11, 13)[:, ::2, 1:])
    assert exp_numpy.exp(X[:0]).shape == (0,) and exp_numpy.exp(np.float32(0.5).reshape(())).shape == ()
    with pytest.raises(TypeError, match="float32"):
        exp_numpy.exp(np.zeros(3))


def test_fma_rounds_once():
    @numba.njit
    def fma(a, b, c):  # pragma: no cover - numba
        return exp_numpy._fma(a, b, c)

    a, b = np.float32(1 + 2.0**-13), np.float32(1 - 2.0**-13)
    assert fma(a, b, np.float32(-1)) == np.float32(-(2.0**-26)) and a * b - np.float32(1) == 0


def test_the_loop_vectorizes():
    loop = numba.njit(error_model="numpy")(exp_numpy._exp_loop.py_func)  # uncached, so its IR can be read
    arr = numba.types.Array(numba.types.float32, 1, "C")
    loop.compile((arr, arr))
    ir = loop.inspect_llvm((arr, arr))
    assert "x float>" in ir and "@llvm.fma.v" in ir, "exp_numpy's loop no longer vectorizes"


def test_fails_closed_on_another_numpy_or_target(monkeypatch):
    assert exp_numpy.self_check() == exp_numpy.REASON
    monkeypatch.setattr(exp_numpy.np, "__version__", "2.5.0")
    assert "numpy 2.5.0" in exp_numpy.self_check()
    monkeypatch.undo()
    monkeypatch.setattr(exp_numpy, "_dispatch_target", lambda: "X86_V3")
    assert "X86_V3" in exp_numpy.self_check()
    monkeypatch.setattr(exp_numpy, "_dispatch_target", lambda: None)
    assert "None" in exp_numpy.self_check()


def test_fails_closed_when_the_sample_differs(monkeypatch):
    if not exp_numpy.AVAILABLE:
        pytest.skip(f"the running np.exp is not the ported one: {exp_numpy.REASON}")
    def rounded(x):
        with np.errstate(all="ignore"):
            return np.exp(x.astype(np.float64)).astype(np.float32)

    monkeypatch.setattr(exp_numpy, "exp", rounded)
    assert "differs from np.exp" in exp_numpy.self_check()


def _program(n: int):
    """softmax's row chain (x - max, exp, / sum, with the sum a step between) and silu's sigmoid chain."""
    b = Builder()
    x = b.input((n,), "float32")
    m = b.input((n,), "float32")
    s = b.input((n,), "float32")
    e = b.emit("exponential", [b.emit("subtract", [x, m])[0]])[0]
    p = b.emit("divide", [e, s])[0]
    g = b.emit("logistic", [x])[0]
    silu = b.emit("multiply", [x, g])[0]
    d = b.emit("multiply", [g, b.emit("subtract", [b.emit("add", [silu, p])[0], e])[0]])[0]
    return b.finish([e, p, g, silu, d], name="exp_chains")


def _run(inputs: list[np.ndarray], fuse: bool, monkeypatch) -> tuple[list[np.ndarray], list[FusedStep]]:
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1 if fuse else 1 << 62)
    drv = SimDriver()
    exe = drv.compile(_program(inputs[0].size))
    fused = [s for s in exe.payload.steps if isinstance(s, FusedStep)]
    outs = [np.empty(inputs[0].shape, np.float32) for _ in range(5)]
    with np.errstate(all="ignore"):
        drv.execute(exe, inputs, outs)
    return outs, fused


def test_fused_softmax_and_sigmoid_chains_are_the_steps_bits(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_EXP", True)  # off by default (slower); fuses where exp_numpy.AVAILABLE
    rng = np.random.default_rng(7)
    n = X.size + 4099
    x = np.concatenate([X, rng.standard_normal(4099).astype(np.float32) * np.float32(8)])
    m = rng.permutation(np.concatenate([X, rng.uniform(-5, 5, 4099).astype(np.float32)]))
    s = rng.uniform(0.5, 300, n).astype(np.float32)
    plain, none = _run([x, m, s], False, monkeypatch)
    fused, steps = _run([x, m, s], True, monkeypatch)
    assert not none and steps
    inside = {st.op.name for f in steps for st in f.steps}
    assert ({"exponential", "logistic"} <= inside) == exp_numpy.AVAILABLE
    if exp_numpy.AVAILABLE:
        source = "".join(f.source for f in steps)
        assert "exp_numpy.expf(" in source and exp_numpy.SOURCE_DIGEST in source
    for p, f in zip(plain, fused):
        assert np.array_equal(_bits(p), _bits(f)), x[_bits(p) != _bits(f)][:5]


def test_exp_is_not_fused_when_the_check_fails(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_EXP", False)
    rng = np.random.default_rng(8)
    x, m, s = (rng.standard_normal(5000).astype(np.float32) for _ in range(3))
    plain, _ = _run([x, m, s], False, monkeypatch)
    fused, steps = _run([x, m, s], True, monkeypatch)
    inside = {st.op.name for f in steps for st in f.steps}
    assert not inside & {"exponential", "logistic"} and "exp_numpy" not in "".join(f.source for f in steps)
    for p, f in zip(plain, fused):
        assert np.array_equal(_bits(p), _bits(f))


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "compile"])
def test_training_step_with_softmax_and_silu_is_defer_never_bits(mode, monkeypatch):
    import torch

    import torchtpu  # noqa: F401 - registers the tpu device
    from torchtpu.runtime import driver

    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(fusion, "FUSE_EXP", True)  # off by default (slower); fuses where exp_numpy.AVAILABLE
    torch.manual_seed(0)
    w1, w2 = torch.randn(24, 37) * 0.3, torch.randn(37, 11) * 0.3
    x = torch.randn(53, 24) * 3
    target = torch.randint(0, 11, (53,))

    def step(x, w1, w2, target):
        h = torch.nn.functional.silu(x @ w1)
        logits = h @ w2
        p = torch.softmax(logits, -1)
        loss = torch.nn.functional.cross_entropy(logits, target) + (p * torch.sigmoid(logits)).sum()
        g1, g2 = torch.autograd.grad(loss, [w1, w2])
        return loss, p, g1, g2

    def run(fn, grad_mode):
        a, b = w1.to("tpu").requires_grad_(), w2.to("tpu").requires_grad_()
        if grad_mode is None:
            out = fn(x.to("tpu"), a, b, target.to("tpu"))
        else:
            with torch.tpu.eager_mode(grad_mode):
                out = fn(x.to("tpu"), a, b, target.to("tpu"))
        return [t.detach().cpu().numpy() for t in out]

    ref = run(step, "DEFER_NEVER")
    drv = driver()
    before = set(map(id, drv._cache.values()))
    got = run(torch.compile(step, backend="tpu"), None) if mode == "compile" else run(step, mode)
    fused = {st.op.name for exe in drv._cache.values() if id(exe) not in before
             for f in getattr(exe.payload, "steps", ()) if isinstance(f, FusedStep) for st in f.steps}
    want = {"exponential", "logistic"} if mode == "compile" else {"logistic"}  # (eager: softmax's exp is alone)
    assert (want <= fused) == exp_numpy.AVAILABLE, fused
    for r, g in zip(ref, got):
        assert np.array_equal(np.isnan(r), np.isnan(g))
        assert np.array_equal(_bits(r)[~np.isnan(r)], _bits(g)[~np.isnan(g)])
