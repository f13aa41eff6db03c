"""Eager ops with a float scalar argument: a new value reuses the compiled executable (and, for lowerings marked
`float_inputs=True`, the trace), and the result is bit-identical to the constant-folded program."""

import numpy as np
import pytest
import torch

import torchtpu  # noqa: F401
from torchtpu import runtime
from torchtpu.execution import eager, float_inputs


def test_new_float_scalar_reuses_the_executable(tpu):
    x = torch.randn(5, 7).to("tpu")
    compiles = None
    for v in (1.25, 0.9, 0.99, 0.999, 3.0e-7, -2.5):
        got = (x / v).cpu()
        torch.testing.assert_close(got, x.cpu() / v, rtol=0, atol=0)
        y = x.clone()
        y.addcdiv_(x, x.abs() + 1.0, value=-v)
        torch.testing.assert_close(y.cpu(), x.cpu().addcdiv(x.cpu(), x.cpu().abs() + 1.0, value=-v))
        if compiles is None:
            compiles = runtime.driver().cache_stats.compiles
    assert runtime.driver().cache_stats.compiles == compiles  # later values: traced again, compiled never


def test_hoisted_program_matches_the_folded_one(tpu):
    x = torch.randn(4, 3).to("tpu")
    y = torch.randn(4, 3).to("tpu")
    key, tensors, _ = eager.signature("aten.add.Tensor", (x, y), {"alpha": 0.3}, (), [])
    torch.add(x, y, alpha=0.3)
    traced = eager._cache[key]
    assert traced.scalars and traced.launch is not traced.program
    drv = runtime.driver()
    ins = [runtime.buffer(t) for t in tensors]
    a = np.empty((4, 3), np.float32)
    b = np.empty((4, 3), np.float32)
    drv.execute(drv.compile(traced.program), ins, [a])
    drv.execute(drv.compile(traced.launch), ins + list(traced.scalars), [b])
    assert a.tobytes() == b.tobytes()


@pytest.fixture
def count_traces(monkeypatch):
    calls = []
    real = eager.trace

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(eager, "trace", counting)
    return calls


def test_new_float_value_reuses_the_trace(tpu, count_traces):
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
    assert len(count_traces) == traces  # the first value traced (and probed) once; later values hit


def test_special_values_stay_keyed_by_value(tpu, count_traces):
    x = torch.rand(6) + 0.5
    d = x.to("tpu")
    for e in (2.0, 0.5, -0.5, 1.0, 2.3, 3.7, 2.0):
        torch.testing.assert_close(torch.pow(d, e).cpu(), torch.pow(x, e), rtol=2e-7, atol=0)
    pow_traces = [f for f in count_traces if f.__name__ == "pow_"]
    assert len(pow_traces) == 4 + 2  # 2.0, 0.5, -0.5, 1.0 by value; 2.3 traced and probed; 3.7 and 2.0 hit


def _retrace(lowering, x):
    def retrace(args, kwargs):
        return eager.trace(lowering, [x], args, kwargs)[0]
    return retrace


@pytest.mark.parametrize("lowering,ok", [
    (lambda x, v, w: x * v + w, True),                       # each float is one hoisted constant
    (lambda x, v, w: x * (1.0 - v) + w, False),               # a constant derived from the value
    (lambda x, v, w: x + w if v < 0.5 else x * 2 + w, False),  # v shapes the program, never a constant
])
def test_template_learns_where_each_float_goes(tpu, lowering, ok):
    x = torch.randn(3).to("tpu")
    args = (x, 0.3, -2.7)
    program, _, _ = eager.trace(lowering, [x], args, {})
    launch, _, values = float_inputs.hoist(program)
    template = float_inputs.template(_retrace(lowering, x), args, {}, launch, values, [0.3, -2.7])
    assert (template is not None) == ok
    if ok:
        assert [e for e in template if isinstance(e, tuple)] == [(0, "float32"), (1, "float32")]


def test_an_op_whose_floats_shape_the_program_is_keyed_by_value(tpu):
    def lowering(x, v):
        return x * (1.0 - v)

    x = torch.randn(4)
    d = x.to("tpu")
    for v in (0.3, 0.7, 0.3):
        got = eager.run("test.one_minus", lowering, (d, v), {}, floats_as_inputs=True)
        torch.testing.assert_close(got.cpu(), x * (1.0 - v))
    generic_key = eager.signature("test.one_minus", (d, 0.9), {}, (), [])[0]
    assert eager._cache[generic_key] is eager._BY_VALUE


def test_deferred_mode_keys_floats_by_value(tpu):
    x = torch.randn(8)
    d = x.to("tpu")
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        outs = [(d * v).cpu() for v in (0.3, 0.7, 0.11)]
    for v, got in zip((0.3, 0.7, 0.11), outs):
        torch.testing.assert_close(got, x * v, rtol=0, atol=0)


def test_fill_takes_a_generic_value(tpu):
    x = torch.zeros(3).to("tpu")
    for v in (0.3, 0.77):
        torch.testing.assert_close(x.fill_(v).cpu(), torch.full((3,), v))


def test_repeated_constants_share_one_input_and_keep_their_sources(tpu):
    # a foreach op repeats its scalar once per tensor: one hoisted input per distinct source. A ScalarList whose
    # values happen to be equal must still take distinct values in a later call (one input per list element)
    xs = [torch.randn(3, 2).to("tpu") for _ in range(3)]
    cpu = [x.cpu() for x in xs]
    for values in ([0.3, 0.3, 0.3], [0.3, 0.7, -0.1]):
        got = torch._foreach_div(xs, values)
        for g, c, v in zip(got, cpu, values):
            torch.testing.assert_close(g.cpu(), c / v, rtol=0, atol=0)
    for v in (0.3, 0.45):
        got = torch._foreach_mul(xs, v)
        for g, c in zip(got, cpu):
            torch.testing.assert_close(g.cpu(), c * v, rtol=0, atol=0)
    key = eager.signature("aten._foreach_mul.Scalar", (xs, 0.3), {}, (), [])[0]
    traced = eager._cache[key]
    assert len(traced.launch.inputs) == len(xs) + 1 and len(traced.template) == 1
    key = eager.signature("aten._foreach_div.ScalarList", (xs, [0.3, 0.7, -0.1]), {}, (), [])[0]
    assert len(eager._cache[key].launch.inputs) == len(xs) + 3
