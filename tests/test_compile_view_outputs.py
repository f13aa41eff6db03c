"""A compiled training forward's weight transposes, saved for the backward, are returned as views of the weights
(compile/launch_layout.py `input_transposes`, `LaunchLayout.allocate`; the sim leaves such an output as it is:
direct_outputs.same_view): no transposed copy per step, and loss and gradients bit-identical to DEFER_NEVER."""

from __future__ import annotations

import torch
from torchtpu.drivers.ir import Builder

import torchtpu
from torchtpu.compile import launch_layout


def _model(tpu: str) -> torch.nn.Module:
    torch.manual_seed(0)  # odd sizes: 45 -> 131 -> 67
    return torch.nn.Sequential(torch.nn.Linear(45, 131, bias=False), torch.nn.Tanh(), torch.nn.Linear(131, 67)).to(tpu)


def _step(tpu: str, compiled: bool) -> list[torch.Tensor]:
    torch._dynamo.reset()
    model = _model(tpu)
    run = torch.compile(model, backend="tpu") if compiled else model
    x = torch.randn(3, 37, 45, generator=torch.Generator().manual_seed(1)).to(tpu)
    with torchtpu.eager_mode("DEFER_NEVER"):
        results = []
        for _ in range(2):  # the second launch reuses the compiled graphs and their cached decisions
            model.zero_grad()
            loss = run(x).square().mean()
            loss.backward()
            results = [loss.detach().cpu(), *(p.grad.cpu() for p in model.parameters())]
    return results


def test_saved_weight_transposes_are_views_and_bits_match_eager(tpu, monkeypatch):
    made: list[tuple[list, list]] = []
    real = launch_layout.LaunchLayout.allocate

    def allocate(self, tensors, dev):
        outputs = real(self, tensors, dev)
        made.append((list(tensors), outputs))
        return outputs

    monkeypatch.setattr(launch_layout.LaunchLayout, "allocate", allocate)
    got = _step(tpu, compiled=True)
    monkeypatch.undo()
    want = _step(tpu, compiled=False)
    assert all(g.dtype == w.dtype and torch.equal(g.view(torch.int32), w.view(torch.int32)) for g, w in zip(got, want))
    weights = {t.untyped_storage().data_ptr() for t in made[0][0] if t.dim() == 2 and t.shape[0] in (131, 67)}
    views = [o for tensors, outputs in made for o in outputs if o.untyped_storage().data_ptr() in weights]
    assert len(views) >= 2 and all(v.t().is_contiguous() for v in views)  # a weight's transpose, each launch


def _program(mutate: bool):
    """out0 = transpose(w), out1 = w * w; with `mutate`, w is also updated in place (a mutated output)."""
    b = Builder()
    w = b.input((45, 131), "float32")
    t = b.emit("transpose", [w], permutation=(1, 0))[0]
    tt = b.emit("transpose", [b.emit("transpose", [t], permutation=(1, 0))[0]], permutation=(1, 0))[0]
    sq = b.emit("multiply", [w, w])[0]
    return b.finish([tt, sq, sq] if mutate else [tt, sq])


def test_only_transposes_of_inputs_in_programs_that_mutate_none_are_views():
    program = _program(False)
    assert launch_layout.input_transposes(program, 2, 1) == [(0, 0, ((1, 0), (1, 0), (1, 0)))]
    views = frozenset({0})  # the graph's output 0 is transposes of its input (graph_layout)
    assert launch_layout.LaunchLayout(program, [], [], 1, 0, graph_views=views).views == \
        [(0, 0, ((1, 0), (1, 0), (1, 0)))]
    assert launch_layout.LaunchLayout(program, [], [], 1, 0).views == []
    assert launch_layout.LaunchLayout(_program(True), [0], [], 1, 0, graph_views=views).views == []


def test_a_cloned_transpose_is_a_tensor_of_its_own(tpu):
    """The IR has no clone: `w.t().clone()` is a transpose of an input there too, but the graph says it is a new
    tensor, so writing to it leaves `w` as it was."""
    torch._dynamo.reset()
    w = torch.randn(4, 3, device=tpu)
    kept = w.cpu()
    for fn in (lambda w: w.t().clone(), lambda w: (w.t().clone(), w.sum())):
        out = torch.compile(fn, backend="tpu")(w)
        out = out[0] if isinstance(out, tuple) else out
        assert out.untyped_storage().data_ptr() != w.untyped_storage().data_ptr()
        out.add_(1)
        assert torch.equal(w.cpu(), kept) and torch.equal(out.cpu(), kept.t() + 1)
