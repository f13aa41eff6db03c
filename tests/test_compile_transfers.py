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


def test_a_lifted_cpu_scalar_is_a_scalar_input_not_a_copy(tpu, monkeypatch):
    # Adam's step counts are 0-d CPU tensors the compiled step lifts: each is a scalar input of the launch, as in
    # eager, not a blocking host->device copy before it (42 copies made the host wait for the backward pass)
    from torchtpu import runtime

    results = []
    for device in ("cpu", "tpu"):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        step = _compiled(opt.step) if device == "tpu" else opt.step
        x = torch.randn(5, 4).to(device)
        for i in range(3):
            with torch.tpu.precision("HIGHEST"):
                model(x).pow(2).sum().backward()
            if device == "tpu" and i == 2:
                writes: list[int] = []
                write = runtime.write_from_host

                def counted(*a, write=write, writes=writes, **k):
                    writes.append(1)
                    return write(*a, **k)

                monkeypatch.setattr(runtime, "write_from_host", counted)
                step()
                monkeypatch.setattr(runtime, "write_from_host", write)
                assert writes == []
            else:
                step()
            opt.zero_grad()
        assert all(s["step"].device.type == "cpu" for s in opt.state.values())
        results.append([p.detach().cpu() for p in model.parameters()] + [s["step"] for s in opt.state.values()])
    for c, t in zip(*results):
        torch.testing.assert_close(t, c, rtol=1e-5, atol=1e-5)
