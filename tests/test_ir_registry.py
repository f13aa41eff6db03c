"""The IR op registry fails closed: every IR op x every driver has an implementation (a sim kernel, a pjrt
emitter) or an explicit, reasoned "unsupported" entry, and every op's record has a cost rule and a padding rule
that run on the op's differential cases. No frozen op list, no expected failures: a new op without one of these
fails here.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from torchtpu.drivers import ir
from torchtpu.drivers.ir import IMPLS, OPS, UNSUPPORTED, Builder
from torchtpu.drivers.ir_ops import SPECIAL_BINARY, SPECIAL_UNARY
from torchtpu.drivers.pjrt import emit  # noqa: F401  (registers every emitter; imports no jax)
from torchtpu.drivers.sim import kernels_data  # noqa: F401  (registers every kernel)
from torchtpu.sim.cost import CostModel, CostRecord

sys.path.insert(0, str(Path(__file__).resolve().parent / "pjrt"))
from pjrt_cases import CASES, STATISTICAL  # noqa: E402

DRIVERS = ("sim", "pjrt")
PAIRS = [(d, name) for d in DRIVERS for name in sorted(OPS)]
LOWERED = sorted(name for name, op in OPS.items() if op.lowering is not None)
PRIMITIVE = sorted(name for name, op in OPS.items() if op.lowering is None)


def test_the_drivers_register_into_the_registry():
    assert sorted(IMPLS) == sorted(DRIVERS)
    assert len(PRIMITIVE) > 80  # the op set itself was read


@pytest.mark.parametrize("driver,name", PAIRS, ids=[f"{d}-{n}" for d, n in PAIRS])
def test_every_op_is_implemented_or_declined_with_a_reason(driver: str, name: str):
    implemented = name in IMPLS[driver]
    declined = UNSUPPORTED[driver].get(name)
    lowered = OPS[name].lowering is not None
    assert implemented + (declined is not None) + lowered == 1, (
        f"IR op {name!r} on the {driver} driver: register a kernel/emitter (ir.implements), declare it "
        f"unsupported with a reason (ir.unsupported) or give it a lowering (drivers/ir_lowerings.py), one only")
    assert declined is None or len(declined) > 10


@pytest.mark.parametrize("driver", DRIVERS)
def test_no_implementation_of_an_unknown_op(driver: str):
    assert sorted((set(IMPLS[driver]) | set(UNSUPPORTED[driver])) - set(OPS)) == []


def test_every_op_the_pjrt_driver_emits_has_a_differential_case():
    """tests/pjrt/test_parity_ops.py runs each case on both drivers; a missing case fails here."""
    need = set(IMPLS["pjrt"]) & set(IMPLS["sim"])
    assert sorted(need - set(CASES) - set(STATISTICAL)) == []


@pytest.mark.parametrize("function", SPECIAL_UNARY)
def test_every_special_unary_function_is_one_lowering_to_ops_both_drivers_run(function: str):
    """Written once (drivers/ir_lowerings_*.py): expands to primitives that the sim and pjrt both implement."""
    _expands_to_implemented("special_unary", function, 1)


@pytest.mark.parametrize("function", SPECIAL_BINARY)
def test_every_special_binary_function_is_one_lowering_to_ops_both_drivers_run(function: str):
    _expands_to_implemented("special_binary", function, 2)


def _expands_to_implemented(op: str, function: str, arity: int) -> None:
    for dtype in ("float32", "float64", "bfloat16"):
        b = Builder()
        vals = [b.input((3,), dtype) for _ in range(arity)]
        program = b.finish(b.emit(op, vals, function=function))
        names = {o.name for o in program.ops}
        for o in program.ops:
            if o.name == "while":
                names |= {r.name for region in (o.attr("cond"), o.attr("body")) for r in region.program.ops}
        assert names and all(OPS[n].lowering is None and n in IMPLS["sim"] and n in IMPLS["pjrt"] for n in names)


def _case_ops() -> list[tuple[str, ir.Op]]:
    out = []
    for name in sorted(CASES):
        for case in CASES[name]:
            program, _ = case.program()
            out += [(name, op) for op in program.ops if op.name == name]
    return out


def test_every_op_has_a_case_to_run_its_rules_on():
    assert sorted(set(PRIMITIVE) - {name for name, _ in _case_ops()} - {"rng"}) == []
    assert sorted(set(LOWERED) - set(CASES)) == []


@pytest.mark.parametrize("name", LOWERED)
def test_a_lowering_expands_to_primitives_only(name: str):
    for case in CASES[name]:
        program, _ = case.program()
        assert program.ops and all(OPS[op.name].lowering is None for op in program.ops)
    with pytest.raises(ValueError, match="is a lowering"):
        ir.implements("sim", name)(lambda *a: a)
    assert OPS[name].cost is None and OPS[name].padding is None


@pytest.mark.parametrize("name", PRIMITIVE)
def test_every_op_has_a_cost_rule_that_prices_its_cases(name: str):
    model = CostModel()
    ops = [op for n, op in _CASE_OPS if n == name] or [_rng_op()]
    for op in ops:
        record = OPS[name].cost(model, op)
        assert isinstance(record, CostRecord) and math.isfinite(record.seconds) and record.seconds >= 0


@pytest.mark.parametrize("name", PRIMITIVE)
def test_every_op_has_a_padding_rule_that_answers_for_its_cases(name: str):
    """With axis 0 of every input padded, a rule returns tags on real output axes, or None (runs exactly), or
    those tags with masks on real input axes (`Padded`: a reduction or contraction along the padded axis)."""
    from torchtpu.drivers.ir_padding import FILLS, Padded

    ops = [op for n, op in _CASE_OPS if n == name and op.inputs] or [_rng_op()]
    for op in ops:
        tags = [{0: "s0"} if v.ndim else {} for v in op.inputs]
        out = OPS[name].padding(op, tags)
        if isinstance(out, Padded):
            assert all(fill in FILLS and all(0 <= a < op.inputs[k].ndim and a in tags[k] for a in axes)
                       for k, axes, fill in out.masks), (name, out)
            out = out.tags
        assert out is None or all(0 <= a < op.outputs[0].ndim for a in out), (name, out)


def _rng_op() -> ir.Op:
    b = Builder()
    state = b.input((2,), "int64")
    b.emit("rng", [state], shape=(4, 3), dtype="float32", distribution="uniform")
    return b.ops[0]


_CASE_OPS = _case_ops()


def test_padding_rules_fail_closed_where_positions_mix():
    b = Builder()
    x = b.input((8, 4), "float32")
    b.emit("reduce", [x], kind="sum", dimensions=(0,))
    b.emit("fft", [b.emit("complex", [x, x])[0]], fft_type="FFT", fft_length=(4,))
    reduce_op, _, fft_op = b.ops
    from torchtpu.drivers.ir_padding import Padded

    # a sum along the padded axis is exact once its padded positions hold zero (compile/padded.py masks them)
    assert OPS["reduce"].padding(reduce_op, [{0: "s0"}]) == Padded({}, ((0, (0,), "zero"),))
    assert OPS["reduce"].padding(reduce_op, [{1: "s0"}]) == {0: "s0"}
    assert OPS["fft"].padding(fft_op, [{0: "s0"}]) is None


def test_define_requires_every_rule():
    with pytest.raises(TypeError, match="needs a cost rule and a padding rule"):
        ir.define("probe_op", 1, "elementwise", cost=None, padding=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind 'fancy'"):
        ir.define("probe_op", 1, "fancy", cost=OPS["add"].cost, padding=OPS["add"].padding)
    with pytest.raises(ValueError, match="defined twice"):
        ir.define("add", 2, "elementwise", cost=OPS["add"].cost, padding=OPS["add"].padding)(lambda a, b: [a])


@pytest.mark.parametrize("driver", DRIVERS)
def test_registering_for_an_unknown_op_or_twice_is_an_error(driver: str):
    with pytest.raises(KeyError, match="unknown IR op 'no_such_op'.*drivers/ir_ops.py"):
        ir.implements(driver, "no_such_op")(lambda *a: a)
    with pytest.raises(ValueError, match="'add' registered twice"):
        ir.implements(driver, "add")(lambda *a: a)
    with pytest.raises(ValueError, match="'add' registered twice"):
        ir.unsupported(driver, "add", "a reason long enough")
    assert IMPLS[driver]["add"] is not None


@pytest.fixture
def probe_op():
    """A throwaway IR op, removed from the registry afterwards."""
    name = "probe_registry_op"
    ir.define(name, 1, "elementwise", cost=OPS["abs"].cost, padding=OPS["abs"].padding)(lambda x: [x])
    yield name
    OPS.pop(name)
    for table in (*IMPLS.values(), *UNSUPPORTED.values()):
        table.pop(name, None)


def test_a_new_op_without_a_kernel_is_seen(probe_op: str):
    missing = [(d, n) for d in DRIVERS for n in OPS
               if n not in IMPLS[d] and n not in UNSUPPORTED[d] and OPS[n].lowering is None]
    assert missing == [("sim", probe_op), ("pjrt", probe_op)]


def test_an_unsupported_op_fails_to_compile_with_its_reason(probe_op: str):
    with pytest.raises(ValueError, match="needs a reason"):
        ir.unsupported("pjrt", probe_op, "")
    ir.unsupported("pjrt", probe_op, "no StableHLO equivalent yet (probe)")
    b = Builder()
    x = b.input((3,), "float32")
    program = b.finish(b.emit(probe_op, [x]))
    with pytest.raises(NotImplementedError, match=r"pjrt driver does not support IR op 'probe_registry_op': "
                                                  r"no StableHLO equivalent yet \(probe\)"):
        emit.emit_module(program)
    from torchtpu.drivers.sim.driver import SimDriver

    with pytest.raises(NotImplementedError, match="probe_registry_op"):
        SimDriver().compile(program)
