"""ops/dtype_refusals.py: an op given a dtype that neither CPU nor CUDA computes it in raises CPU's class and
words on "tpu" in every eager mode and under torch.compile (sort/max/cummax/lt of complex numbers, floor of a
complex, fmod of bools, softmax of integers returned results before); the calls CPU computes in those dtypes are
not refused (cumsum of bools, mean of integers with a dtype, division of complex numbers); the table in the
package is what scripts/mine_dtype_refusals.py mines from torch's OpInfos today."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
import torch
from refusal_cases import exception_chain

from torchtpu.ops import dtype_refusals

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _c(d: str) -> torch.Tensor:
    return torch.tensor([[1 + 1j, 2 - 1j], [0.5j, -3 + 0j]], device=d)


def _i(d: str) -> torch.Tensor:
    return torch.tensor([[3, -1], [0, 7]], device=d)


def _b(d: str) -> torch.Tensor:
    return torch.tensor([[True, False], [True, True]], device=d)


REFUSED = {
    "max of complex": lambda d: torch.max(_c(d)),
    "max dim of complex": lambda d: torch.max(_c(d), 1),
    "amax of complex": lambda d: torch.amax(_c(d), 0),
    "argmax of complex": lambda d: torch.argmax(_c(d)),
    "sort of complex": lambda d: torch.sort(_c(d)),
    "topk of complex": lambda d: torch.topk(_c(d), 1),
    "cummax of complex": lambda d: torch.cummax(_c(d), 0),
    "kthvalue of complex": lambda d: torch.kthvalue(_c(d), 1),
    "median of complex": lambda d: torch.median(_c(d)),
    "lt of complex": lambda d: _c(d) < _c(d),
    "floor of complex": lambda d: torch.floor(_c(d)),
    "sign of complex": lambda d: torch.sign(_c(d)),
    "relu of complex": lambda d: torch.relu(_c(d)),
    "fmod of bools": lambda d: torch.fmod(_b(d), _b(d)),
    "remainder_ of bools": lambda d: _b(d).remainder_(_b(d)),
    "neg of bools": lambda d: -_b(d),
    "softmax of integers": lambda d: torch.softmax(_i(d), 0),
    "mean of integers": lambda d: _i(d).mean(),
    "var of integers": lambda d: _i(d).var(),
    "cumsum to bool": lambda d: torch.cumsum(_i(d), 0, dtype=torch.bool),
    "mm of bools": lambda d: _b(d) @ _b(d),
    "gelu of integers": lambda d: torch.nn.functional.gelu(_i(d)),
    "special_bessel_j0 of bfloat16": lambda d: torch.special.bessel_j0(_i(d).bfloat16()),
    "floor out= of complex": lambda d: torch.floor(_c(d), out=torch.empty(2, 2, dtype=torch.complex64, device=d)),
    "trunc division of complex": lambda d: torch.div(_c(d), _c(d) + 4, rounding_mode="trunc"),
    "floor division of bools": lambda d: torch.div(_b(d), _b(d), rounding_mode="floor"),
    "round to decimals of integers": lambda d: torch.round(_i(d), decimals=2),
    "scatter_reduce mean of bools": lambda d: _b(d).scatter_reduce(0, _i(d).abs() % 2, _b(d), "mean"),
    "abs_ of complex": lambda d: _c(d).abs_(),
    "foreach abs_ of complex": lambda d: torch._foreach_abs_([_c(d)]),
    # a foreach op takes its base op's refusals, per tensor of its lists
    "foreach floor of a bool after a float": lambda d: torch._foreach_floor([_i(d).float(), _b(d)]),
    "foreach floor_ of bools": lambda d: torch._foreach_floor_([_b(d)]),
    "foreach clamp_min of complex by a Scalar": lambda d: torch._foreach_clamp_min([_c(d)], 1.0),
    "foreach trunc out= of bools": lambda d: torch.ops.aten._foreach_trunc.out(
        [_b(d)], out=[torch.empty(0, dtype=torch.bool, device=d)]),
}
COMPUTED = {
    "cumsum of bools": lambda d: torch.cumsum(_b(d), 0),
    "mean of integers as float": lambda d: _i(d).mean(dtype=torch.float32),
    "division of complex": lambda d: _c(d) / (_c(d) + 4),
    "round of integers": lambda d: torch.round(_i(d)),
    "scatter_reduce sum of bools": lambda d: _b(d).scatter_reduce(0, _i(d).abs() % 2, _b(d), "sum"),
    "abs of complex": lambda d: _c(d).abs(),
    "max of integers": lambda d: torch.max(_i(d), 1).values,
    "sum of bools": lambda d: _b(d).sum(),
    "sort of floats": lambda d: torch.sort(_i(d).float()).values,
    "randn_like of an integer tensor as float": lambda d: torch.randn_like(_i(d), dtype=torch.float32).shape,
    "abs of complex, out of place": lambda d: torch.abs(_c(d)),
    "foreach sigmoid of bools": lambda d: torch._foreach_sigmoid([_b(d)])[0],
    "foreach pow of a float by bools": lambda d: torch._foreach_pow(2.0, [_b(d)])[0],
    "foreach floor of integers": lambda d: torch._foreach_floor([_i(d)])[0],
}


def _outcome(fn, device: str):  # noqa: ANN001, ANN202
    try:
        fn(device)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc).split("\n")[0]
    return None


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu_in_every_mode(tpu, name):
    fn = REFUSED[name]
    want = _outcome(fn, "cpu")
    assert want is not None, f"CPU computed {name}"
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = _outcome(lambda d: _sync(fn(d)), "tpu")
            assert got is not None and _same_refusal(got, want), (mode, got, want)


def _same_refusal(got: tuple, want: tuple) -> bool:
    """CPU's class, and its words; a kernel-named refusal ("softmax_lastdim_kernel_impl" not implemented for
    'Long') may name another of CPU's kernels for the op, chosen by the call's shape."""
    if got[0] is not want[0]:
        return False
    marker = "\" not implemented for "
    if marker in got[1] and marker in want[1]:
        return got[1].split(marker)[1] == want[1].split(marker)[1]
    return got[1] == want[1]


def _sync(result):  # noqa: ANN001, ANN202
    if isinstance(result, torch.Tensor):
        return result.cpu()
    if isinstance(result, tuple):
        return tuple(_sync(r) for r in result)
    return result


COMPILED = {
    "sort of complex": (_c, lambda x: torch.sort(x).values),
    "floor of complex": (_c, torch.floor),
    "fmod of bools": (_b, lambda x: torch.fmod(x, x)),
    "softmax of integers": (_i, lambda x: torch.softmax(x, 0)),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_refused_under_compile(tpu, name):
    make, fn = COMPILED[name]
    want = _outcome(lambda d: fn(make(d)), "cpu")
    torch._dynamo.reset()
    with pytest.raises(Exception) as raised:  # noqa: PT011 (dynamo wraps the backend's error)
        torch.compile(fn, backend="tpu")(make("tpu")).cpu()
    chain = [*exception_chain(raised.value), getattr(raised.value, "inner_exception", None)]  # Dynamo's fake run
    assert any(e is not None and _same_refusal((type(e), str(e).split("\n")[0]), want) for e in chain), \
        (raised.value, want)  # raises CPU's refusal too, deeper in the chain


@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_computed_where_cpu_computes(tpu, name):
    fn = COMPUTED[name]
    want = fn("cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = _sync(fn("tpu"))
        if isinstance(want, torch.Tensor):
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6) if name[:5] != "randn" else None
        else:
            assert got == want, mode


def test_table_names_real_ops_and_keys():
    raw = json.loads(dtype_refusals._TABLE_PATH.read_text())
    names = {str(t).removeprefix("torch.") for t in vars(torch).values() if isinstance(t, torch.dtype)}
    for op, keys in raw.items():
        packet = getattr(torch.ops.aten, op.split(".")[0])
        if "." in op:  # an overload of the op or of its in-place form (bernoulli_.float)
            inplace = getattr(torch.ops.aten, op.split(".")[0] + "_", None)
            assert op.split(".")[1] in packet.overloads() + (inplace.overloads() if inplace else []), op
        for key, (cls, words) in keys.items():
            dtype, *strings = key.split("|")
            assert dtype.removeprefix("dtype=") in names and all("=" in a for a in strings), (op, key)
            assert cls in dtype_refusals._CLASSES and words, (op, key)


def test_table_is_what_the_miner_finds_today():
    """A torch upgrade that changes CPU's refusals makes this fail: run scripts/mine_dtype_refusals.py again."""
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "scripts"))
    try:
        import mine_dtype_refusals
    finally:
        sys.path.pop(0)
    table = json.loads(dtype_refusals._TABLE_PATH.read_text())
    mined, _ = mine_dtype_refusals.mine(only=("sort", "max", "cumsum", "fmod", "softmax"))
    assert mined, "the miner found nothing"
    for op, keys in mined.items():
        assert table.get(op, {}) | keys == table.get(op, {}), op
