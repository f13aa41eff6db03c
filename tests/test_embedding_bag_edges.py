"""embedding_bag at its edges, the decisions of docs/op-coverage.md ("embedding_bag"):
- include_last_offset=True with offsets[-1] below the number of indices is refused in every mode (CPU's sum, mean
  and max modes follow three rules there and its backward reads past grad); offsets[-1] equal to it is CPU's result;
- no bags (empty offsets, or include_last_offset with offsets [0]) give CPU's empty result (sum, mean; CPU's max
  mode crashes there: tpu gives the empty result);
- sparse=True backward: the gradient is computed densely (tpu holds strided tensors only), equal to CPU's sparse
  gradient's values; nn.EmbeddingBag(sparse=True) trains as on CPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from refusal_cases import MODES, assert_exactly_cpu

aten = torch.ops.aten
INDICES = [1, 2, 4, 5, 0, 3]


def _weight(d: str) -> torch.Tensor:
    return torch.arange(18.0).reshape(6, 3).sin().to(d)


def _bag(d: str, offsets: list[int], mode: int, last: bool) -> tuple[torch.Tensor, ...]:
    return aten._embedding_bag.default(_weight(d), torch.tensor(INDICES, device=d),
                                       torch.tensor(offsets, dtype=torch.long, device=d), False, mode, False, None,
                                       last)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
def test_last_offset_below_the_indices_is_refused(mode: str, bag_mode: int) -> None:
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="needs offsets\\[-1\\] equal to the number"):
        _bag("tpu", [0, 2, 4], bag_mode, True)
        torch.tpu.synchronize()
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="it is 3 less"):
        F.embedding_bag(torch.tensor(INDICES, device="tpu"), _weight("tpu"), torch.tensor([0, 2, 3], device="tpu"),
                        mode=("sum", "mean", "max")[bag_mode], include_last_offset=True)
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
def test_last_offset_at_the_end_is_cpus(mode: str, bag_mode: int) -> None:
    assert_exactly_cpu(lambda d: [_bag(d, [0, 2, 6], bag_mode, True)[0]], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
@pytest.mark.parametrize(("offsets", "last"), [([], False), ([0], True)])
def test_no_bags_give_an_empty_result(mode: str, bag_mode: int, offsets: list[int], last: bool) -> None:
    if bag_mode == 2:  # CPU's max kernel crashes (segfault, torch 2.13) with no bags: the result's shape alone
        with torch.tpu.eager_mode(mode):
            assert _bag("tpu", offsets, bag_mode, last)[0].cpu().shape == (0, 3)
        return
    assert_exactly_cpu(lambda d: [_bag(d, offsets, bag_mode, last)[0]], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1])
def test_sparse_backward_is_the_dense_gradient(mode: str, bag_mode: int) -> None:
    def grad(d: str) -> torch.Tensor:
        g = torch.arange(6.0).reshape(2, 3).to(d)
        return aten._embedding_bag_backward(g, torch.tensor(INDICES, device=d), torch.tensor([0, 2], device=d),
                                            torch.tensor([0, 0, 1, 1, 1, 1], device=d), torch.tensor([2, 4], device=d),
                                            torch.tensor([0, 0], device=d), 6, False, bag_mode, True, None, -1)

    want = grad("cpu")
    assert want.layout == torch.sparse_coo
    with torch.tpu.eager_mode(mode):
        got = grad("tpu").cpu()
    assert got.layout == torch.strided
    torch.testing.assert_close(got, want.to_dense(), rtol=0, atol=0)


def test_sparse_embedding_bag_trains_as_on_cpu() -> None:
    weights = {}
    for d in ("cpu", "tpu"):
        torch.manual_seed(0)
        m = torch.nn.EmbeddingBag(6, 3, mode="mean", sparse=True).to(d)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            out = m(torch.tensor(INDICES, device=d), torch.tensor([0, 2], device=d))
            (out * out).sum().backward()
            opt.step()
        weights[d] = m.weight.detach().cpu()
    torch.testing.assert_close(weights["tpu"], weights["cpu"], rtol=1e-6, atol=1e-7)


def test_fuzzer_compares_a_sparse_cpu_output_by_value() -> None:
    """The fuzzer (torchtpu/fuzz/outcome.py) meets CPU's sparse gradient against tpu's dense one: equal values are
    the listed 'type' difference, other values a 'value' finding."""
    from torchtpu.fuzz.outcome import _compare_leaf

    cpu = torch.sparse_coo_tensor([[0, 2]], torch.ones(2, 3), (4, 3))
    assert _compare_leaf(cpu.to_dense(), cpu, None, False, "output 0").cls == "type"
    other = cpu.to_dense()
    other[1] = 5.0
    assert _compare_leaf(other, cpu, None, False, "output 0").cls == "value"
