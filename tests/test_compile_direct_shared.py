"""A compiled Llama training step with the direct writes of shared results (drivers/sim/direct_outputs.py
`SHARED`: a normed activation reshaped for each of q, k and v and saved, written into one saved output; the
log-softmax's shifted logits returned twice, written into one and copied into the other): loss and gradients
bit-identical to DEFER_NEVER, over two launches (the second reuses the cached decisions)."""

from __future__ import annotations

import pytest
import torch
from torchtpu.drivers.sim import direct_outputs

import torchtpu
from torchtpu import runtime

transformers = pytest.importorskip("transformers")


def _step(tpu: str, compiled: bool) -> list[torch.Tensor]:
    torch._dynamo.reset()
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=256, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(tpu)
    run = torch.compile(model, backend="tpu") if compiled else model
    ids = torch.randint(0, 128, (2, 67), generator=torch.Generator().manual_seed(1)).to(tpu)  # odd length
    with torchtpu.eager_mode("DEFER_NEVER"):
        results = []
        for _ in range(2):
            model.zero_grad()
            loss = run(ids, labels=ids, use_cache=False).loss
            loss.backward()
            results = [loss.detach().cpu(), *(p.grad.cpu() for p in model.parameters())]
    return results


def _shared_writes() -> tuple[int, int]:
    """(IntoView writes whose result other steps read too, results written once and copied into other outputs)
    over the compiled programs in the driver's cache."""
    views = repeated = 0
    for exe in list(runtime.driver()._cache.values()):
        direct = getattr(exe.payload, "direct", None)
        if not isinstance(direct, direct_outputs.DirectPlan):
            continue
        written = {slot for n, k in direct.direct.items() for slot, _ in direct_outputs._written(
            exe.payload.steps[n], k)}
        views += sum(isinstance(k, direct_outputs.IntoView) and k.shared for k in direct.direct.values())
        repeated += sum(slot in written for slot, _ in direct.copies)
    return views, repeated


def test_compiled_llama_training_with_shared_writes_matches_defer_never(tpu):
    got = _step(tpu, compiled=True)
    views, repeated = _shared_writes()
    assert views >= 1 and repeated >= 1, (views, repeated)
    want = _step(tpu, compiled=False)
    assert len(got) == len(want)
    assert all(g.dtype == w.dtype and torch.equal(g.view(torch.int32), w.view(torch.int32)) for g, w in zip(got, want))
