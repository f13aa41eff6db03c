"""torch.compile(backend="tpu") keeps device transfers: a graph output made by `.cpu()` lands on the CPU and
one made by `.to("tpu")` on the tpu, as the graph's fake tensors say (they used to stay where the graph ran)."""

from __future__ import annotations

import torch

import torchtpu  # noqa: F401


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="tpu")


def test_cpu_of_a_tpu_input_is_on_cpu(tpu):
    t = torch.arange(3.0, device="tpu")
    out = _compiled(lambda t: t.cpu())(t)
    assert out.device.type == "cpu" and out.tolist() == [0.0, 1.0, 2.0]


def test_to_tpu_of_a_cpu_input_is_on_tpu(tpu):
    out = _compiled(lambda t: t.to("tpu"))(torch.arange(3.0))
    assert out.device.type == "tpu" and out.cpu().tolist() == [0.0, 1.0, 2.0]


def test_mixed_outputs_keep_each_device(tpu):
    t = torch.arange(3.0, device="tpu")
    host, dev = _compiled(lambda t: ((t * 2).cpu() + 1, t + 1))(t)
    assert host.device.type == "cpu" and host.tolist() == [1.0, 3.0, 5.0]
    assert dev.device.type == "tpu" and dev.cpu().tolist() == [1.0, 2.0, 3.0]


def test_to_tpu_then_compute_is_on_tpu(tpu):
    out = _compiled(lambda t: t.to("tpu") * 2 + 1)(torch.arange(3.0))
    assert out.device.type == "tpu" and out.cpu().tolist() == [1.0, 3.0, 5.0]
