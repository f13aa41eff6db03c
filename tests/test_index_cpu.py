"""A CPU index (bool mask or integer) into a tpu tensor is copied to the device (getitem, setitem, index_put_ as
CUDA does; index_select, index_fill, index_add/copy/reduce, gather, scatter*, put_, take and the masks of
masked_fill/masked_scatter/masked_select more permissively than CUDA: ops/host_index.py), compared with CPU in
every eager mode; a CPU data operand (values, source, src) still raises the device-mix error with the target intact;
under torch.compile a CPU index into those ops is torch's fake-tensor device-mismatch error, as on CUDA."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

EAGER_MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
MASK = torch.tensor([True, False, True, False])
IDX = torch.tensor([2, 0, 2])
ROWS = torch.tensor([1, 0])


def _dev(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A data operand on `t`'s device (a CPU index stays on CPU)."""
    return x.to(t.device)


# name -> fn(t) on a (2, 3, 4) float tensor `t` (tpu or CPU); returns a tensor or None (an in-place write).
CASES: dict[str, Callable[[torch.Tensor], torch.Tensor | None]] = {
    "mask_get": lambda t: t[..., MASK],
    "full_mask_get": lambda t: t[MASK.reshape(1, 1, 4).expand(2, 3, 4)],
    "long_get": lambda t: t[torch.tensor([1, 0, 1])],
    "broadcast_long_get": lambda t: t[:, torch.tensor([[0, 2]]), torch.tensor([3])],
    "0dim_get": lambda t: t[torch.tensor(1)],
    "mask_set": lambda t: t.__setitem__((..., MASK), -1.0),
    "row_mask_set": lambda t: t.__setitem__(torch.tensor([True, False]), 5.0),
    "index_put_accumulate": lambda t: t.index_put_((torch.tensor([0, 1, 1]), torch.tensor([2, 0, 0])),
                                                   _dev(t, torch.tensor(3.0)), accumulate=True),
    "index_put": lambda t: t.index_put_((torch.tensor([1]),), _dev(t, torch.full((1, 3, 4), 2.0))),
    "index_put_functional": lambda t: torch.index_put(t, (torch.tensor([0, 0]),), _dev(t, torch.ones(3, 4)),
                                                      accumulate=True),
    "index_fill": lambda t: t.index_fill(2, IDX, -1.5),
    "index_fill_inplace": lambda t: t.index_fill_(1, torch.tensor([0, 2]), float("nan")),
    "index_fill_tensor_value": lambda t: t.index_fill(0, ROWS, _dev(t, torch.tensor(7.0))),
    "index_select": lambda t: t.index_select(2, IDX),
    "index_select_keyword": lambda t: torch.index_select(t, 1, index=torch.tensor([2, 2, 0])),
    "index_select_out": lambda t: torch.index_select(t, 2, IDX, out=_dev(t, torch.empty(2, 3, 3))),
    "index_add": lambda t: t.index_add(2, IDX, _dev(t, torch.ones(2, 3, 3)), alpha=2),
    "index_copy_inplace": lambda t: t.index_copy_(0, ROWS, _dev(t, -torch.arange(24.0).reshape(2, 3, 4))),
    "index_reduce": lambda t: t.index_reduce(2, IDX, _dev(t, torch.full((2, 3, 3), 3.0)), "amax"),
    "gather": lambda t: t.gather(1, torch.tensor([[[2, 0, 1, 1]], [[0, 0, 2, 1]]])),
    "scatter_src": lambda t: t.scatter(2, torch.tensor([[[3, 0]]]), _dev(t, torch.full((1, 1, 2), 9.0))),
    "scatter_value": lambda t: t.scatter(2, torch.tensor([[[3, 1]]]), -4.0),
    "scatter_add_inplace": lambda t: t.scatter_add_(1, torch.tensor([[[2, 2, 0, 1]]]), _dev(t, torch.ones(1, 1, 4))),
    "scatter_reduce": lambda t: t.scatter_reduce(0, torch.tensor([[[1, 1, 0, 0]]]),
                                                 _dev(t, torch.full((1, 1, 4), 30.0)), "amin", include_self=False),
    "put_": lambda t: t.put_(torch.tensor([5, -1, 5]), _dev(t, torch.tensor([1.0, 2.0, 3.0])), accumulate=True),
    "take": lambda t: t.take(torch.tensor([[0, 23], [7, -2]])),
    "masked_fill": lambda t: t.masked_fill(MASK, 0.5),
    "masked_fill_inplace": lambda t: t.masked_fill_(MASK.reshape(1, 1, 4).expand(1, 3, 4), -2.0),
    "masked_scatter": lambda t: t.masked_scatter(MASK, _dev(t, torch.arange(100.0, 112.0))),
    "masked_select": lambda t: t.masked_select(MASK),
}


def _both(fn: Callable[[torch.Tensor], torch.Tensor | None], mode: str) -> None:
    base = torch.arange(24.0).reshape(2, 3, 4)
    cpu, tpu = base.clone(), base.to("tpu")
    out_cpu = fn(cpu)
    with torch.tpu.eager_mode(mode):
        out_tpu = fn(tpu)
        got, got_out = tpu.cpu(), None if out_tpu is None else out_tpu.cpu()
    torch.testing.assert_close(got, cpu, rtol=0, atol=0, equal_nan=True)
    if out_cpu is not None:
        assert got_out is not None and got_out.device.type == "cpu" and out_tpu.device.type == "tpu"
        torch.testing.assert_close(got_out, out_cpu, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("mode", EAGER_MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_index_matches_cpu(name: str, mode: str) -> None:
    _both(CASES[name], mode)


def test_cpu_index_gradients() -> None:
    """The backward formulas reuse the saved CPU index (index_fill's grad.index_fill, gather's scatter_add)."""
    grads = []
    for device in ("cpu", "tpu"):
        x = torch.arange(12.0).reshape(3, 4).to(device).requires_grad_()
        y = x.index_fill(1, torch.tensor([1, 3]), 0.0) * 2 + x.gather(0, torch.tensor([[2, 0, 1, 2]])).sum()
        y.sum().backward()
        grads.append(x.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=0)


# A CPU operand that carries data (not an index) is refused as CUDA refuses it; the target is left as it was.
REFUSED: dict[str, Callable[[torch.Tensor], object]] = {
    "index_put_values": lambda t: t.index_put_((torch.tensor([0]),), torch.ones(1, 4)),
    "index_add_source": lambda t: t.index_add_(0, torch.tensor([1]), torch.ones(1, 4)),
    "index_copy_source": lambda t: t.index_copy_(0, torch.tensor([1]), torch.ones(1, 4)),
    "scatter_src": lambda t: t.scatter_(0, torch.tensor([[1, 0, 0, 1]]), torch.ones(1, 4)),
    "masked_scatter_source": lambda t: t.masked_scatter_(MASK, torch.ones(4)),
    "put_source": lambda t: t.put_(torch.tensor([1, 2]), torch.ones(2)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_cpu_values_still_refused(name: str) -> None:
    t = torch.zeros(2, 4, device="tpu")
    with pytest.raises(RuntimeError, match="found at least two devices"):
        REFUSED[name](t)
    assert t.cpu().abs().sum().item() == 0


@pytest.mark.parametrize("name", ["index_fill", "index_select", "gather"])
def test_compile_refuses_as_cuda(name: str) -> None:
    """torch.compile's fake tensors refuse a non-0-dim CPU operand of these ops before any backend runs (as for
    CUDA): an error naming both devices, never a result."""
    torch._dynamo.reset()
    fn = torch.compile(CASES[name], backend="tpu")
    with pytest.raises(RuntimeError, match="device mismatch"):
        fn(torch.arange(24.0).reshape(2, 3, 4).to("tpu"))
