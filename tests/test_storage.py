"""Storage semantics: copies, dtypes, views aliasing their base, x.data, detach, serialization."""

from __future__ import annotations

import io

import pytest
import torch

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.bool]


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_and_conversion(tpu, dtype):
    x = (torch.randn(3, 5) * 10).to(dtype)
    t = x.to(tpu)
    assert t.device.type == "tpu" and t.dtype == dtype
    assert torch.equal(t.cpu(), x)
    for other in DTYPES:
        assert torch.equal(t.to(other).cpu(), x.to(other)), (dtype, other)


def test_views_alias_their_base(tpu):
    x = torch.zeros(4, 3, device=tpu)
    y = x[1:]
    y.add_(1)
    assert x.cpu()[0].tolist() == [0, 0, 0] and x.cpu()[1:].eq(1).all()
    x.t()[0].fill_(7)
    assert x.cpu()[:, 0].eq(7).all()
    z = torch.arange(6, device=tpu).reshape(2, 3)
    z.t_()
    assert z.shape == (3, 2) and z.cpu().tolist() == [[0, 3], [1, 4], [2, 5]]
    z.unsqueeze_(0)
    assert z.shape == (1, 3, 2)
    w = torch.ones(2, 2, device=tpu)
    w.data = torch.full((2, 2), 5.0, device=tpu)
    assert w.cpu().eq(5).all()
    d = w.detach()
    d.mul_(2)
    assert w.cpu().eq(10).all()


def test_checkpoint_round_trips_between_cpu_and_tpu(tpu, tmp_path):
    model = torch.nn.Linear(4, 3).to(tpu)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu", weights_only=True)
    assert all(v.device.type == "cpu" for v in on_cpu.values())
    assert torch.equal(on_cpu["weight"], model.weight.detach().cpu())
    path = tmp_path / "cpu.pt"
    torch.save(torch.nn.Linear(4, 3).state_dict(), path)
    loaded = torch.load(path, map_location="tpu", weights_only=True)
    assert loaded["weight"].device.type == "tpu"
    assert torch.equal(loaded["weight"].cpu(), torch.load(path, weights_only=True)["weight"])
    buf.seek(0)
    same = torch.load(buf, weights_only=True)
    assert same["bias"].device.type == "tpu"


def test_printing_and_python_scalars(tpu):
    x = torch.tensor([1.5, 2.5], device=tpu)
    assert "device='tpu:0'" in repr(x)
    assert x.sum().item() == 4.0 and x.tolist() == [1.5, 2.5]
    assert x.numpy(force=True).tolist() == [1.5, 2.5] if hasattr(x, "numpy") else True
