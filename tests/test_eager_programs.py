"""The eager program cache key: ops whose arguments compare equal in Python but trace different programs must
not share a cache entry (True == 1 == 1.0, 0.0 == -0.0, keyword names, a copy's target shape), and NaN scalars
must still hit."""

from __future__ import annotations

import math

import pytest
import torch

from torchtpu.execution import eager, modes
from torchtpu.ops.prims import const

aten = torch.ops.aten
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


@pytest.fixture(params=MODES)
def mode(request, tpu):
    with modes.eager_mode(request.param):
        yield request.param


def test_scalar_type_is_part_of_the_key(mode):
    x = torch.arange(4, device="tpu")  # int64
    as_int = aten.add.Scalar(x, 1)
    as_float = aten.add.Scalar(x, 1.0)
    as_bool = aten.add.Scalar(x, True)
    assert as_int.dtype == torch.int64 and as_bool.dtype == torch.int64
    assert as_float.dtype == torch.float32
    expected = aten.add.Scalar(torch.arange(4), 1.0)
    assert torch.equal(as_float.cpu(), expected)
    assert torch.equal(as_int.cpu(), torch.arange(4) + 1)


def test_bool_and_int_scalars_do_not_collide_in_either_order(mode):
    b = torch.tensor([True, False, True], device="tpu")
    first = aten.mul.Scalar(b, True)
    second = aten.mul.Scalar(b, 2)
    assert first.dtype == torch.bool and second.dtype == torch.int64
    assert second.cpu().tolist() == [2, 0, 2]


def test_signed_zero_is_part_of_the_key(mode):
    x = torch.empty(3, device="tpu")
    x.fill_(0.0)
    assert not torch.signbit(x.cpu()).any()
    x.fill_(-0.0)
    assert torch.signbit(x.cpu()).all()
    assert torch.signbit(torch.full((2,), -0.0, device="tpu").cpu()).all()


def test_keyword_names_are_part_of_the_key(mode):
    data = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    x = data.to("tpu")
    down = x.sort(stable=True, descending=True)  # kwargs (stable=True, descending=True)
    along = x.sort(stable=True, dim=1)  # kwargs (stable=True, dim=1): the same values as a tuple
    assert torch.equal(down.values.cpu(), data.sort(stable=True, descending=True).values)
    assert torch.equal(along.values.cpu(), data.sort(stable=True, dim=1).values)


def test_nan_scalar_hits_the_cache(tpu):
    x = torch.empty(4, device="tpu")
    x.fill_(float("nan"))
    size = len(eager._cache)
    for _ in range(3):
        x.fill_(float("nan"))  # a new float object each time: nan != nan, yet the program is the same
    assert len(eager._cache) == size
    assert x.cpu().isnan().all()


def test_run_keys_scalars_by_type_and_keyword_name(tpu):
    """eager.run directly: one op name, one lowering, arguments that compare equal."""
    seen = []

    def lowering(x, *, s):
        seen.append(type(s))
        return x + const(s, torch.float32 if isinstance(s, float) else torch.int64)

    x = torch.zeros(2, dtype=torch.int64, device="tpu")
    name = "test::keyed"
    r_int = eager.run(name, lowering, (x,), {"s": 1})
    r_float = eager.run(name, lowering, (x,), {"s": 1.0})
    r_bool = eager.run(name, lowering, (x,), {"s": True})
    eager.run(name, lowering, (x,), {"s": 1})  # a hit: traced three times in all
    # a float is a program input (without a static spec, ints stay by value)
    assert [t.__name__ for t in seen] == ["int", "FloatPlaceholder", "bool"]
    assert r_int.dtype == torch.int64 and r_float.dtype == torch.float32
    assert r_bool.cpu().tolist() == [1, 1]
    torch.tpu.synchronize()


@pytest.mark.parametrize("value", [0.0, -0.0, math.inf, -math.inf, 1, True, 2.5])
def test_key_helper_distinguishes_what_compares_equal(value):
    others = [v for v in (0.0, -0.0, 0, False, 1, 1.0, True, math.inf, -math.inf, 2.5) if v is not value
              and not (type(v) is type(value) and repr(v) == repr(value))]
    key = eager._scalar_key(value)
    assert all(eager._scalar_key(v) != key for v in others)
    assert eager._scalar_key(float("nan")) == eager._scalar_key(float("nan"))


@pytest.mark.parametrize("conj", [False, True])
def test_copy_target_shape_is_part_of_the_key(mode, conj):
    # copy_'s target is no argument of its program: one source shape broadcast into targets of other shapes (a
    # scripted `x[0:50] = 1.0`, then `r[...] = 9.9` on a 0-d r, hit the [50] program and raised)
    dtype = torch.complex64 if conj else torch.float32
    for src_shape in [(), (1,)]:
        src = torch.full(src_shape, 1.5 + (2j if conj else 0), dtype=dtype)
        for shape in [(50,), (3,), (2, 3), ()][:4 if src_shape == () else 3]:
            dst = torch.zeros(shape, dtype=dtype, device="tpu")
            dst.copy_(src.to("tpu").conj() if conj else src.to("tpu"))
            want = torch.zeros(shape, dtype=dtype).copy_(src.conj() if conj else src)
            assert torch.equal(dst.cpu(), want), (src_shape, shape)
