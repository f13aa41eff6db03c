"""Python floats are program inputs from the first trace (ops/scalar_args.py): a new value neither re-traces
nor recompiles, in eager mode, in DEFER_AND_FUSE regions and from the C++ launch cache; results are bit-identical
to a program with the value baked in; a lowering that reads an undeclared float raises in tests and, for users,
is retraced with its floats by value (never served a program traced for another value)."""

import dataclasses

import pytest
import torch
from torch._ops import ops

import torchtpu  # noqa: F401
from torchtpu import runtime
from torchtpu.execution import deferred, eager, fast_launch
from torchtpu.ops import registry
from torchtpu.ops.registry import TABLE
from torchtpu.ops.scalar_args import StaticRead

aten = ops.aten


@pytest.fixture
def count_traces(monkeypatch):
    eager._cache.clear()  # counts start from nothing cached: an earlier test may have traced the same op
    fast_launch.clear()
    calls = []
    real = eager.trace

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(eager, "trace", counting)
    return calls


def test_new_float_value_reuses_the_trace_and_the_executable(tpu, count_traces):
    x = torch.randn(5, 7)
    d = x.to("tpu")
    for i, v in enumerate((1.25, 0.9, 0.99, 0.999, 3.0e-7, -2.5, 0.0, -0.0, float("inf"), float("nan"), 2.0)):
        torch.testing.assert_close((d / v).cpu(), x / v, rtol=0, atol=0, equal_nan=True)
        y, z = d.clone(), x.clone()
        y.addcdiv_(d, d.abs() + 1.0, value=-v)
        torch.testing.assert_close(y.cpu(), z.addcdiv(x, x.abs() + 1.0, value=-v), rtol=0, atol=0, equal_nan=True)
        if i == 0:
            traces, compiles = len(count_traces), runtime.driver().cache_stats.compiles
    assert len(count_traces) == traces and runtime.driver().cache_stats.compiles == compiles


def test_foreach_step_sizes_reuse_the_trace(tpu, count_traces):
    params = [torch.randn(5, 3), torch.randn(4)]
    dev = [p.to("tpu") for p in params]
    for step in range(1, 7):
        values = [-1e-3 / (1 - 0.9 ** step), -2e-3 / (1 - 0.9 ** step)]  # Adam's step sizes: new every step
        torch._foreach_addcdiv_(params, params, [p.abs() + 1 for p in params], values)
        torch._foreach_addcdiv_(dev, dev, [p.abs() + 1 for p in dev], values)
        for p, d in zip(params, dev):
            torch.testing.assert_close(d.cpu(), p, rtol=0, atol=0)
        if step == 1:
            traces = len(count_traces)
    assert len(count_traces) == traces


def test_cpu_scalar_tensor_is_an_input(tpu, count_traces):
    x = torch.randn(6)
    d = x.to("tpu")
    for i, v in enumerate((0.3, 0.7, -1.5)):
        s = torch.tensor(v)
        torch.testing.assert_close((d * s).cpu(), x * s, rtol=0, atol=0)
        if i == 0:
            traces = len(count_traces)
    assert len(count_traces) == traces


def test_static_arguments_are_keyed_by_value(tpu, count_traces):
    x = torch.rand(6) + 0.5
    d = x.to("tpu")
    for e in (2.0, 0.5, -0.5, 1.0, 2.3, 2.0):
        torch.testing.assert_close(torch.pow(d, e).cpu(), torch.pow(x, e), rtol=2e-7, atol=0)
    assert len([f for f in count_traces if f.__name__ == "pow_"]) == 5  # pow declares its exponent static


def _record(lowering, static=()):
    return dataclasses.replace(TABLE[aten.mul.Tensor], fn=lowering, prepare=None, random=False,
                               static=frozenset(static), name="test::scaled")


def test_reading_an_undeclared_float_fails_closed(tpu):
    record = _record(lambda x, other: x * 2 if other == 1 else x * other)
    d = torch.randn(4).to("tpu")
    with pytest.raises(StaticRead, match="argument 'other' of test::scaled.*static"):
        registry.apply(record, (d, 1.5), {})
    fixed = _record(record.fn, static=("other",))
    for v in (1.0, 1.5):
        torch.testing.assert_close(registry.apply(fixed, (d, v), {}).cpu(), d.cpu() * (2 if v == 1 else v))


def test_an_undeclared_read_is_retraced_by_value_for_users(tpu, monkeypatch):
    monkeypatch.setattr(eager, "STRICT", False)
    monkeypatch.setattr(eager, "undeclared_reads", {})
    record = _record(lambda x, other: x * 2 if other == 1 else x * other)
    d = torch.randn(4).to("tpu")
    for v in (1.5, 1.0, 1.5, 3.0, 1.0):
        got = registry.apply(record, (d, v), {}).cpu()
        assert got.numpy().tobytes() == (d.cpu() * (2 if v == 1 else v)).numpy().tobytes()
    assert "argument 'other'" in eager.undeclared_reads["test::scaled"]


def test_host_arithmetic_on_a_float_matches_the_baked_constant(tpu, count_traces):
    def lowering(x, other):
        return x * ((1.0 - other) / other) + other ** 2

    x = torch.randn(16)
    d = x.to("tpu")
    inputs, baked = _record(lowering), _record(lowering, static=("other",))
    for v in (0.3, 0.9, 1e-3):
        got = registry.apply(inputs, (d, v), {}).cpu()
        assert got.numpy().tobytes() == registry.apply(baked, (d, v), {}).cpu().numpy().tobytes()
    assert len([f for f in count_traces if f is lowering]) == 1 + 3


def test_repeated_scalars_share_one_input_per_source(tpu):
    xs = [torch.randn(3, 2).to("tpu") for _ in range(3)]
    cpu = [x.cpu() for x in xs]
    for values in ([0.3, 0.3, 0.3], [0.3, 0.7, -0.1]):
        for g, c, v in zip(torch._foreach_div(xs, values), cpu, values):
            torch.testing.assert_close(g.cpu(), c / v, rtol=0, atol=0)
    torch._foreach_mul(xs, 0.45)
    key = eager.signature("aten._foreach_mul.Scalar", (xs, 0.3), {}, (), [],
                          TABLE[aten._foreach_mul.Scalar].static_spec)[0]
    assert len(eager._cache[key].bindings) == 1
    key = eager.signature("aten._foreach_div.ScalarList", (xs, [0.3, 0.7, -0.1]), {}, (), [],
                          TABLE[aten._foreach_div.ScalarList].static_spec)[0]
    assert len(eager._cache[key].bindings) == 3


@pytest.mark.usefixtures("launch_cache_live")
def test_cached_launch_fills_floats_from_the_call(tpu):
    x = torch.randn(8)
    d = x.to("tpu")
    d * 0.5
    before = fast_launch.counters()["hits"]
    for v in (0.3, 0.7, -4.25):
        torch.testing.assert_close((d * v).cpu(), x * v, rtol=0, atol=0)
    if fast_launch._active:
        assert fast_launch.counters()["hits"] >= before + 3


def _adamw_programs(steps: int) -> list[tuple[int, int, int]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))  # a new lr every step too
    x, y = torch.randn(32, 8).to("tpu"), torch.randn(32, 4).to("tpu")
    sizes = []
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(steps):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            sched.step()
            loss.item()
            sizes.append((len(eager._cache), len(deferred._replays), runtime.driver().cache_stats.compiles))
    return sizes


def test_adamw_in_defer_and_fuse_makes_a_bounded_number_of_programs(tpu):
    sizes = _adamw_programs(50)
    assert sizes[-1] == sizes[9], f"the caches grew after step 10: {sizes[9]} -> {sizes[-1]}"


@pytest.mark.parametrize("call", [
    lambda d, v: torch.nn.functional.elu(d, alpha=v),
    lambda d, v: torch.nn.functional.softplus(d, beta=v + 1.0),
    lambda d, v: torch.lerp(d, d * 2, v),
])
def test_every_float_argument_is_an_input_not_a_marked_few(tpu, count_traces, call):
    x = torch.randn(12)
    d = x.to("tpu")
    for i, v in enumerate((0.3, 0.7, 1.9)):
        torch.testing.assert_close(call(d, v).cpu(), call(x, v), rtol=1e-6, atol=1e-6)
        if i == 0:
            traces = len(count_traces)
    assert len(count_traces) == traces, "a new float value traced the lowering again"


@pytest.mark.parametrize("call", [
    lambda d, v: torch.add(d, d, alpha=v),
    lambda d, v: torch.sub(d, 3, alpha=v),
    lambda d, v: d.clone().fill_(v),
    lambda d, v: torch.clamp(d, min=-v, max=v),
    lambda d, v: d.masked_fill(d > 0, v),
    lambda d, v: torch.addcmul(d, d, d, value=v),
    lambda d, v: d.clone().index_fill_(0, torch.tensor([1, 3]).to(d.device), v),
])
def test_int_values_of_scalar_arguments_are_inputs(tpu, count_traces, call):
    x = torch.arange(-6, 6, dtype=torch.int64)
    d = x.to("tpu")
    for i, v in enumerate((2, 5, 0, -7, 2 ** 40 + 1)):  # (a schema default, alpha=1, is as if left out)
        assert call(d, v).cpu().tolist() == call(x, v).tolist()
        if i == 0:
            traces = len(count_traces)
    assert len(count_traces) == traces, "a new int value traced the lowering again"


def test_int_scalars_stay_exact_beyond_float_precision(tpu):
    d, z = torch.zeros(3, dtype=torch.int64, device="tpu"), torch.zeros(3, dtype=torch.int64, device="tpu")
    for v in (2 ** 62 + 1, 2 ** 62 + 3, -(2 ** 63) + 1, 2 ** 53 + 1):  # the later calls launch from the cache
        assert d.fill_(v).cpu().tolist() == [v] * 3
        assert torch.add(z, torch.ones_like(z), alpha=v).cpu().tolist() == [v] * 3


def test_complex_and_float_values_promote_weakly_by_their_class(tpu, count_traces):
    x = torch.randn(4, dtype=torch.complex64)
    d = x.to("tpu")
    for i, v in enumerate((1 + 2j, -0.5j, 3 + 0j)):
        torch.testing.assert_close(torch.add(d, d, alpha=v).cpu(), torch.add(x, x, alpha=v), rtol=0, atol=0)
        if i == 0:
            traces = len(count_traces)
    assert len(count_traces) == traces
    i32 = torch.arange(4, dtype=torch.int32)
    for v in (2, 2.5):  # an int keeps int32, a float promotes to the default float dtype, as in PyTorch
        got = torch.clamp(i32.to("tpu"), max=v)
        assert got.dtype == torch.clamp(i32, max=v).dtype and got.cpu().tolist() == torch.clamp(i32, max=v).tolist()


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "DEFER_AND_FUSE"])
@pytest.mark.parametrize("call", [
    lambda d, v: d.fill_(v),
    lambda d, v: torch.add(d, d, alpha=v),
    lambda d, v: d.masked_fill_(d == 0, v),
])
def test_an_overflowing_int_raises_at_every_call_with_its_value(tpu, mode, call):
    d = torch.zeros(4, dtype=torch.int8, device="tpu")
    with torch.tpu.eager_mode(mode):
        call(d, 100)
        call(d, 100)  # from the launch cache where it serves the call
        with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
            call(d, 200)
        call(d, -100)
        with pytest.raises(RuntimeError, match="without overflow"):
            call(d, -129)
        torch.tpu.synchronize()


@pytest.mark.usefixtures("launch_cache_live")
def test_an_overflow_check_runs_on_cached_launches(tpu):
    d = torch.zeros(4, dtype=torch.int8, device="tpu")
    d.fill_(100)
    before = fast_launch.counters()["hits"]
    d.fill_(101)
    if fast_launch._active:
        assert fast_launch.counters()["hits"] == before + 1
    with pytest.raises(RuntimeError, match="without overflow"):
        d.fill_(200)
    assert d.cpu().tolist() == [101] * 4


@pytest.mark.parametrize("x, values", [
    (torch.arange(-6, 6), (2, 3, -7, 2 ** 40 + 1)),  # `x + 2`: add.Tensor gets a wrapped int
    (torch.arange(250, 256, dtype=torch.uint8), (300, 2, -1, 7)),  # wraps as on CPU
    (torch.arange(-6, 6, dtype=torch.int32), (2.5, -1.5)),  # promotes to the default float dtype
    (torch.randn(7), (0.5, 0.25, -3.0)),
    (torch.randn(4, dtype=torch.complex64), (1 + 2j, -0.5j)),
])
def test_a_python_number_in_a_tensor_position_is_an_input(tpu, count_traces, x, values):
    d = x.to("tpu")
    for i, v in enumerate(values):
        for call in (lambda a, v=v: a + v, lambda a, v=v: a * v,  # and a 0-dim CPU int tensor, or a - v
                     lambda a, v=v: torch.tensor(v) * a if isinstance(v, int) else a - v):
            got, want = call(d).cpu(), call(x)
            assert got.dtype == want.dtype
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        if i == 0:
            traces = len(count_traces)
    assert len(count_traces) == traces, "a new value of a wrapped number traced the lowering again"
