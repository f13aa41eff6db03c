"""A fused group's result written over one of its operands (drivers/sim/fusion.py `IN_PLACE`: an AdamW step's
parameter and moments) is stored through that operand's own argument, so the loop may vectorize; the bits are
the old path's (through a second argument naming the same memory), the steps', and an AdamW formula's written
out in numpy, for special values (NaN, +-inf, +-0, subnormals) and odd sizes; a result written over an operand
it does not read, and a result beside fresh buffers, too."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_direct_outputs import _launch  # the launch that records each direct-write decision
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.sim import fusion
from torchtpu.drivers.sim.driver import SimDriver

LR, BETA1, BETA2, EPS, DECAY = 1e-3, 0.9, 0.999, 1e-8, 0.99  # DECAY: 1 - lr * weight_decay
_BITS = {4: np.uint32, 8: np.uint64}


def _adamw(shape: tuple[int, ...], dtype: str, params: int = 1, shared: bool = False) -> Program:
    """AdamW's update of `params` parameters over runtime bias corrections bc1, sqrt(bc2) (broadcast scalars, one
    pair per parameter or `shared`): p = p * DECAY - (m' / (sqrt(v') / bc2 + EPS)) * LR / bc1,
    m' = m + (g - m) * (1 - BETA1), v' = v * BETA2 + g * g * (1 - BETA2); inputs p, g, m, v of each parameter,
    then the scalars; outputs [p', m', v'] of each."""
    b = Builder()
    tensors = [[b.input(shape, dtype) for _ in range(4)] for _ in range(params)]
    scalars = [b.input((), dtype) for _ in range(2 if shared else 2 * params)]
    outs = []
    for i, (p, g, m, v) in enumerate(tensors):
        pair = scalars[:2] if shared else scalars[2 * i:2 * i + 2]
        bc1, bc2 = (b.emit("broadcast_in_dim", [x], shape=shape, broadcast_dimensions=())[0] for x in pair)
        outs += _update(b, shape, dtype, p, g, m, v, bc1, bc2)
    return b.finish(outs)


def _update(b: Builder, shape, dtype, p, g, m, v, bc1, bc2) -> list:

    def k(x: float) -> object:
        return b.emit("broadcast_in_dim", [b.emit("constant", [], value=x, shape=(), dtype=dtype)[0]], shape=shape,
                      broadcast_dimensions=())[0]

    def op(name: str, *args: object) -> object:
        return b.emit(name, list(args))[0]

    m2 = op("add", m, op("multiply", op("subtract", g, m), k(1 - BETA1)))
    v2 = op("add", op("multiply", v, k(BETA2)), op("multiply", op("multiply", g, g), k(1 - BETA2)))
    denom = op("add", op("divide", op("sqrt", v2), bc2), k(EPS))
    p2 = op("subtract", op("multiply", p, k(DECAY)), op("divide", op("multiply", op("divide", m2, denom), k(LR)), bc1))
    return [p2, m2, v2]


def _reference(p, g, m, v, bc1, bc2) -> list[np.ndarray]:
    """The same formula in numpy, operation by operation in the operands' dtype (numpy's ufuncs are the steps')."""
    t = p.dtype.type
    m2 = m + (g - m) * t(1 - BETA1)
    v2 = v * t(BETA2) + g * g * t(1 - BETA2)
    return [p * t(DECAY) - m2 / (np.sqrt(v2) / bc2 + t(EPS)) * t(LR) / bc1, m2, v2]


def _data(shape: tuple[int, ...], dtype: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny, -info.smallest_subnormal, info.max, 1e-30,
                        -1e30, 0.5, -2.5], dtype)
    arrays = []
    for _ in range(4):
        x = rng.standard_normal(int(np.prod(shape))).astype(dtype)
        at = rng.choice(x.size, 64, replace=False)
        x[at] = rng.choice(special, 64)
        arrays.append(x.reshape(shape))
    arrays[3] = np.abs(arrays[3])  # v >= 0, as a second moment (its specials' NaN and inf kept)
    return arrays


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits, NaNs aside (their payloads depend on operand order: test_sim_fusion.py `_same`)."""
    nan = np.isnan(a)
    bits = _BITS[a.itemsize]
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(bits), b[~nan].view(bits))


def _recording(monkeypatch) -> list[str]:
    """The sources of the loops compiled from now on (until `_launch` undoes the patches)."""
    compiled: list[str] = []
    real = fusion.compile_source

    def record(source: str):
        compiled.append(source)
        return real(source)

    monkeypatch.setattr(fusion, "compile_source", record)
    return compiled


def _step(exe, drv, data, scalars, outputs, monkeypatch) -> list[bool]:
    with np.errstate(all="ignore"):
        return _launch(drv, exe, [*data, *scalars], outputs, True, monkeypatch)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(65537,), (3, 21851), (256, 256)])
def test_adamw_in_place_has_the_old_paths_and_the_formulas_bits(dtype, shape, monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_adamw(shape, dtype))
    fused = [s for s in exe.payload.steps if isinstance(s, fusion.FusedStep)]
    assert len(fused) == 1, [type(s).__name__ for s in exe.payload.steps]
    p0, g, m0, v0 = _data(shape, dtype, seed=sum(shape))
    scalars = [np.array(1 - BETA1**3, dtype), np.array(np.sqrt(1 - BETA2**3), dtype)]
    with np.errstate(all="ignore"):
        expected = _reference(p0, g, m0, v0, *scalars)
    results, sources = {}, {}
    for in_place in (True, False):
        compiled = _recording(monkeypatch)
        monkeypatch.setattr(fusion, "IN_PLACE", in_place)
        p, m, v = p0.copy(), m0.copy(), v0.copy()
        assert all(_step(exe, drv, [p, g, m, v], scalars, [p, m, v], monkeypatch))  # (_launch undoes patches)
        results[in_place], sources[in_place] = [p, m, v], compiled
    stores = [line.split("[")[0].strip() for line in sources[True][0].splitlines() if "[i] = " in line]
    assert sources[False] == [fused[0].source] and len(stores) == 3 and all(a[0] == "a" for a in stores), sources
    for new, old, ref in zip(results[True], results[False], expected):
        assert np.array_equal(new.view(_BITS[new.itemsize]), old.view(_BITS[old.itemsize])) or _same(new, old)
        assert _same(new, ref)


def test_result_over_an_operand_it_does_not_read(monkeypatch):
    """y = a * a + a * a + a written over b (which y never reads), z = b * 2 + b written over a: element i of
    every operand is read before element i of any result is written."""
    shape = (300, 301)
    b_ = Builder()
    a, b = (b_.input(shape, "float32") for _ in range(2))
    sq = b_.emit("multiply", [a, a])[0]
    y = b_.emit("add", [b_.emit("add", [sq, sq])[0], a])[0]
    z = b_.emit("add", [b_.emit("add", [b, b])[0], b])[0]
    drv = SimDriver()
    exe = drv.compile(b_.finish([y, z]))
    rng = np.random.default_rng(5)
    a0, b0 = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    expected = [a0 * a0 + a0 * a0 + a0, b0 + b0 + b0]
    for in_place in (False, True):  # the plain loop compiled first (fresh buffers reuse it after)
        compiled = _recording(monkeypatch)
        monkeypatch.setattr(fusion, "IN_PLACE", in_place)
        aa, bb = a0.copy(), b0.copy()
        assert _step(exe, drv, [aa, bb], [], [bb, aa], monkeypatch) == [True]  # each written over the other
        assert np.array_equal(bb, expected[0]) and np.array_equal(aa, expected[1])
        stores = [line.split("[")[0].strip() for src in compiled for line in src.splitlines() if "[i] = " in line]
        assert sorted(stores) == (["a0", "a1"] if in_place else ["r0", "r1"]), compiled
        fresh = [np.empty(shape, np.float32) for _ in range(2)]
        _step(exe, drv, [a0, b0], [], fresh, monkeypatch)
        assert all(np.array_equal(f, e) for f, e in zip(fresh, expected))


@pytest.mark.parametrize("shared", [False, True])
def test_independent_chains_of_one_shape_run_as_one_loop_each(shared, monkeypatch):
    """Three parameters of one shape: one loop per parameter's chain (fusion.SPLIT), each stored in place, with
    the bits of the one loop over all three and of the formula; bias corrections shared or per parameter."""
    shape, params = (257, 259), 3
    program = _adamw(shape, "float32", params, shared)
    data = [_data(shape, "float32", seed=i) for i in range(params)]
    scalars = [np.array(1 - BETA1**(i + 2), np.float32) for i in range(2 if shared else 2 * params)]
    with np.errstate(all="ignore"):
        expected = [r for i, d in enumerate(data) for r in _reference(*d, *scalars[0 if shared else 2 * i:][:2])]
    results = {}
    for split in (True, False):
        monkeypatch.setattr(fusion, "SPLIT", split)
        drv = SimDriver()
        exe = drv.compile(program)
        fused = [s for s in exe.payload.steps if isinstance(s, fusion.FusedStep)]
        assert len(fused) == (params if split else 1)
        state = [x.copy() for d in data for x in d]
        targets = [state[4 * i + j] for i in range(params) for j in (0, 2, 3)]
        assert all(_step(exe, drv, state, scalars, targets, monkeypatch))
        results[split] = targets
    for new, old, ref in zip(results[True], results[False], expected):
        assert _same(new, old) and _same(new, ref)


def test_short_chains_stay_together(monkeypatch):
    """Two long chains and two of 2 ops (under MIN_OPS) in one shape: a loop per long chain, one for both short."""
    shape = (300, 300)
    b = Builder()
    x, y, u, w = (b.input(shape, "float32") for _ in range(4))
    outs = []
    for a in (x, y):
        t = a
        for _ in range(5):
            t = b.emit("multiply", [b.emit("add", [t, a])[0], a])[0]
        outs.append(t)
    outs += [b.emit("add", [b.emit("multiply", [a, a])[0], a])[0] for a in (u, w)]
    drv = SimDriver()
    exe = drv.compile(b.finish(outs))
    fused = [s for s in exe.payload.steps if isinstance(s, fusion.FusedStep)]
    assert sorted(len(f.steps) for f in fused) == [4, 10, 10]
    rng = np.random.default_rng(9)
    ins = [rng.standard_normal(shape, np.float32) for _ in range(4)]
    got = [np.empty(shape, np.float32) for _ in range(4)]
    _step(exe, drv, ins, [], got, monkeypatch)
    for a, o in zip(ins[:2], got[:2]):
        t = a
        for _ in range(5):
            t = (t + a) * a
        assert np.array_equal(o, t)
    assert all(np.array_equal(o, a * a + a) for a, o in zip(ins[2:], got[2:]))


@pytest.mark.parametrize("kind", ["compiled", "DEFER_AND_FUSE", "fused"])
def test_adamw_steps_over_big_parameters_equal_eager_defer_never(kind, tpu):
    """AdamW (capturable, as Dynamo traces it; or fused=True) over parameters big enough to fuse (three of one
    shape, one of another, odd sizes): compiled and DEFER_AND_FUSE give DEFER_NEVER's bits (its foreach ops unfused),
    and fused=True's one program those of its steps run one by one, step after step."""
    import torch

    import torchtpu

    def run(mode: str, compiled: bool, fused: bool) -> list[torch.Tensor]:
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(0)
        shapes = [(257, 259)] * 3 + [(255, 513)]
        params = [torch.nn.Parameter(torch.randn(s, generator=gen).to(tpu)) for s in shapes]
        opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.1, fused=True) if fused else \
            torch.optim.AdamW(params, lr=3e-3, weight_decay=0.1, capturable=True, foreach=True)
        step = torch.compile(opt.step, backend="tpu") if compiled else opt.step
        out = []
        with torchtpu.eager_mode(mode):
            for _ in range(3):
                for p in params:
                    p.grad = torch.randn(p.shape, generator=gen).to(tpu)
                step()
                out += [p.detach().cpu().clone() for p in params]
                out += [opt.state[p][k].cpu().clone() for p in params for k in ("exp_avg", "exp_avg_sq")]
        return out

    fused = kind == "fused"
    if fused:  # one program per step whatever the mode: the reference runs it step by step (nothing fused)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fusion, "MIN_ELEMENTS", 1 << 62)
            reference = run("DEFER_NEVER", False, True)
    else:
        reference = run("DEFER_NEVER", False, False)
    got = run("DEFER_NEVER" if kind != "DEFER_AND_FUSE" else kind, kind == "compiled", fused)
    assert all(torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(got, reference))
