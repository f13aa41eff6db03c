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


# --------------------------------------------- IR op ragged_dot: each group's own rows, every mode, its cost

def _reference(a: torch.Tensor, b: torch.Tensor, ends: list[int]) -> torch.Tensor:
    """Each group's rows times its matrix in float64, zero past the last end."""
    out = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float64)
    start = 0
    for g, stop in enumerate(ends):
        out[start:stop] = a[start:stop].double() @ b[g].double()
        start = stop
    return out


def test_rows_mode_multiplies_each_row_by_its_own_group_only():
    """A row's result is its own group's product alone: an inf in one group's matrix stays out of the other
    groups' rows (the kernel slices each group's rows; a product over the wrong rows would carry it)."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(14, 8, generator=g), torch.randn(4, 8, 16, generator=g)
    b[0, 0, 0] = float("inf")  # group 0 covers rows 0..2 only
    with torchtpu.precision("HIGHEST"):
        got = torch._grouped_mm(a.to("tpu"), b.to("tpu"), offs=OFFS.to("tpu")).cpu()
    want = _reference(a, b, OFFS.tolist())
    assert torch.isinf(got[:3, 0]).all() and torch.isfinite(got[3:]).all()
    torch.testing.assert_close(got[3:].double(), want[3:], rtol=1e-6, atol=1e-5)


def test_every_eager_mode_and_compile_are_bit_identical():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(64, 32, generator=g).to("tpu"), torch.randn(4, 32, 48, generator=g).to("tpu")
    offs = torch.tensor([10, 10, 41, 60], dtype=torch.int32, device="tpu")

    def run(x: torch.Tensor, w: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        y = torch._grouped_mm(x, w, offs=o)
        return torch._grouped_mm(x.t(), y, offs=o) * 2  # contract mode on a transposed lhs, as the backward's

    outs = []
    for mode in ("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"):
        with torchtpu.eager_mode(mode):
            outs.append(run(a, b, offs).cpu())
    torch._dynamo.reset()
    outs.append(torch.compile(run, backend="tpu", fullgraph=True)(a, b, offs).cpu())
    for o in outs[1:]:
        assert torch.equal(o, outs[0])


def test_group_ends_that_are_no_partition_raise_and_leave_the_device_usable(tpu):
    a, b = torch.randn(14, 8), torch.randn(4, 8, 16)
    for bad in ([3, 2, 7, 12], [3, 3, 7, 15]):
        with pytest.raises(RuntimeError, match=r"ragged_dot: group ends \[.*\] must be nondecreasing .* at most 14 "
                                             r"\(the rows length\)"):
            torch._grouped_mm(a.to(tpu), b.to(tpu), offs=torch.tensor(bad, dtype=torch.int32).to(tpu)).cpu()
    ok = torch._grouped_mm(a.to(tpu), b.to(tpu), offs=OFFS.to(tpu)).cpu()
    assert torch.equal(ok[12:], torch.zeros(2, 16))


def test_the_cost_charges_each_row_once_not_every_group():
    from torchtpu.drivers.ir import OPS, Builder
    from torchtpu.sim.cost import CostModel

    def cost(mode: str, lhs: tuple[int, ...], rhs: tuple[int, ...]):
        bld = Builder()
        ins = [bld.input(lhs, "bfloat16"), bld.input(rhs, "bfloat16"), bld.input((8,), "int32")]
        bld.emit("ragged_dot", ins, mode=mode, precision="DEFAULT", out_dtype="bfloat16")
        return OPS["ragged_dot"].cost(CostModel("v5e"), bld.ops[0])

    model = CostModel("v5e")
    rows = cost("rows", (4096, 1024), (8, 1024, 2048))
    dense = model.matmul(1, 4096, 2048, 1024, "bfloat16", "bfloat16")
    assert rows.flops == dense.flops  # 8 groups of 512 rows: the dense product's flops, not 8 times them
    assert rows.hbm_bytes == (4096 * 1024 + 8 * 1024 * 2048 + 4096 * 2048) * 2 + 8 * 4  # every group's weights
    contract = cost("contract", (1024, 4096), (4096, 2048))
    assert contract.flops == dense.flops
    assert contract.hbm_bytes == (1024 * 4096 + 4096 * 2048 + 8 * 1024 * 2048) * 2 + 8 * 4


def test_the_profiler_lists_a_ragged_dot_among_the_mxu_ops(tpu):
    from torchtpu.drivers.ir import Builder

    from torchtpu.profiler.costs import mxu_ops

    bld = Builder()
    ins = [bld.input((256, 64), "bfloat16"), bld.input((4, 64, 128), "bfloat16"), bld.input((4,), "int32")]
    out = bld.emit("ragged_dot", ins, mode="rows", precision="DEFAULT", out_dtype="bfloat16")
    (row,) = mxu_ops(bld.finish(out))
    assert row["op"] == "ragged_dot" and row["flops"] == 2 * 256 * 64 * 128 and row["out_shape"] == (256, 128)
