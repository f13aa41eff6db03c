"""The `_foreach_*` multi-tensor ops: PyTorch's own foreach OpInfo samples on CPU and tpu, functional and
in-place, each call one launch with no CPU fallback; and the optimizers that use them."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.testing._internal import common_methods_invocations as cmi

import torchtpu

FOREACH_OPS = [op for db in (cmi.foreach_unary_op_db, cmi.foreach_binary_op_db, cmi.foreach_pointwise_op_db,
                             cmi.foreach_reduce_op_db, cmi.foreach_other_op_db) for op in db]
# not lowered as one Program: ATen's generic loop runs it, one copy_ per tensor (copy.py handles cross-device)
PER_TENSOR = {"_foreach_copy"}


def _to(x, device):
    if isinstance(x, torch.Tensor):
        return x.detach().clone().to(device)
    if isinstance(x, list | tuple):
        return type(x)(_to(v, device) for v in x)
    return x


def _run(fn, sample, device):
    args = _to(sample.args, device)
    inputs = _to(sample.input, device)
    try:
        result = fn(inputs, *args, **sample.kwargs)
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return exc, inputs
    return result, inputs


def _samples(op, dtype):
    return list(op.sample_inputs("cpu", dtype, num_input_tensors=[3]))


def _cases():
    for op in FOREACH_OPS:
        for dtype in (torch.float32, torch.int64):
            if dtype in op.supported_dtypes("cpu"):
                yield pytest.param(op, dtype, id=f"{op.name}-{str(dtype).split('.')[-1]}")


@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_foreach_matches_cpu_in_one_launch(tpu, op, dtype):  # (PER_TENSOR ops: values only)
    samples = _samples(op, dtype)
    assert samples
    # a K=16..20 sum in another order (fp32 accumulate of bf16x6 passes vs CPU's BLAS): a few ulp
    tolerance = {"rtol": 2e-5, "atol": 1e-4} if op.name == "_foreach_mm" else {}
    variants = [("functional", op.op)] + ([("inplace", op.inplace_variant)] if op.inplace_variant else [])
    with torch.tpu.precision("highest"):
        for sample in samples:
            for kind, fn in variants:
                expected, cpu_inputs = _run(fn, sample, "cpu")
                torchtpu.reset_stats()
                got, tpu_inputs = _run(fn, sample, "tpu")
                launches = torchtpu.stats()["launches"]
                if isinstance(expected, Exception):
                    assert isinstance(got, Exception), f"{kind}: CPU raised {expected!r}, tpu did not"
                    continue
                assert not isinstance(got, Exception), f"{kind}: {got!r}"
                if kind == "inplace":
                    expected, got = cpu_inputs, tpu_inputs
                for e, g in zip(expected, got, strict=True):
                    torch.testing.assert_close(g.cpu(), e, equal_nan=True, **tolerance)
                if op.name not in PER_TENSOR:
                    assert launches == 1, f"{kind} {sample}: {launches} launches"
    assert torchtpu.fallback_counts() == {}


def test_foreach_errors_name_the_problem(tpu):
    a = [torch.ones(2, device=tpu), torch.ones(3, device=tpu)]
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._foreach_add(a, [torch.ones(2, device=tpu)])
    with pytest.raises(RuntimeError, match="scalar tensor expected to be 0 dim"):
        torch._foreach_mul(a, torch.ones(2, device=tpu))
    ints = [torch.ones(2, dtype=torch.long, device=tpu)]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch._foreach_add_(ints, 0.5)
    assert ints[0].cpu().tolist() == [1, 1]


@pytest.mark.parametrize("name,kwargs", [("AdamW", {"weight_decay": 0.01}), ("Adam", {"amsgrad": True}),
                                         ("SGD", {"momentum": 0.9, "nesterov": True}), ("RMSprop", {}),
                                         ("Adagrad", {})])
def test_foreach_optimizers_train_like_cpu(tpu, name, kwargs):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    models = {"cpu": model, "tpu": copy.deepcopy(model).to(tpu)}
    opts = {d: getattr(torch.optim, name)(m.parameters(), lr=1e-2, foreach=True, **kwargs) for d, m in models.items()}
    x, y = torch.randn(16, 6), torch.randn(16, 2)
    with torch.tpu.precision("highest"):
        for step in range(4):
            for d, m in models.items():
                opts[d].zero_grad()
                torch.nn.functional.mse_loss(m(x.to(d)), y.to(d)).backward()
                if d == "tpu":
                    torchtpu.reset_stats()
                opts[d].step()
            launches = torchtpu.stats()["launches"]
            if step:  # the first step also creates the state (one launch per buffer)
                assert launches <= 10, f"{name}: {launches} launches for one step of 4 parameters"
    for p, q in zip(models["cpu"].parameters(), models["tpu"].parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"])
@pytest.mark.parametrize("n_out", [1, 3])
def test_foreach_out_list_of_another_length_is_refused(tpu, mode, n_out):
    """CPU fails `dst.size() == src.size()` (a RuntimeError) after computing; tpu wrote the common prefix and left
    the rest of the out= list unwritten, silently."""
    inputs = [torch.full((4, 1), -2.0), torch.full((2,), -3.0)]
    outs = [torch.full((1,), 7.0) for _ in range(n_out)]
    with pytest.raises(RuntimeError, match="dst.size"):
        torch.ops.aten._foreach_abs.out(inputs, out=outs)
    with torch.tpu.eager_mode(mode):
        targets = [o.to(tpu) for o in outs]
        with pytest.raises(RuntimeError, match=f"out= holds {n_out} tensors but the op returns 2"):
            torch.ops.aten._foreach_abs.out([t.to(tpu) for t in inputs], out=targets)
        assert [t.cpu().tolist() for t in targets] == [[7.0]] * n_out  # nothing written
        good = [torch.empty(0, device=tpu), torch.empty(0, device=tpu)]
        torch.ops.aten._foreach_abs.out([t.to(tpu) for t in inputs], out=good)
        assert [g.cpu().tolist() for g in good] == [[[2.0]] * 4, [3.0, 3.0]]
