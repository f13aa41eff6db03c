"""drivers/sim/fast_index.py: the indexing steps return what the generic kernels return (values, dtype, shape and
memory layout) for valid, negative, duplicate and empty indices and strided operands, and raise the generic
kernels' errors for indices out of range."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim.fast import specialize
from torchtpu.drivers.sim.kernels import KERNELS, NP_DTYPES


def _op(name, in_types, **attrs):
    b = Builder()
    ins = [b.input(shape, dtype) for shape, dtype in in_types]
    return b.finish(b.emit(name, ins, **attrs)).ops[-1]


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("int64", "int32", "uint8"):
        return rng.integers(0, 100, size=shape).astype(NP_DTYPES[dtype])
    return (rng.standard_normal(shape) * 3).astype(NP_DTYPES[dtype])


def _same(op, args):
    fast = specialize(op)
    assert fast is not None, f"{op.name} has no fast path"
    want = KERNELS[op.name](op, list(args))[0]
    got = fast(*args)
    assert got.dtype == want.dtype and got.shape == want.shape and got.strides == want.strides
    assert got.tobytes() == want.tobytes()


def _errors(op, args):
    with pytest.raises(Exception) as want:
        KERNELS[op.name](op, list(args))
    with pytest.raises(type(want.value)) as got:
        specialize(op)(*args)
    assert str(got.value) == str(want.value)


def _index(shape, size, seed, dtype="int64"):
    return np.random.default_rng(seed).integers(-size, size, size=shape).astype(NP_DTYPES[dtype])


GATHERS = [((16, 128), (16, 1), 1), ((1, 64), (1, 64), 1), ((4, 5, 6), (4, 3, 6), 1), ((4, 5, 6), (2, 5, 6), 0),
           ((3, 4), (3, 7), 1), ((3, 4), (3, 0), 1), ((2, 3, 4), (2, 3, 4), 2)]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
@pytest.mark.parametrize("x_shape,index_shape,dim", GATHERS)
def test_gather_axis(x_shape, index_shape, dim, dtype):
    for index_dtype in ("int64", "int32"):
        op = _op("gather_axis", [(x_shape, dtype), (index_shape, index_dtype)], dimension=dim)
        x, index = _values(x_shape, dtype, 0), _index(index_shape, x_shape[dim], 1, index_dtype)
        _same(op, [x, index])


def test_gather_axis_strided_operands_and_errors():
    x = _values((6, 8), "float32", 0)[::2, 1:6]  # (3, 5), not contiguous
    index = np.ascontiguousarray(_index((5, 3), 5, 1).T)
    op = _op("gather_axis", [((3, 5), "float32"), ((3, 5), "int64")], dimension=1)
    _same(op, [x, index])
    _same(op, [x, _index((5, 3), 5, 2).T])  # an index that is not C-contiguous
    _same(op, [x.copy(), index])
    for bad in (5, -6, 99):
        wrong = index.copy()
        wrong[1, 2] = bad
        _errors(op, [x, wrong])
    empty = _op("gather_axis", [((3, 0), "float32"), ((3, 2), "int64")], dimension=1)
    _errors(empty, [np.zeros((3, 0), np.float32), np.zeros((3, 2), np.int64)])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
@pytest.mark.parametrize("x_shape,index_shape,dim", [((2, 32), (16,), 0), ((128, 32), (16,), 0), ((4, 5, 6), (3,), 1),
                                                     ((4, 5), (7,), 1), ((4, 5), (0,), 0), ((0, 5), (0,), 0)])
def test_index_select(x_shape, index_shape, dim, dtype):
    op = _op("index_select", [(x_shape, dtype), (index_shape, "int64")], dimension=dim)
    _same(op, [_values(x_shape, dtype, 0), _index(index_shape, max(x_shape[dim], 1), 1)
               if x_shape[dim] else np.zeros(index_shape, np.int64)])


def test_index_select_strided_operands_and_errors():
    op = _op("index_select", [((5, 4), "float32"), ((6,), "int32")], dimension=0)
    x = _values((4, 5), "float32", 0).T
    index = _index((12,), 5, 1, "int32")[::2]
    _same(op, [x, index])
    for bad in (5, -6):
        wrong = index.copy()
        wrong[3] = bad
        _errors(op, [x, wrong])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("x_shape,index_shape,dim", [((10, 1), (16, 1), 0), ((4, 6), (4, 3), 1), ((4, 6), (2, 6), 0),
                                                     ((4, 6), (0, 6), 0)])
def test_scatter_replace(x_shape, index_shape, dim, dtype):
    # duplicate indices: the last write wins in both
    op = _op("scatter_axis", [(x_shape, dtype), (index_shape, "int64"), (index_shape, dtype)], dimension=dim,
             reduce="replace")
    _same(op, [_values(x_shape, dtype, 0), _index(index_shape, x_shape[dim], 1), _values(index_shape, dtype, 2)])


def test_scatter_strided_operands_errors_and_generic_cases():
    op = _op("scatter_axis", [((4, 6), "float32"), ((4, 3), "int64"), ((4, 3), "float32")], dimension=1,
             reduce="replace")
    x, src = _values((6, 4), "float32", 0).T, _values((4, 6), "float32", 1)[:, ::2]
    index = _index((4, 3), 6, 2)
    _same(op, [x, index, src])
    _same(op, [x, np.asfortranarray(index), src])
    wrong = index.copy()
    wrong[0, 0] = 6
    _errors(op, [x, wrong, src])
    add = _op("scatter_axis", [((4, 6), "float32"), ((4, 3), "int64"), ((4, 3), "float32")], dimension=1, reduce="add")
    narrow = _op("scatter_axis", [((4, 6), "bfloat16"), ((4, 3), "int64"), ((4, 3), "bfloat16")], dimension=1,
                 reduce="replace")
    assert specialize(add) is None and specialize(narrow) is None


@pytest.mark.parametrize("shape,start,limit,strides", [((10, 1), (0, 0), (9, 1), (1, 1)),
                                                       ((6, 7), (1, 2), (6, 7), (2, 3)), ((4,), (2,), (2,), (1,))])
def test_slice(shape, start, limit, strides):
    op = _op("slice", [(shape, "float32")], start=start, limit=limit, strides=strides)
    _same(op, [_values(shape, "float32", 0)])
