"""The two keys of one call agree: the C++ launch cache (csrc/fast_launch_key.cpp: build_key) serves a call from
another call's entry exactly when the Python key (execution/eager.py: signature) of both calls is the same.

The keys are walked twice (C++ for speed, Python for every other path), so this test is the rule that keeps
them one: over families of calls to one op that differ in one argument's kind or value (Python floats, ints,
bools and complex numbers; explicit and omitted defaults; wrapped numbers; 0-d CPU tensors of each dtype;
static arguments; strings; dtypes; shapes; lists), every ordered pair (A, B) is run with A's entry stored and
B's C++ lookup counted, then B's Python key is taken on the Python path. A hit whose Python keys differ would
serve B another call's program; a miss whose Python keys are equal is a launch the cache should have served.
Every B's result is compared with CPU's."""

from __future__ import annotations

import itertools

import pytest
import torch

from torchtpu.execution import eager, fast_launch

pytestmark = [pytest.mark.sim_only("the cache serves drivers whose memory is host memory (the sim)"),
              pytest.mark.usefixtures("launch_cache_live")]

_x = torch.tensor([[0.5, -1.25, 2.0], [3.5, -0.75, 0.125]])
_y = torch.tensor([[1.5, 0.25, -2.0], [0.5, 4.0, -0.5]])
_i = torch.tensor([[3, -7, 11], [2, 5, -1]])
_mask = torch.tensor([[True, False, True], [False, False, True]])
_TENSORS = {"x": _x, "y": _y, "i": _i, "mask": _mask, "xt": _x.t().contiguous(), "row": _y[0].clone(),
            "xb": _x.bfloat16(), **{f"w{k}": _x.clone() for k in range(1, 7)},
            # one shape, three layouts (the key holds non-default strides: they decide the output's layout)
            "x_cm": _x.t().contiguous().t(), "x_row": _x[:1].clone()}


def _on(device: torch.device) -> dict[str, torch.Tensor]:
    return {name: t.to(device) for name, t in _TENSORS.items()}


def _calls(t: dict[str, torch.Tensor]) -> dict[str, list]:
    """Families of one-op calls on tensors `t` (CPU or tpu), each a list of (label, thunk)."""
    x, y, i, mask, b = t["x"], t["y"], t["i"], t["mask"], t["mask"]
    xt, row, xb = t["xt"], t["row"], t["xb"]
    x_cm, x_row = t["x_cm"], t["x_row"]
    return {
        "add": [
            ("x+y", lambda: torch.add(x, y)), ("alpha=1", lambda: torch.add(x, y, alpha=1)),
            ("alpha=2", lambda: torch.add(x, y, alpha=2)), ("alpha=3", lambda: torch.add(x, y, alpha=3)),
            ("alpha=2.5", lambda: torch.add(x, y, alpha=2.5)), ("alpha=-0.0", lambda: torch.add(x, y, alpha=-0.0)),
            ("alpha=0.0", lambda: torch.add(x, y, alpha=0.0)),
        ],
        "add_number": [
            ("+2", lambda: x + 2), ("+3", lambda: x + 3), ("+2.0", lambda: x + 2.0), ("+0.5", lambda: x + 0.5),
            ("+True", lambda: x + True), ("+t(2)", lambda: x + torch.tensor(2)),
            ("+t(2,int8)", lambda: x + torch.tensor(2, dtype=torch.int8)),
            ("+t(2.5)", lambda: x + torch.tensor(2.5)),
            ("+t(2.5,f64)", lambda: x + torch.tensor(2.5, dtype=torch.float64)),
            ("+t(True)", lambda: x + torch.tensor(True)), ("+t(False)", lambda: x + torch.tensor(False)),
            ("+(2+1j)", lambda: x + (2 + 1j)), ("+(0.5-3j)", lambda: x + (0.5 - 3j)),
        ],
        "bool_add": [
            ("True", lambda: torch.add(b, True)), ("False", lambda: torch.add(b, False)),
            ("1", lambda: torch.add(b, 1)), ("2", lambda: torch.add(b, 2)),
        ],
        "layout": [
            ("x", lambda: torch.neg(x)), ("x column-major", lambda: torch.neg(x_cm)),
            ("x+x column-major", lambda: x_cm + x_cm), ("x+x", lambda: x + x), ("x+x mixed", lambda: x + x_cm),
            ("row", lambda: torch.neg(x_row)), ("row of column-major", lambda: torch.neg(x_cm[:1])),
            ("column view (contiguous, not default strides)", lambda: torch.neg(x[:, :1])),
        ],
        "int_add": [
            ("i+2", lambda: i + 2), ("i+2**40", lambda: i + 2 ** 40), ("i+2.5", lambda: i + 2.5),
            ("i+t(2,int32)", lambda: i + torch.tensor(2, dtype=torch.int32)),
            ("i+t(9,uint8)", lambda: i + torch.tensor(9, dtype=torch.uint8)),
            ("i.add(i,alpha=3)", lambda: i.add(i, alpha=3)), ("i.add(i,alpha=4)", lambda: i.add(i, alpha=4)),
        ],
        "clamp": [
            ("min,max floats", lambda: torch.clamp(x, min=-0.5, max=0.25)),
            ("min,max other floats", lambda: torch.clamp(x, min=-1.0, max=1.5)),
            ("min int", lambda: torch.clamp(x, min=1)), ("min other int", lambda: torch.clamp(x, min=0)),
            ("max only", lambda: torch.clamp(x, max=0.5)), ("min only", lambda: torch.clamp(x, min=0.5)),
        ],
        "masked_fill": [
            ("2.0", lambda: x.masked_fill(mask, 2.0)), ("-3.5", lambda: x.masked_fill(mask, -3.5)),
            ("3", lambda: x.masked_fill(mask, 3)), ("t(1.5)", lambda: x.masked_fill(mask, torch.tensor(1.5))),
        ],
        "leaky_relu": [
            ("omitted", lambda: torch.nn.functional.leaky_relu(x)),
            ("0.01", lambda: torch.nn.functional.leaky_relu(x, 0.01)),
            ("0.2", lambda: torch.nn.functional.leaky_relu(x, 0.2)),
            ("0.3", lambda: torch.nn.functional.leaky_relu(x, 0.3)),
        ],
        "hardtanh": [  # static arguments: by value
            ("-1,1", lambda: torch.nn.functional.hardtanh(x)),
            ("-0.5,0.5", lambda: torch.nn.functional.hardtanh(x, -0.5, 0.5)),
            ("-2,2", lambda: torch.nn.functional.hardtanh(x, -2.0, 2.0)),
        ],
        "pow": [  # the exponent is static
            ("^2", lambda: torch.pow(x, 2)), ("^2.0", lambda: torch.pow(x, 2.0)), ("^3", lambda: torch.pow(x, 3)),
        ],
        "addcmul": [
            ("value omitted", lambda: torch.addcmul(x, y, x)),
            ("value=0.5", lambda: torch.addcmul(x, y, x, value=0.5)),
            ("value=0.25", lambda: torch.addcmul(x, y, x, value=0.25)),
            ("value=2", lambda: torch.addcmul(x, y, x, value=2)),
        ],
        "lerp": [
            ("0.3", lambda: torch.lerp(x, y, 0.3)), ("0.6", lambda: torch.lerp(x, y, 0.6)),
            ("tensor", lambda: torch.lerp(x, y, y)),
        ],
        "sum": [
            ("all", lambda: x.sum()), ("dim=0", lambda: x.sum(dim=0)), ("dim=1", lambda: x.sum(dim=1)),
            ("dim=[0,1]", lambda: x.sum(dim=[0, 1])), ("dim=0 keepdim", lambda: x.sum(dim=0, keepdim=True)),
            ("f64", lambda: x.sum(dtype=torch.float64)),
        ],
        "gelu": [
            ("none", lambda: torch.nn.functional.gelu(x)),
            ("none explicit", lambda: torch.nn.functional.gelu(x, approximate="none")),
            ("tanh", lambda: torch.nn.functional.gelu(x, approximate="tanh")),
        ],
        "mul_shapes": [
            ("2x3", lambda: x * y), ("3x2", lambda: xt * xt), ("row", lambda: x * row),
            ("bf16", lambda: xb * 1.5), ("bf16 other", lambda: xb * 2.5), ("f32", lambda: x * 1.5),
        ],
        "inplace": [  # idempotent writes, so repeating a call leaves what one call leaves
            ("fill_ 2.0", lambda: t["w1"].fill_(2.0)), ("fill_ 2.5", lambda: t["w2"].fill_(2.5)),
            ("fill_ 3", lambda: t["w3"].fill_(3)), ("clamp_ 0.5", lambda: t["w4"].clamp_(min=0.5)),
            ("clamp_ 1.0", lambda: t["w5"].clamp_(min=1.0)), ("masked_fill_ 2", lambda: t["w6"].masked_fill_(mask, 2)),
        ],
        "div": [
            ("div floor", lambda: torch.div(x, y, rounding_mode="floor")),
            ("div trunc", lambda: torch.div(x, y, rounding_mode="trunc")), ("div", lambda: torch.div(x, y)),
        ],
        "host_tensors": [
            ("t(2,int16)", lambda: x * torch.tensor(2, dtype=torch.int16)),
            ("t(3,int16)", lambda: x * torch.tensor(3, dtype=torch.int16)),
            ("t(2+1j)", lambda: x * torch.tensor(2 + 1j)), ("t(1-1j)", lambda: x * torch.tensor(1 - 1j)),
            ("t(0.5,f16)", lambda: x * torch.tensor(0.5, dtype=torch.float16)),
            ("t(0.5,bf16)", lambda: x * torch.tensor(0.5, dtype=torch.bfloat16)),
        ],
        "foreach_mul": [
            ("list 2.0,3.0", lambda: torch._foreach_mul([x, y], [2.0, 3.0])),
            ("list 0.5,0.25", lambda: torch._foreach_mul([x, y], [0.5, 0.25])),
            ("list 2,3", lambda: torch._foreach_mul([x, y], [2, 3])),
            ("scalar 2.0", lambda: torch._foreach_mul([x, y], 2.0)),
        ],
    }


class _Keys:
    """The Python keys `eager.signature` makes while it is installed."""

    def __init__(self) -> None:
        self.keys: list[tuple] = []
        self._signature = eager.signature

    def __enter__(self) -> _Keys:
        def recording(*args, **kwargs):
            key, tensors, device = self._signature(*args, **kwargs)
            self.keys.append(key)
            return key, tensors, device

        eager.signature = recording
        return self

    def __exit__(self, *_: object) -> None:
        eager.signature = self._signature


def _python_key(thunk) -> tuple:
    fast_launch.clear()
    with _Keys() as seen:
        thunk()
    assert len(seen.keys) == 1, f"not one op: {seen.keys}"
    return seen.keys[0]


def _served(first, second) -> bool:
    """Whether `second` is launched from the entry `first` stored (a fresh cache holding only that one)."""
    fast_launch.clear()
    first()
    before = fast_launch.counters()
    second()
    after = fast_launch.counters()
    assert after["hits"] + after["misses"] - before["hits"] - before["misses"] == 1, "not one C++-keyed op"
    return after["hits"] > before["hits"]


def _same(got, want) -> None:
    got = got if isinstance(got, list | tuple) else [got]
    want = want if isinstance(want, list | tuple) else [want]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride()
        torch.testing.assert_close(g.cpu(), w, rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("family", sorted(_calls(_TENSORS)))
def test_the_launch_cache_serves_a_call_exactly_when_the_python_keys_agree(tpu, family):
    cpu, dev = _calls(_TENSORS)[family], _calls(_on(tpu))[family]
    keys = [_python_key(thunk) for _, thunk in dev]
    disagree = []
    for (a, (label_a, first)), (b, (label_b, second)) in itertools.product(enumerate(dev), repeat=2):
        if a == b:
            continue
        served = _served(first, second)
        if served != (keys[a] == keys[b]):
            disagree.append(f"{label_a} -> {label_b}: C++ {'hit' if served else 'miss'}, Python keys "
                            f"{'equal' if keys[a] == keys[b] else 'differ'}")
        _same(second(), cpu[b][1]())  # served from the cache when it hits
    assert not disagree, "\n".join(disagree)
    assert len(set(keys)) > 1  # the family does vary the key


def test_calls_the_keys_must_tell_apart_are_told_apart(tpu):
    """The families hold pairs whose programs differ (a bool and an int, 0.0 and -0.0 as a static value, an int
    and a float alpha), so a key that merged them would fail the test above: here they are shown to differ."""
    dev = _calls(_on(tpu))
    labels = {family: {label: _python_key(thunk) for label, thunk in calls} for family, calls in dev.items()}
    assert labels["add"]["alpha=2"] == labels["add"]["alpha=3"]  # an int alpha is an input
    assert labels["add"]["alpha=2"] != labels["add"]["alpha=2.5"]  # ... and a float one another
    assert labels["bool_add"]["True"] != labels["bool_add"]["1"]
    assert labels["add_number"]["+2"] == labels["add_number"]["+3"]
    assert labels["add_number"]["+t(True)"] != labels["add_number"]["+t(False)"]  # a bool by value
    assert labels["hardtanh"]["-0.5,0.5"] != labels["hardtanh"]["-2,2"]  # static: by value
    assert labels["pow"]["^2"] != labels["pow"]["^3"]
