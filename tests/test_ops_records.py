"""The ATen seam (ops/registry.py): one `Lowering` record per op, made by `define()` on every registration path
(a second definition is an error naming both sites), flags read from the record by the one `apply()`, one
kernel factory by schema kind, and adding an op is one decorator in one op file."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from torchtpu.execution import fast_launch
from torchtpu.ops import decompositions, registry
from torchtpu.ops.registry import TABLE, define, kernel, lower

aten = torch.ops.aten


@pytest.fixture(scope="module", autouse=True)
def registered():
    torch.empty(0, device="tpu")  # the first use registers the table
    import torchtpu.compile.backend  # noqa: F401 - the graph roles (views, graph forms)


def _fn(x):
    return x


def test_a_second_lowering_is_an_error_naming_both_sites():
    before = TABLE[aten.add.Tensor]
    with pytest.raises(ValueError, match=r"aten.add.Tensor is defined twice: at torchtpu.ops.elementwise:\d+ "
                                         r"\(lowering\) and at .*test_ops_records:\d+ \(lowering\)"):
        lower(aten.add.Tensor)(_fn)
    assert TABLE[aten.add.Tensor] is before  # a refused definition changes nothing


def test_a_host_kernel_for_a_lowered_op_is_an_error():
    with pytest.raises(ValueError, match=r"aten.mul.Tensor is defined twice: at torchtpu.ops.elementwise:\d+ "
                                         r"\(lowering\) and at .*test_ops_records:\d+ \(kernel\)"):
        kernel(aten.mul.Tensor, _fn)


def test_a_family_kernel_defined_twice_is_an_error():
    with pytest.raises(ValueError, match=r"aten.nonzero.default is defined twice: at torchtpu.ops.dynamic:\d+ "
                                         r"\(kernel\) and at .*test_ops_records:\d+ \(kernel\)"):
        kernel(aten.nonzero.default, _fn, data_dependent=True)


def test_a_second_graph_lowering_is_an_error():
    with pytest.raises(ValueError, match=r"aten.view.default has two graph lowerings: at torchtpu.compile.views:\d+ "
                                         r"and at .*test_ops_records:\d+"):
        lower(aten.view.default, graph_only=True)(_fn)


def test_a_second_kernel_on_another_dispatch_key_is_an_error():
    with pytest.raises(ValueError, match=r"aten._copy_from.default is defined twice for the Conjugate key: at "
                                         r"torchtpu.ops.complex:\d+ and at .*test_ops_records:\d+"):
        kernel(aten._copy_from.default, _fn, key="Conjugate")


def test_a_decomposition_of_an_op_with_a_record_is_an_error():
    with pytest.raises(ValueError, match=r"aten.full.default is defined twice: at torchtpu.ops.factory:\d+ "
                                         r"\(lowering\) and at here \(decomposition\)"):
        define(aten.full.default, "decomposition", _fn, site="here")


def test_accepted_decompositions_yield_only_to_lowerings():
    """An ACCEPTED packet's overload that has an eager record of its own keeps it: only traced lowerings (or
    their derived siblings) may take precedence over a listed decomposition, never a host kernel."""
    from torch._decomp import get_decompositions

    for op in get_decompositions(decompositions.ACCEPTED):
        record = TABLE.get(op)
        if record is None:  # CompositeImplicitAutograd overloads decompose by themselves
            assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"), op
            continue
        assert record.how in ("decomposition", "lowering", "inplace", "out"), (op, record.how)


def test_bad_definitions_name_what_is_valid():
    with pytest.raises(TypeError, match="OpOverload"):
        lower(aten.add)(_fn)  # a packet, not an overload
    with pytest.raises(ValueError, match="not one of"):
        define(aten.add.Tensor, "alias", _fn, site="here")


def test_every_registered_op_has_exactly_one_record():
    names = [r.qualified for r in TABLE.values()]
    assert len(names) == len(set(names))
    eager = [r for r in TABLE.values() if r.fn is not None]
    assert len(eager) > 1000
    for record in eager:
        assert record.site, record.op
        assert record.how in registry.HOWS
        assert torch._C._dispatch_has_kernel_for_dispatch_key(record.op.name(), "PrivateUse1"), record.op
    assert set(registry.registered()) == {r.qualified for r in eager}
    for record in TABLE.values():
        if record.fn is None:  # graph only: eager mode reaches the op through ATen's own kernel
            assert record.how == "graph" and record.graph is not None and record.graph_site, record.op


def test_a_view_keeps_its_eager_kernel_and_its_graph_lowering_in_one_record():
    record = TABLE[aten.unfold.default]
    assert record.how == "kernel" and record.site.startswith("torchtpu.ops.shape:")
    assert record.graph_site.startswith("torchtpu.compile.views:")


def test_fast_launch_kinds_follow_the_schema_kind_and_the_flags():
    kinds = {op: TABLE[op].fast_kind for op in (
        aten.add.Tensor, aten.add_.Tensor, aten.add.out, aten._foreach_add_.Scalar, aten._foreach_add.Scalar,
        aten.index.Tensor, aten.uniform_.default, aten.nonzero.default, aten._copy_from.default)}
    assert kinds == {
        aten.add.Tensor: fast_launch.FUNCTIONAL, aten.add_.Tensor: fast_launch.INPLACE, aten.add.out: fast_launch.OUT,
        aten._foreach_add_.Scalar: fast_launch.INPLACE_LIST, aten._foreach_add.Scalar: fast_launch.FUNCTIONAL_LIST,
        aten.index.Tensor: fast_launch.FUNCTIONAL,  # prepared: stores only calls its prepare left alone
        aten.uniform_.default: None,  # random state: never from the cache
        aten.nonzero.default: None,  # a host kernel
        aten._copy_from.default: fast_launch.COPY_FROM}
    assert TABLE[aten._copy_from.default].fast_name == "aten::copy_"


def test_derived_siblings_carry_the_flags_of_their_lowering():
    functional, inplace = TABLE[aten.index_put.default], TABLE[aten.index_put_.default]
    assert inplace.how == "inplace" and inplace.prepare is functional.prepare is not None
    assert TABLE[aten.pow.Tensor_Scalar_out].static == TABLE[aten.pow_.Scalar].static == frozenset({"exponent"})


def test_an_in_place_sibling_is_the_overload_taking_the_functionals_arguments(tpu):
    """pow_.Scalar(Tensor self, Scalar exponent) is pow.Tensor_Scalar's in-place form, not pow.Scalar's (Scalar self,
    Tensor exponent); polygamma_(self, n) is not polygamma(n, self)'s. Matched by name alone, integer pow_(-1)
    computed where CPU raises and polygamma_ failed inside its lowering."""
    assert TABLE[aten.pow_.Scalar].fn is TABLE[aten.pow.Tensor_Scalar].fn
    assert TABLE[aten.pow_.Scalar].static == frozenset({"exponent"})
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        torch.tensor([2, 3], device=tpu).pow_(-1)
    x = torch.rand(5) + 0.5
    for inplace in (lambda t: t.polygamma_(1), lambda t: t.pow_(2), lambda t: t.floor_divide_(torch.full_like(t, 0.3))):
        torch.testing.assert_close(inplace(x.clone().to(tpu)).cpu(), inplace(x.clone()), rtol=0, atol=0)


def test_an_out_sibling_by_name_takes_the_functionals_positional_arguments(tpu):
    """all.out(self, dim, keepdim, *, out) is all.dim's out= form, not all.default's (all.all_out is); max.out is
    maximum's. Matched by name alone, all.out called all.default's lowering with a dim and raised TypeError."""
    assert TABLE[aten.all.out].fn is TABLE[aten.all.dim].fn
    assert TABLE[aten.all.all_out].fn is TABLE[aten.all.default].fn
    # max.unary_out has a lowering of its own (an empty input's identity, where max.default refuses), so no sibling
    assert TABLE[aten.max.unary_out].fn is not TABLE[aten.max.default].fn
    assert aten.max.out not in TABLE or TABLE[aten.max.out].fn is not TABLE[aten.max.default].fn
    x = torch.tensor([[True, False, True], [True, True, True]])
    for call in (lambda o, t: aten.all.out(t, 1, False, out=o), lambda o, t: aten.any.out(t, 0, True, out=o),
                 lambda o, t: aten.all.all_out(t, out=o)):
        want, got = torch.empty(0, dtype=torch.bool), torch.empty(0, dtype=torch.bool, device=tpu)
        call(want, x)
        call(got, x.to(tpu))
        assert torch.equal(got.cpu(), want)


def test_boolean_mask_in_place_index_put_runs_prepare(tpu):
    """index_put_ is derived from index_put, whose prepare turns boolean masks into indices."""
    x = torch.arange(6.0)
    mask = torch.tensor([True, False, True, False, False, True])
    d = x.to("tpu")
    d.index_put_((mask.to("tpu"),), torch.tensor(-1.0).to("tpu"))
    torch.testing.assert_close(d.cpu(), x.index_put_((mask,), torch.tensor(-1.0)))


def test_apply_reads_prepare_and_random_from_the_record(tpu):
    """A record made here (not in TABLE): apply runs its prepare on the real arguments, then hands the lowering
    the RNG state, exactly as the flags say; the same lowering without the flags gets neither."""
    seen = {}

    def lowering(x, s, *, rng=None):
        seen["rng"] = None if rng is None else tuple(rng.shape)
        return x * s

    base = dataclasses.replace(TABLE[aten.mul.Tensor], fn=lowering, prepare=None, random=False, static=frozenset(),
                               name="test::scaled")
    x = torch.randn(5)
    d = x.to("tpu")
    torch.testing.assert_close(registry.apply(base, (d, 1.5), {}).cpu(), x * 1.5)
    assert seen["rng"] is None
    flagged = dataclasses.replace(base, prepare=lambda a, k: ((a[0], a[1] * 2), k), random=True,
                                  name="test::scaled_random")
    torch.testing.assert_close(registry.apply(flagged, (d, 1.5), {}).cpu(), x * 3.0)
    assert seen["rng"] == (2,)


# --- adding an op is one decorator in one op file -------------------------------------------------------------------

_SHIFT_OPS = {aten.bitwise_left_shift.Tensor: (aten.__lshift__.Tensor, aten.__lshift__.Scalar,
                                                aten.__ilshift__.Tensor, aten.__ilshift__.Scalar),
              aten.bitwise_right_shift.Tensor: (aten.__rshift__.Tensor, aten.__rshift__.Scalar,
                                                 aten.__irshift__.Tensor, aten.__irshift__.Scalar)}


def test_the_shift_operators_are_one_decorator_each_in_math_py():
    """`x << y`, `x >> y` (aten.__lshift__ / __ilshift__ / __rshift__ / __irshift__) fell back to CPU before one
    `@lower` line each in ops/math.py."""
    for lowered, ops in _SHIFT_OPS.items():
        for op in ops:
            record = TABLE[op]
            assert record.how == "lowering" and record.site.startswith("torchtpu.ops.math:"), (op, record)
            assert record.fn is TABLE[lowered].fn
    assert TABLE[aten.__ilshift__.Tensor].fast_kind == fast_launch.INPLACE


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
def test_shift_operators_match_cpu_without_falling_back(tpu, dtype):
    import torchtpu

    info = torch.iinfo(dtype)
    x = torch.tensor([1, 3, info.max, info.min, 0, 5, 7], dtype=dtype)
    y = torch.tensor([0, 2, 1, 1, 3, info.bits - 1, info.bits + 1], dtype=dtype)  # past the width: 0, as CPU
    torchtpu.reset_fallback_counts()
    dx, dy = x.to("tpu"), y.to("tpu")
    torch.testing.assert_close((dx << dy).cpu(), x << y, rtol=0, atol=0)
    torch.testing.assert_close((dx << 2).cpu(), x << 2, rtol=0, atol=0)
    inplace = dx.clone()
    inplace <<= dy
    torch.testing.assert_close(inplace.cpu(), x.clone().__ilshift__(y), rtol=0, atol=0)
    inplace <<= 1
    torch.testing.assert_close(inplace.cpu(), x.clone().__ilshift__(y).__ilshift__(1), rtol=0, atol=0)
    torch.testing.assert_close((dx >> dy).cpu(), x >> y, rtol=0, atol=0)
    torch.testing.assert_close((dx >> 2).cpu(), x >> 2, rtol=0, atol=0)
    inplace = dx.clone()
    inplace >>= dy
    torch.testing.assert_close(inplace.cpu(), x.clone().__irshift__(y), rtol=0, atol=0)
    assert not [name for name in torchtpu.fallback_counts() if "shift" in name]
