"""The per-program launch state of a compiled graph (compile/launch_layout.py) and the sim's cached direct-write
decision (drivers/sim/direct_outputs.py) on a compiled AdamW step: step counts' device outputs pooled across
launches, counts right, parameters bit-identical to eager AdamW(capturable=True) (the algorithm Dynamo traces,
tests/test_compile_optimizer.py), and one cached decision serving every steady-state launch."""

from __future__ import annotations

import numpy as np
import torch
from torchtpu.drivers.sim import direct_outputs

import torchtpu


def _model(tpu: str) -> torch.nn.Module:
    torch.manual_seed(0)  # weights of 64 x 128: written directly (direct_outputs.MIN_ELEMENTS)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 64)).to(tpu)


def _steps(tpu: str, compiled: bool, n: int = 4) -> tuple[torch.nn.Module, torch.optim.Optimizer, list]:
    torch._dynamo.reset()
    model = _model(tpu)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, capturable=not compiled)
    step = torch.compile(opt.step, backend="tpu") if compiled else opt.step
    gen = torch.Generator().manual_seed(1)
    history = []
    with torchtpu.eager_mode("DEFER_NEVER"):
        for _ in range(n):
            opt.zero_grad()
            model(torch.randn(8, 64, generator=gen).to(tpu)).square().mean().backward()
            step()
            history.append(torch.cat([p.detach().cpu().flatten() for p in model.parameters()]))
    return model, opt, history


def _record_launches(monkeypatch) -> list:
    """The traced programs the compiled graphs launch, in order (an observer around the real launch)."""
    from torchtpu.compile.backend import CompiledGraph

    launched, real = [], CompiledGraph._launch

    def observed(self, traced, *args, **kwargs):
        launched.append(traced)
        return real(self, traced, *args, **kwargs)

    monkeypatch.setattr(CompiledGraph, "_launch", observed)
    return launched


def _adam_graph(launched: list):
    return max(launched, key=lambda t: len(t.program.inputs))


def test_compiled_adamw_pools_step_outputs_and_equals_eager_capturable(tpu, monkeypatch):
    expected = _steps(tpu, compiled=False)[2]
    launched = _record_launches(monkeypatch)
    model, opt, history = _steps(tpu, compiled=True)
    for step, (a, b) in enumerate(zip(history, expected)):
        assert torch.equal(a, b), f"parameters after step {step + 1} differ from eager AdamW(capturable=True)"
    counts = [float(opt.state[p]["step"]) for p in model.parameters()]
    assert counts == [4.0] * 4, counts
    assert all(opt.state[p]["step"].device.type == "cpu" for p in model.parameters())
    traced = _adam_graph(launched)
    pools = [pool for sets in traced.layout._free.values() for pool in sets]
    assert len(pools) == 1 and len(pools[0]) == 4, "one pooled set of four step-count outputs, reused"
    assert all(t.device.type == "tpu" and t.dim() == 0 for t in pools[0].values())


def test_direct_write_decision_cached_with_zero_d_outputs(tpu, monkeypatch):
    launched = _record_launches(monkeypatch)
    torch._dynamo.reset()
    model = _model(tpu)
    model(torch.randn(8, 64).to(tpu)).square().mean().backward()  # gradients kept: the same buffers each launch
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    step = torch.compile(opt.step, backend="tpu")
    with torchtpu.eager_mode("DEFER_NEVER"):
        step()
        plan = _adam_graph(launched).exe.payload.direct
        assert plan is not None, "the AdamW step's 64 x 128 weights are written directly"
        decided = len(plan._cache)
        for _ in range(4):
            step()
    assert decided >= 1, "the decision is cached though outputs include 0-d storage views (the step counts)"
    assert len(plan._cache) == decided, "launches with the same buffers (and new host scalars) reuse one decision"


def test_host_scalar_root_is_not_a_storage_view():
    storage = np.zeros(4, np.float32)
    zero_d_view = np.lib.stride_tricks.as_strided(storage[1:], (), ())  # as the runtime views a 0-d tensor
    assert not direct_outputs._host_scalar(direct_outputs._root(zero_d_view))
    scalar = np.asarray(1.5, np.float32)  # runtime.scalar_buffer: new memory each launch
    assert direct_outputs._host_scalar(direct_outputs._root(scalar[...]))


def test_program_key_tells_host_scalars_from_device_and_sized_tensors():
    """The launch key (compile/backend.py `_key`, read on every launch) marks exactly the 0-d CPU tensors as host
    scalars: a 0-d tpu tensor, a one-element CPU tensor and a Parameter on tpu are not; other arguments pass as
    they are."""
    from torchtpu.compile.backend import CompiledGraph, _is_host_scalar

    args = [torch.tensor(1.0), torch.ones(1), torch.tensor(1.0, device="tpu"),
            torch.nn.Parameter(torch.ones(2, 3, device="tpu")), torch.tensor(3, dtype=torch.int64), 5]
    key, _ = CompiledGraph._key(args)
    assert [k[2] if isinstance(k, tuple) else k for k in key] == [True, False, False, False, True, 5]
    assert [_is_host_scalar(a) for a in args[:5]] == [True, False, False, False, True]
    assert key[3][:2] == (torch.Size([2, 3]), torch.float32)
