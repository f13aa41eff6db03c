"""Indexing whose only index tensors are 0-d boolean masks (ATen's op, not Python's `x[mask]`, which unsqueezes):
CPU's index kernel fails its internal assert (no index operand) for aten.index and for index_put_ unless
masked_fill_ takes it; the tpu device raises the same class with a message naming the problem, in every mode and
under torch.compile, and still computes where CPU does (a 0-d mask beside an index tensor)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
X = torch.arange(24.0).reshape(4, 6)
T, F = torch.tensor(True), torch.tensor(False)
A, P = torch.ops.aten.index.Tensor, torch.ops.aten.index_put_

REFUSED: dict[str, Callable[[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]], object]] = {
    "put_acc": lambda x, d: P(x.clone(), [d(T)], d(torch.tensor(1.0)), True),
    "put_acc_false": lambda x, d: P(x.clone(), [d(F)], d(torch.tensor(1.0)), True),
    "put_acc_none": lambda x, d: P(x.clone(), [d(T), None], d(torch.tensor(1.0)), True),
    "put_acc_two": lambda x, d: P(x.clone(), [d(T), d(T)], d(torch.tensor(1.0)), True),
    "put_acc_row": lambda x, d: P(x.clone(), [d(T)], d(torch.ones(6)), True),
    "put_row": lambda x, d: P(x.clone(), [d(T)], d(torch.ones(6)), False),
    "index_put_acc": lambda x, d: torch.ops.aten.index_put(x, [d(T)], d(torch.tensor(1.0)), True),
    "index": lambda x, d: A(x, [d(T)]),
    "index_none": lambda x, d: A(x, [None, d(F)]),
}
COMPUTED: dict[str, Callable[[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]], object]] = {
    "put_fill": lambda x, d: P(x.clone(), [d(T)], d(torch.tensor(1.0)), False),
    "put_acc_with_index": lambda x, d: P(x.clone(), [d(T), d(torch.tensor([1, 3]))], d(torch.tensor(2.0)), True),
    "index_with_index": lambda x, d: A(x, [d(T), d(torch.tensor([1, 2]))]),  # the mask takes no dim: rows 1, 2
    "index_false_with_index": lambda x, d: A(x, [d(F), d(torch.tensor([1, 2]))]),
    "index_index_false": lambda x, d: A(x, [d(torch.tensor([3, 0])), d(F)]),
}


def _cpu_error(fn: Callable[..., object]) -> RuntimeError:
    with pytest.raises(RuntimeError) as cpu:
        fn(X, lambda t: t)
    assert "ntensor >= 3" in str(cpu.value)
    return cpu.value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    fn = REFUSED[name]
    _cpu_error(fn)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="ntensor >= 3.*0-dim boolean masks"):
        fn(X.to("tpu"), lambda t: t.to("tpu"))
        torch.tpu.synchronize()


@pytest.mark.parametrize("name", ["put_acc", "index"])
def test_refused_as_cpu_compiled(name: str) -> None:
    fn = REFUSED[name]
    _cpu_error(fn)
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="ntensor >= 3.*0-dim boolean masks"):
        torch.compile(lambda x: fn(x, lambda t: t.to(x.device)), backend="tpu")(X.to("tpu"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(COMPUTED))
def test_computed_as_cpu(name: str, mode: str) -> None:
    fn = COMPUTED[name]
    want = fn(X, lambda t: t)
    with torch.tpu.eager_mode(mode):
        got = fn(X.to("tpu"), lambda t: t.to("tpu")).cpu()
    assert got.dtype == want.dtype and torch.equal(got, want)
