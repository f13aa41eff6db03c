"""Result dtypes and computation dtypes as ATen's kernels make them, for ops the schema fuzzer (issue 17) found
giving a silently wrong result: backward ops of mixed-dtype operands (a TensorIterator's common dtype, a scalar
read as it, a half operand computed in its opmath), uint8 any/all, the mode of large integers (once keyed in
float32), _prelu_kernel_backward's broadcast-shaped outputs. Each compared with CPU in DEFER_NEVER and
DEFER_AND_FUSE."""

from __future__ import annotations

import pytest
import torch
from test_ops_numerics import _mode

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _g(*shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


U8 = torch.tensor([[0, 3], [0, 0]], dtype=torch.uint8)
CASES = {
    "threshold_backward_bool_grad": (lambda g, x: aten.threshold_backward(g, x, 0.25),
                                     lambda: (_g(4, 4) > 0, _g(4, 4, seed=1))),
    "threshold_backward_half_float": (lambda g, x: aten.threshold_backward(g, x, 0.1),
                                      lambda: (_g(3, dtype=torch.float16), _g(3, seed=1))),
    "any_uint8": (lambda x: aten.any(x), lambda: (U8,)),
    "all_uint8": (lambda x: aten.all(x), lambda: (U8,)),
    "any_dim_uint8": (lambda x: aten.any(x, 1), lambda: (U8,)),
    "all_dim_uint8": (lambda x: aten.all(x, 0, True), lambda: (U8,)),
    "softshrink_backward_mixed": (lambda g, x: aten.softshrink_backward(g, x, 0.5),
                                  lambda: (_g(5, 1, dtype=torch.float16), _g(5, 1, seed=1))),
    "hardshrink_backward_mixed": (lambda g, x: aten.hardshrink_backward(g, x, 0.5),
                                  lambda: (_g(5, dtype=torch.float32), _g(5, dtype=torch.float64, seed=1))),
    "mse_loss_backward_mixed": (lambda g, x, t: aten.mse_loss_backward(g, x, t, 1),
                                lambda: (_g(3, 5), _g(3, 5, dtype=torch.float16, seed=1),
                                         torch.randint(0, 5, (3, 5), generator=torch.Generator().manual_seed(2)))),
    "mse_loss_backward_half": (lambda g, x, t: aten.mse_loss_backward(g, x, t, 2),
                               lambda: (_g(7, dtype=torch.float16), _g(7, dtype=torch.float16, seed=1),
                                        _g(7, dtype=torch.float16, seed=2))),
    "sigmoid_backward_mixed": (lambda g, y: aten.sigmoid_backward(g, y),
                               lambda: (_g(1, 3, 1, scale=100), _g(2, 3, 3, dtype=torch.float16, scale=10, seed=1))),
    "tanh_backward_mixed": (lambda g, y: aten.tanh_backward(g, y),
                            lambda: (_g(1, 3, 1, scale=100), _g(2, 3, 3, dtype=torch.float16, scale=10, seed=1))),
    "gelu_backward_tanh_float64_self": (lambda g, x: aten.gelu_backward(g, x, approximate="tanh"),
                                        lambda: (_g(2, 5), torch.tensor([[1.15, 1.59, 1e30, 0.53, -1.0],
                                                                         [0.69, 2.58, 1e20, -1e30, 0.4]],
                                                                        dtype=torch.float64))),
    "logit_backward_bool_grad": (lambda g, x: aten.logit_backward(g, x),
                                 lambda: (_g(5, 1) > 0, torch.tensor([[-64.8], [0.3], [63.5], [0.9], [-0.2]]))),
    "logit_backward_eps_mixed": (lambda g, x: aten.logit_backward(g, x, 0.1),
                                 lambda: (_g(4, dtype=torch.float16), torch.tensor([0.05, 0.3, 0.95, 0.5]))),
    "prelu_kernel_backward_grad_input": (lambda g, x, w: aten._prelu_kernel_backward(g, x, w)[0],
                                         lambda: (_g(4, 5, 1), _g(4, 5, 1, seed=1), _g(5, seed=2))),
    "prelu_kernel_backward_grad_weight_unreduced": (lambda g, x, w: aten._prelu_kernel_backward(g, x, w)[1],
                                                    lambda: (_g(2, 3, 4), _g(2, 3, 4, seed=1), _g(1, 3, 1, seed=2))),
    "embedding_dense_backward_float64": (lambda g, i: aten.embedding_dense_backward(g, i, 4, -1, False),
                                         lambda: (_g(3, 2, dtype=torch.float64), torch.tensor([0, 3, 0]))),
    "embedding_dense_backward_float64_freq": (lambda g, i: aten.embedding_dense_backward(g, i, 4, 3, True),
                                              lambda: (_g(3, 2, dtype=torch.float64), torch.tensor([0, 3, 0]))),
    "mode_int64_extremes": (lambda x: aten.mode(x, -1, True)[0],
                            lambda: (torch.tensor([[2**63 - 1, 2**63 - 2, 2**63 - 2, -2**63, 2**63 - 1],
                                                   [2**40 + 1, 2**40, 2**40 + 1, 3, 3]]),)),
    "mode_int64_extremes_index": (lambda x: aten.mode(x, -1)[1],
                                  lambda: (torch.tensor([[2**63 - 1, -2**63, 2**63 - 1, -2**63, -2**63]]),)),
}


def check_like_cpu(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == torch.float64:
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("mode", ["never", "fuse"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu(tpu, name, mode):
    fn, make = CASES[name]
    args = make()
    want = fn(*args)
    with _mode(mode):
        got = fn(*[a.to("tpu") for a in args]).cpu()
    check_like_cpu(got, want)


@pytest.mark.parametrize("op", [aten.huber_loss_backward.out, aten.smooth_l1_loss_backward.grad_input])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_loss_backward_out_writes_its_out_tensor(tpu, dtype, op):
    """Upstream's out= decompositions cast the out tensor for opmath: a half out= was written in a float32 copy
    and left with its [0] shape (or its old values: the fuzzer's smooth_l1 0-d finding). The functional
    decomposition is copied into it instead."""
    g, x, t = _g(2, 5, 3, dtype=dtype), _g(1, 1, 1, dtype=dtype, seed=1), _g(2, 1, 1, dtype=dtype, seed=2)
    for shape in [(0,), (2, 5, 3)]:
        want = op(g, x, t, 1, 0.5, grad_input=torch.full(shape, 7.0, dtype=dtype))
        out = torch.full(shape, 7.0, dtype=dtype, device=tpu)
        got = op(g.to(tpu), x.to(tpu), t.to(tpu), 1, 0.5, grad_input=out)
        assert got is out
        check_like_cpu(out.cpu(), want)
