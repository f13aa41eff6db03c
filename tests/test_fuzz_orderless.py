"""The fuzzer's comparison where CPU leaves the order or the labels unspecified (fuzz/orderless.py): topk with
sorted=False, unique's inverse indices into NaN entries, and index ties of integer inputs (conformance's
ties_only on the CPU copies the fuzzer compares). Each found a false mismatch on seeds 7-8; a wrong result must
still be one."""

from __future__ import annotations

import torch

import torchtpu  # noqa: F401
from torchtpu.fuzz.args import make_call
from torchtpu.fuzz.outcome import Outcome, classify, run_cpu, run_tpu
from torchtpu.fuzz.overloads import registered
from torchtpu.fuzz.runner import call_rng


def _call(name: str, seed: int, index: int):  # noqa: ANN202 - a fuzz Call
    op = {str(o): o for o in registered()}[name]
    return make_call(op, call_rng(seed, name, index), seed)


def _both(name: str, seed: int, index: int):  # noqa: ANN202 - (call, cpu outcome, tpu outcome)
    call = _call(name, seed, index)
    return call, run_cpu(call), run_tpu(call, "DEFER_NEVER", 60)


def _altered(outcome: Outcome, leaf: int, change) -> Outcome:  # noqa: ANN001
    leaves = list(outcome.leaves)
    leaves[leaf] = change(leaves[leaf].clone())
    return Outcome(leaves=leaves, args_after=outcome.args_after)


def test_topk_unsorted_any_order() -> None:
    call, cpu, tpu = _both("aten.topk.default", 8, 0)  # int64[1, 4], k=4, sorted=False
    assert not torch.equal(cpu.leaves[0], tpu.leaves[0])  # CPU's order is its partial sort's, not ours
    assert classify(call, cpu, tpu).cls == "ok"


def test_topk_unsorted_wrong_element_still_a_mismatch() -> None:
    call, cpu, tpu = _both("aten.topk.default", 8, 0)

    def wrong(v: torch.Tensor) -> torch.Tensor:
        v.view(-1)[0] += 1
        return v
    assert classify(call, cpu, _altered(tpu, 0, wrong)).cls == "value"


def test_topk_out_with_ties_of_an_integer_input() -> None:
    call, cpu, tpu = _both("aten.topk.values", 8, 1)  # int64[3, 2, 4] with equal values 7, 7 in a row
    assert classify(call, cpu, tpu).cls == "ok"

    def other_element(i: torch.Tensor) -> torch.Tensor:  # an index of a different value: no tie
        i.view(-1)[0] = (i.view(-1)[0] + 1) % 4
        return i
    assert classify(call, cpu, _altered(tpu, 1, other_element)).cls == "value"


def test_unique_inverse_into_nans() -> None:
    call, cpu, tpu = _both("aten._unique.default", 7, 2)  # float16 input with two NaNs
    assert classify(call, cpu, tpu).cls == "ok"
    nan_rows = cpu.leaves[0].isnan().nonzero().flatten()
    swapped = _altered(cpu, 1, lambda i: torch.where(i == nan_rows[0], nan_rows[1],
                                                     torch.where(i == nan_rows[1], nan_rows[0], i)))
    assert classify(call, swapped, tpu).cls == "ok"  # which NaN each input NaN maps to is unspecified

    def to_a_number(i: torch.Tensor) -> torch.Tensor:
        i[i == nan_rows[0]] = 0
        return i
    assert classify(call, cpu, _altered(tpu, 1, to_a_number)).cls == "value"
