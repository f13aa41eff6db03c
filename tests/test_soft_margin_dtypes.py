"""soft_margin_loss (and .out) and its backward with operands of mixed float dtypes take the input's dtype, as
CPU's kernels (which write into `empty_like(input)`), where the upstream decomposition promoted (fuzz seed 10)."""

import pytest
import torch
from refusal_cases import MODES

F32, F64 = torch.float32, torch.float64
aten = torch.ops.aten

CASES = {
    "loss_mean": lambda d, t, g: aten.soft_margin_loss(t[0], t[1], 1),
    "loss_none": lambda d, t, g: aten.soft_margin_loss(t[0], t[1], 0),
    "loss_out": lambda d, t, g: aten.soft_margin_loss.out(t[0], t[1], 2, out=torch.empty((), dtype=t[0].dtype,
                                                                                                device=d)),
    "backward": lambda d, t, g: aten.soft_margin_loss_backward(g, t[0], t[1], 1),
    "backward_none": lambda d, t, g: aten.soft_margin_loss_backward(g, t[0], t[1], 0),
}


def _call(case: str, dtypes: tuple[torch.dtype, ...], d: str) -> torch.Tensor:
    torch.manual_seed(0)
    x, target, grad = (torch.randn(3, 4, dtype=dt) for dt in dtypes)
    grad = grad if case == "backward_none" else grad[0, 0]
    return CASES[case](d, (x.to(d), target.to(d)), grad.to(d))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtypes", [(F32, F64, F64), (F64, F32, F32), (F32, F32, F64)])
@pytest.mark.parametrize("case", CASES)
def test_soft_margin_result_dtype(mode: str, dtypes: tuple[torch.dtype, ...], case: str) -> None:
    want = _call(case, dtypes, "cpu")
    with torch.tpu.eager_mode(mode):
        got = _call(case, dtypes, "tpu")
        torch.tpu.synchronize()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("case", ["loss_mean", "backward"])
def test_soft_margin_result_dtype_compiled(case: str) -> None:
    fn = torch.compile(lambda x, t, g: CASES[case]("tpu", (x, t), g), backend="tpu")
    torch.manual_seed(0)
    x, t, g = torch.randn(3, 4), torch.randn(3, 4, dtype=F64), torch.randn((), dtype=F64)
    got, want = fn(x.to("tpu"), t.to("tpu"), g.to("tpu")), CASES[case]("cpu", (x, t), g)
    assert got.dtype == want.dtype == F32
    torch.testing.assert_close(got.cpu(), want)
