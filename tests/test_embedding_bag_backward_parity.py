"""embedding_bag's backward ops called directly, against CPU in every eager mode:
- _embedding_bag_dense_backward binds its own schema (no offsets, no sparse: it was lowered with
  _embedding_bag_backward's arguments, so every valid call failed);
- _embedding_bag_backward given no offset2bag makes it from the offsets as ATen does (tpu raised internal errors),
  with CPU's errors for offsets out of range or not a vector;
- refused where ATen's CPU kernel reads memory it does not own (undefined result): a grad of under 2 dims, offsets
  whose first is not 0 (the first indices in bag -1)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

aten = torch.ops.aten
GRAD = torch.arange(4.0).reshape(2, 2)


def _dense(d: str, grad: torch.Tensor, mode: int) -> torch.Tensor:
    indices = torch.tensor([0, 2, 1], device=d)
    offset2bag = torch.tensor([0, 0, 1], device=d)
    bag_size = torch.tensor([2, 1], device=d)
    max_indices = torch.tensor([[0, 2], [1, 1]], device=d)
    return aten._embedding_bag_dense_backward(grad.to(d), indices, offset2bag, bag_size, max_indices, 4, False, mode,
                                              None, -1)


def _made(d: str, offsets: list, mode: int, weights: bool = False) -> torch.Tensor:
    psw = torch.tensor([0.5, 2.0, -1.0], device=d) if weights else None
    return aten._embedding_bag_backward(GRAD.to(d), torch.tensor([0, 2, 1], device=d), torch.tensor(offsets, device=d),
                                        torch.tensor([], dtype=torch.long, device=d), torch.tensor([2, 1], device=d),
                                        torch.tensor([[0, 2], [1, 1]], device=d), 4, False, mode, False, psw, -1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
def test_dense_backward_computes_as_cpu(mode: str, bag_mode: int) -> None:
    assert_exactly_cpu(lambda d: [_dense(d, GRAD, bag_mode)], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
@pytest.mark.parametrize("shape", [(), (2,)])
def test_grad_under_two_dims_is_refused(mode: str, bag_mode: int, shape: tuple[int, ...]) -> None:
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match=f"grad of {len(shape)} dims, not 2"):
        _dense("tpu", torch.ones(shape), bag_mode)
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
@pytest.mark.parametrize("offsets", [[0, 2], [2, 0], [0, 0, 3], [0, 3]])
def test_offset2bag_made_from_offsets_as_cpu(mode: str, bag_mode: int, offsets: list) -> None:
    assert_exactly_cpu(lambda d: [_made(d, offsets, bag_mode)], mode)


@pytest.mark.parametrize("mode", MODES)
def test_offset2bag_made_with_per_sample_weights_as_cpu(mode: str) -> None:
    assert_exactly_cpu(lambda d: [_made(d, [0, 2], 0, weights=True)], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1, 2])
@pytest.mark.parametrize("offsets", [[0, 7], [0, -1], [[0, 2]]])
def test_bad_offsets_refused_as_cpu(mode: str, bag_mode: int, offsets: list) -> None:
    assert_refused_as_cpu(lambda d: _made(d, offsets, bag_mode), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bag_mode", [0, 1])
def test_first_offset_not_zero_is_refused(mode: str, bag_mode: int) -> None:
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="put the first indices in bag -1"):
        _made("tpu", [1, 1], bag_mode).cpu()
