"""`torch._grouped_mm` on "tpu" (MoE experts): every supported form against CPU PyTorch, eagerly and under
torch.compile (whose fake tensors use the tpu rule in compile/fake_rules.py, not the CUDA-only meta kernel)."""

from __future__ import annotations

import pytest
import torch

import torchtpu

OFFS = torch.tensor([3, 3, 7, 12], dtype=torch.int32)  # an empty group, and rows 12..13 past the last offset


def _operands(dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(dtype)

    # sizes keep CPU's 16-byte stride rule for bfloat16; 2d x 2d: K positions 12..15 are in no group
    return {"2d x 3d": (rand(14, 8), rand(4, 8, 16), OFFS),
            "2d x 2d": (rand(8, 16), rand(16, 16), torch.tensor([4, 4, 8, 12], dtype=torch.int32)),
            "3d x 3d": (rand(4, 5, 8), rand(4, 8, 16), None)}


@pytest.mark.parametrize("form", ["2d x 3d", "2d x 2d", "3d x 3d"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_mm_matches_cpu(tpu, form, dtype):
    a, b, offs = _operands(dtype)[form]
    want = torch._grouped_mm(a, b, offs=offs)
    with torchtpu.precision("HIGHEST"):
        got = torch._grouped_mm(a.to(tpu), b.to(tpu), offs=None if offs is None else offs.to(tpu)).cpu()
    if form == "2d x 3d":  # rows past the last offset: zero here, unspecified (uninitialized) on CPU
        assert torch.equal(got[12:], torch.zeros_like(got[12:]))
        got, want = got[:12], want[:12]
    tol = {} if dtype == torch.float32 else {"rtol": 1.6e-2, "atol": 1e-2}
    torch.testing.assert_close(got, want, **tol)


def test_grouped_mm_out_dtype_and_errors(tpu):
    a, b, offs = _operands(torch.bfloat16)["2d x 3d"]
    got = torch._grouped_mm(a.to(tpu), b.to(tpu), offs=offs.to(tpu), out_dtype=torch.float32)
    assert got.dtype == torch.float32
    want = torch._grouped_mm(a.float(), b.float(), offs=offs)  # CPU takes no out_dtype; bf16 products are exact
    torch.testing.assert_close(got.cpu()[:12], want[:12])
    with pytest.raises(RuntimeError, match="bias is not supported"):
        torch._grouped_mm(a.to(tpu), b.to(tpu), offs=offs.to(tpu), bias=torch.zeros(4, 16, device=tpu))
    with pytest.raises(RuntimeError, match="need offs"):
        torch._grouped_mm(a.to(tpu), b[0].to(tpu))
    with pytest.raises(RuntimeError, match="(?i)float32, bfloat16 or float16"):
        torch._grouped_mm(a.double().to(tpu), b.double().to(tpu), offs=offs.to(tpu))


def test_compiled_grouped_mm_in_float32_and_its_gradients(tpu):
    torch._dynamo.reset()
    a, b, offs = _operands(torch.float32)["2d x 3d"]
    a = a[:12]
    ta, tb = a.to(tpu).requires_grad_(), b.to(tpu).requires_grad_()
    ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()

    def loss(x: torch.Tensor, w: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        return (torch._grouped_mm(x, w, offs=o) ** 2).sum()

    with torchtpu.precision("HIGHEST"):
        got = torch.compile(loss, backend="tpu", fullgraph=True)(ta, tb, offs.to(tpu))
        got.backward()
    want = loss(ca, cb, offs)
    want.backward()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ta.grad.cpu(), ca.grad, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(tb.grad.cpu(), cb.grad, rtol=1e-5, atol=1e-4)
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0
