"""IR op `while` on the sim finishes long loops in a compiled numba loop (drivers/sim/while_compiled.py): the
orthogonal polynomials give the same bits as the interpreted loop over a range of n (around the hand-over trip
and far past it) and x (|x| = 1, 0, NaN, inf, n < 0, fractional and NaN n), in every eager mode and under
torch.compile, and a degree of 2^20 takes seconds, not minutes."""

from __future__ import annotations

import math
import time

import pytest
import torch
from refusal_cases import MODES
from torchtpu.drivers.sim import kernels_control, while_compiled

FNS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
       "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
       "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
       "legendre_polynomial_p")


def _grid(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(40, generator=g, dtype=dtype) * 2,
                   torch.tensor([1.0, -1.0, 0.0, math.nan, math.inf, -math.inf, 0.5, 1.5, -3.0], dtype=dtype)])
    n = torch.tensor([-3.0, 0.0, 1.0, 2.0, 7.0, 63.0, 64.0, 65.0, 66.0, 300.0, 2.5, math.nan], dtype=dtype)
    return torch.broadcast_tensors(x[:, None], n[None, :])


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    def run(fn, *args):  # noqa: ANN001, ANN202
        with monkeypatch.context() as m:
            m.setattr(kernels_control, "INTERPRETED_TRIPS", 1 << 40)
            return fn(*args)
    return run


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", MODES)
def test_compiled_loop_equals_interpreted(dtype: torch.dtype, mode: str, interpreted) -> None:  # noqa: ANN001
    x, n = _grid(dtype)
    with torch.tpu.eager_mode(mode):
        for name in FNS:
            fn = getattr(torch.special, name)
            want = interpreted(lambda fn=fn: fn(x.to("tpu"), n.to("tpu")).cpu())
            got = fn(x.to("tpu"), n.to("tpu")).cpu()
            _same(got, want)
            # and still CPU's values, to what the interpreted loop already had: a few ulps per step, n * eps in
            # the trigonometric forms (n = 300 here), away from overflow, where those ulps decide between a huge
            # value and inf
            cpu = fn(x, n)
            keep = ~(cpu.abs() > 1e30)
            single = dtype == torch.float32
            torch.testing.assert_close(got[keep], cpu[keep], rtol=1e-3 if single else 1e-9,
                                       atol=1e-4 if single else 1e-12, equal_nan=True,
                                       msg=lambda m, name=name: f"{name}: {m}")


def test_compiled_loop_under_torch_compile(interpreted) -> None:  # noqa: ANN001
    x, n = _grid(torch.float32)
    for name in ("legendre_polynomial_p", "hermite_polynomial_h", "chebyshev_polynomial_u"):
        torch._dynamo.reset()
        fn = torch.compile(getattr(torch.special, name), backend="tpu", dynamic=False)
        _same(fn(x.to("tpu"), n.to("tpu")).cpu(), interpreted(lambda name=name: getattr(torch.special, name)(
            x.to("tpu"), n.to("tpu")).cpu()))


def test_regions_with_other_ops_stay_interpreted() -> None:
    """An op without a compiled form (here `sine`) leaves the loop to the interpreter."""
    from torchtpu.drivers.ir import Builder

    b = Builder()
    v = b.input((), "float32")
    program = b.finish([b.emit("sine", [v])[0]], name="region")
    assert while_compiled.compiled(program, program) is None


def test_degree_2_to_20_is_fast() -> None:
    x = torch.linspace(-0.99, 0.99, 100)
    n = torch.full((100,), float(1 << 20))
    start = time.perf_counter()
    got = torch.special.legendre_polynomial_p(x.to("tpu"), n.to("tpu")).cpu()
    assert time.perf_counter() - start < 30.0  # interpreted: ~100 s
    torch.testing.assert_close(got, torch.special.legendre_polynomial_p(x, n), rtol=1e-3, atol=1e-5)
