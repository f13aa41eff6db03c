"""What PyTorch's test_modules.py (TestModule: test_forward, test_grad) found differing on tpu: float64 gelu/silu
computed in float32 and float64 convolutions through one bf16 MXU pass (gradcheck's finite differences gave wrong
Jacobians: silent wrong values), and fractional_max_pool2d/3d's `_random_samples` (CPU reads the first N rows and
checks the shape; the lowering raised a reshape ValueError or gave a result where CPU raises). Each case is
compared with CPU in every eager mode (DEFER_NEVER, LAUNCH_BLOCKING, DEFER_AND_FUSE) and under torch.compile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _outcome(fn: Callable[[str], Any], device: str) -> tuple[type, str] | list[torch.Tensor]:
    try:
        out = fn(device)
        return [t.detach().cpu() for t in (out if isinstance(out, (tuple, list)) else [out])]
    except Exception as e:  # noqa: BLE001 -- the class and words are what is compared
        return type(e), str(e).splitlines()[0]


def _same(got: Any, want: Any, exact: bool = True) -> bool:
    if isinstance(want, tuple):
        return isinstance(got, tuple) and got[0] is want[0] and want[1] in got[1]
    if isinstance(got, tuple) or len(got) != len(want):
        return False
    return all(g.dtype == w.dtype and g.shape == w.shape and (torch.equal(g, w) if exact else
               torch.allclose(g, w, rtol=1e-12, atol=1e-12)) for g, w in zip(got, want))


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _float64_value_and_grads(op: str) -> Callable[[str], list[torch.Tensor]]:
    def call(d: str) -> list[torch.Tensor]:
        x = torch.randn(2, 3, 6, 5, dtype=torch.float64, generator=_gen(0)).to(d).requires_grad_()
        w = torch.randn(4, 3, 3, 2, dtype=torch.float64, generator=_gen(1)).to(d).requires_grad_()
        if op == "conv2d":
            y = F.conv2d(x, w, padding=1)
        elif op == "conv_transpose2d":
            y = F.conv_transpose2d(x, w.transpose(0, 1).contiguous(), stride=2)
        elif op == "gelu":
            y = F.gelu(x)
        elif op == "gelu_tanh":
            y = F.gelu(x, approximate="tanh")
        else:
            y = F.silu(x)
        gy = torch.randn(y.shape, dtype=torch.float64, generator=_gen(2)).to(d)
        wanted = [x, w] if op.startswith("conv") else [x]
        return [y, *torch.autograd.grad(y, wanted, gy)]
    return call


FLOAT64 = ["conv2d", "conv_transpose2d", "gelu", "gelu_tanh", "silu"]


@pytest.mark.parametrize("op", FLOAT64)
def test_float64_values_and_gradients_match_cpu_in_every_mode(tpu, op):
    """float64 stays float64: within 1e-12 of CPU (the float32/bf16 paths were 5e-8 and 2e-2 off)."""
    fn = _float64_value_and_grads(op)
    want = _outcome(fn, "cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = _outcome(fn, "tpu")
        assert _same(got, want, exact=False), (mode, op)


@pytest.mark.parametrize("op", ["conv1d", "gelu", "silu"])
def test_float64_gradcheck_passes_on_tpu(tpu, op):
    """gradcheck's numeric Jacobian (finite differences of the forward) agrees with the analytic one."""
    x = torch.randn(1, 2, 5, dtype=torch.float64, generator=_gen(3)).to("tpu").requires_grad_()
    if op == "conv1d":
        w = torch.randn(3, 2, 2, dtype=torch.float64, generator=_gen(4)).to("tpu").requires_grad_()
        assert torch.autograd.gradcheck(F.conv1d, (x, w))
    else:
        assert torch.autograd.gradcheck(getattr(F, op), (x,))


def test_float64_conv_compiled_matches_cpu(tpu):
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.gelu(F.conv2d(x, w, padding=1))

    x = torch.randn(2, 3, 6, 5, dtype=torch.float64, generator=_gen(0))
    w = torch.randn(4, 3, 3, 2, dtype=torch.float64, generator=_gen(1))
    want = f(x, w)
    got = torch.compile(f, backend="tpu")(x.to("tpu"), w.to("tpu")).cpu()
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)


def _frac(nd: int, shape: tuple[int, ...], samples: tuple[int, ...], kernel: list[int] | None = None,
          output: list[int] | None = None, samples_dtype: torch.dtype = torch.float32) -> Callable[[str], Any]:
    def call(d: str) -> Any:
        x = torch.randn(shape, generator=_gen(5)).to(d)
        s = torch.rand(samples, generator=_gen(6)).to(samples_dtype).to(d)
        op = torch.ops.aten.fractional_max_pool2d if nd == 2 else torch.ops.aten.fractional_max_pool3d
        return op(x, kernel or [2] * nd, output or [4] * nd, s)
    return call


FRACTIONAL = {
    # values: more sample rows than the batch (CPU reads the first N; unbatched: the first row)
    "3d_unbatched_two_rows": _frac(3, (4, 7, 7, 7), (2, 4, 3)),
    "3d_batched_extra_row": _frac(3, (2, 4, 7, 7, 7), (3, 4, 3)),
    "2d_unbatched_three_rows": _frac(2, (4, 7, 7), (3, 4, 2)),
    "2d_batched": _frac(2, (2, 3, 7, 6), (2, 3, 2)),
    "3d_pool_ends_at_the_edge": _frac(3, (1, 2, 7, 7, 7), (1, 2, 3), [4, 4, 4], [4, 4, 4]),  # CPU: too large
    "2d_pool_ends_at_the_edge": _frac(2, (1, 2, 7, 7), (1, 2, 2), [4, 4], [4, 4]),  # CPU: fits
    "3d_pool_fits": _frac(3, (1, 2, 7, 7, 7), (1, 2, 3), [3, 4, 3], [4, 3, 4]),
    # CPU's errors (a silent result or a reshape/index error before)
    "3d_samples_last_dim_4": _frac(3, (2, 4, 7, 7, 7), (2, 4, 4)),
    "2d_samples_last_dim_3": _frac(2, (2, 4, 7, 7), (2, 4, 3)),
    "3d_samples_2_dims": _frac(3, (2, 4, 7, 7, 7), (8, 3)),
    "3d_samples_too_few_rows": _frac(3, (2, 4, 7, 7, 7), (1, 4, 3)),
    "3d_samples_channels": _frac(3, (2, 4, 7, 7, 7), (2, 5, 3)),
    "2d_samples_channels_unbatched": _frac(2, (4, 7, 7), (1, 3, 2)),
    "3d_input_3_dims": _frac(3, (4, 7, 7), (2, 4, 3)),
    "2d_input_2_dims": _frac(2, (7, 7), (1, 1, 2)),
    "3d_empty_channel": _frac(3, (2, 0, 7, 7, 7), (2, 0, 3)),
    "2d_pool_too_large": _frac(2, (2, 4, 7, 7), (2, 4, 2), [5, 5], [4, 4]),
    "3d_pool_too_large_before_samples": _frac(3, (2, 4, 7, 7, 7), (8, 3), [5, 2, 2], [4, 4, 4]),
    "3d_kernel_size_length": _frac(3, (2, 4, 7, 7, 7), (2, 4, 3), [2, 2, 2, 2]),
    "2d_output_size_length": _frac(2, (2, 4, 7, 7), (2, 4, 2), None, [4, 4, 4]),
    "2d_samples_dtype": _frac(2, (2, 4, 7, 7), (2, 4, 2), samples_dtype=torch.float64),
}


@pytest.mark.parametrize("name", sorted(FRACTIONAL))
def test_fractional_max_pool_samples_match_cpu_in_every_mode(tpu, name):
    fn = FRACTIONAL[name]
    want = _outcome(fn, "cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            for _ in range(2):
                got = _outcome(fn, "tpu")
                assert _same(got, want), (mode, got if isinstance(got, tuple) else "values", want if isinstance(
                    want, tuple) else "values")


def test_fractional_max_pool3d_unbatched_compiled_matches_cpu(tpu):
    def f(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.fractional_max_pool3d(x, [2, 2, 2], [4, 4, 4], s)[0]

    x = torch.randn(4, 7, 7, 7, generator=_gen(5))
    s = torch.rand(2, 4, 3, generator=_gen(6))
    got = torch.compile(f, backend="tpu")(x.to("tpu"), s.to("tpu")).cpu()
    assert torch.equal(got, f(x, s))
