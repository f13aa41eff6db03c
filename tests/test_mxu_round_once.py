"""Dots of one plan that read the same value round it to bf16 once per run (drivers/sim/shared_rounding.py,
sim/mxu_round.py `RoundMemo`): the same bits as rounding at every dot, in every MXU mode and precision, eager
mode and torch.compile; a kept rounding is served only to the same operand object in the same geometry."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import shared_rounding
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim import mxu, mxu_round
from torchtpu.sim.mxu_round import LAST, STORE, USE, RoundMemo
from torchtpu.sim.numerics import round_bf16

import torchtpu

M, K = 97, 300  # odd sizes; every product below is over the "auto" exact limit (2^18 multiply-adds)


def _dot(b: Builder, x, y, lc: int, rc: int, precision: str):
    return b.emit("dot_general", [x, y], lhs_batch=(), rhs_batch=(), lhs_contract=(lc,), rhs_contract=(rc,),
                  precision=precision, out_dtype="float32")[0]


def _program(precision: str):
    """x read by five dots: x @ w1, x @ w2, x @ w3^T, x^T @ g (another layout of x), x @ x^T (both sides)."""
    b = Builder()
    x, w1, w2, w3, g = (b.input(s, "float32") for s in [(M, K), (K, 131), (K, 67), (129, K), (M, 45)])
    outs = [_dot(b, x, w1, 1, 0, precision), _dot(b, x, w2, 1, 0, precision), _dot(b, x, w3, 1, 1, precision),
            _dot(b, x, g, 0, 0, precision), _dot(b, x, x, 1, 1, precision)]
    return b.finish(outs)


def _inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s, dtype=np.float32) for s in [(M, K), (K, 131), (K, 67), (129, K), (M, 45)]]
    xs[0][0, :4] = [np.inf, -np.nan, 1e-39, 3.0e38]  # specials: inf, NaN, a bf16-subnormal, a carry to inf
    return xs


def _run(drv: SimDriver, exe, inputs: list[np.ndarray]) -> list[bytes]:
    outs = [np.full(v.type.shape, np.nan, np.float32) for v in exe.program.outputs]
    drv.execute(exe, inputs, outs)
    return [o.tobytes() for o in outs]


def _count_served(monkeypatch) -> list:
    """The shapes of the operands that a kept rounding served (USE or LAST readers), from now on."""
    served = []
    memo_round = mxu_round._memo_round

    def counting(x, slot, keep_transposed, *kind):  # kind: uint16 where mxu_gemm reads bf16 bits
        out = memo_round(x, slot, keep_transposed, *kind)
        roles = mxu_round._request.current[2]
        side = 0 if slot == "lhs" else 1
        if out is not None and roles[side][1] != STORE:
            served.append(x.shape)
        return out

    monkeypatch.setattr(mxu_round, "_memo_round", counting)
    return served


@pytest.mark.parametrize("precision", ["DEFAULT", "HIGH", "HIGHEST"])
@pytest.mark.parametrize("mode", [None, "exact", "fast"])
def test_shared_operand_rounds_once_with_the_same_bits(monkeypatch, mode, precision):
    served = _count_served(monkeypatch)
    mxu.set_mode(mode)
    try:
        drv = SimDriver()
        shared = drv.compile(_program(precision))
        monkeypatch.setattr(shared_rounding, "ENABLED", False)
        plain = SimDriver().compile(_program(precision))
        monkeypatch.setattr(shared_rounding, "ENABLED", True)
        wrapped = [s for s in shared.payload.steps if hasattr(s.fast, "shared_rounding")]
        assert len(wrapped) == (5 if precision == "DEFAULT" else 0)
        assert not any(hasattr(s.fast, "shared_rounding") for s in plain.payload.steps)
        for seed in (0, 1):  # a second run: nothing kept from the first serves it
            inputs = _inputs(seed)
            assert _run(drv, shared, inputs) == _run(drv, plain, inputs)
        if wrapped:
            assert wrapped[0].fast.shared_rounding[0].kept() == 0  # the last reader dropped it
    finally:
        mxu.set_mode(None)
    # fast (and "auto": every product here is over its exact limit): x @ w2, x @ w3^T, x^T @ g and both sides of
    # x @ x^T take x's rounding kept by x @ w1 (x^T, transposed memory of x, too), in each of the two runs;
    # exact mode and HIGH/HIGHEST do not round so
    want = sorted([(1, M, K)] * 3 + [(1, K, M)] * 2) * 2 if mode != "exact" and precision == "DEFAULT" else []
    assert sorted(served) == sorted(want)


def test_each_product_equals_the_unshared_matmul():
    x, w1, w2, w3, g = _inputs(2)
    drv = SimDriver()
    exe = drv.compile(_program("DEFAULT"))
    mxu.set_mode("fast")
    try:
        got = _run(drv, exe, [x, w1, w2, w3, g])
        want = [mxu.matmul(x, w1), mxu.matmul(x, w2), mxu.matmul(x, w3.T), mxu.matmul(x.T, g), mxu.matmul(x, x.T)]
    finally:
        mxu.set_mode(None)
    assert got == [w.tobytes() for w in want]
    assert want[0].tobytes() == mxu.blas_matmul(round_bf16(x), round_bf16(w1)).tobytes()


def _memo_matmul(memo: RoundMemo, roles: tuple, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return memo.call(lambda x, y: mxu.matmul(x, y, mode="fast"), roles, (a, b), {})


def test_memo_serves_only_the_same_memory_owner_in_the_same_geometry():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b1, b2 = rng.standard_normal((K, 131), dtype=np.float32), rng.standard_normal((K, 131), dtype=np.float32)
    memo = RoundMemo()
    _memo_matmul(memo, ((0, STORE), None), a, b1)
    assert memo.kept() == 1
    twin = a.copy()  # equal values, other memory
    a[:] = rng.standard_normal((M, K), dtype=np.float32)  # what a stale entry would get wrong
    assert _memo_matmul(memo, ((0, USE), None), twin, b2).tobytes() == mxu.matmul(twin, b2, mode="fast").tobytes()
    part = a[:, :200]  # the same owner, another geometry
    assert _memo_matmul(memo, ((0, USE), None), part, b2[:200]).tobytes() == \
        mxu.matmul(part, b2[:200], mode="fast").tobytes()
    # a run cut short keeps its entry; the next run's first reader replaces it before anyone reads it
    _memo_matmul(memo, ((0, STORE), None), a, b1)
    kept = _memo_matmul(memo, ((0, LAST), None), a.reshape(M, K), b2)  # a view of the same owner is served
    assert kept.tobytes() == mxu.matmul(a, b2, mode="fast").tobytes()
    assert memo.kept() == 0


@pytest.mark.parametrize("keep_transposed", [False, True])
def test_memo_serves_the_transposed_memory_in_round_operands_layout(keep_transposed):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 61, 257), dtype=np.float32)
    a[0, 0, :3] = [np.nan, -np.inf, -1e-40]
    memo = RoundMemo()
    memo.call(lambda x, y: None, ((0, STORE), None), (a, None), {})  # nothing rounded: nothing kept
    assert memo.kept() == 0
    memo.call(lambda x, y: mxu_round.round_operand(x, "lhs"), ((0, STORE), None), (a, None), {})
    t = a.swapaxes(-1, -2)
    got = memo.call(lambda x, y: mxu_round.round_operand(x, "lhs", keep_transposed), ((0, LAST), None), (t, None), {})
    want = mxu_round.round_operand(t, None, keep_transposed)
    assert got.shape == want.shape and got.strides == want.strides and got.tobytes() == want.tobytes()
    assert got.flags.c_contiguous != keep_transposed and memo.kept() == 0


def test_memo_request_ends_with_the_call_even_when_it_raises():
    memo = RoundMemo()

    def boom(x, y):
        mxu.matmul(x, y, mode="fast")
        raise RuntimeError("boom")

    a = np.ones((M, K), np.float32)
    with pytest.raises(RuntimeError, match="boom"):
        memo.call(boom, ((0, STORE), (1, LAST)), (a, a.T), {})
    assert getattr(mxu_round._request, "current", None) is None
    assert mxu_round.round_operand(a, "lhs") is not None  # plain scratch rounding again


class _Block(torch.nn.Module):
    """A normalized input read by three projections (q, k, v style) and an MLP: shared operands in both the
    forward (the normalized input) and the backward (output gradients read by two products each)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(257, 131) for _ in range(3))
        self.up, self.down = torch.nn.Linear(131, 389), torch.nn.Linear(389, 257)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.layer_norm(x, (257,))
        a = self.q(h) * torch.sigmoid(self.k(h)) + self.v(h)
        return x + self.down(torch.relu(self.up(a)))


def _train(tpu, model: torch.nn.Module, x: torch.Tensor, compiled: bool) -> list[bytes]:
    model = model.to(tpu)
    run = torch.compile(model, backend="tpu") if compiled else model
    y = run(x.to(tpu))
    y.square().sum().backward()
    return [y.detach().cpu().numpy().tobytes()] + [p.grad.cpu().numpy().tobytes() for p in model.parameters()]


@pytest.mark.parametrize("mode", ["LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"])
def test_training_step_bits_equal_defer_never(tpu, monkeypatch, mode):
    import copy

    torch._dynamo.reset()
    torch.manual_seed(0)
    model, x = _Block(), torch.randn(2, 61, 257)
    with torchtpu.eager_mode("DEFER_NEVER"):
        want = _train(tpu, copy.deepcopy(model), x, False)
    served = _count_served(monkeypatch)
    with torchtpu.eager_mode("DEFER_NEVER" if mode == "compile" else mode):
        got = _train(tpu, copy.deepcopy(model), x, mode == "compile")
    assert got == want
    if mode != "LAUNCH_BLOCKING":  # programs of many ops: the shared roundings were served
        assert served
