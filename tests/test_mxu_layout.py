"""sim/mxu_layout.py: a fast DEFAULT dot with transposed operands left transposed has the C-order product's bits."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.sim import mxu, mxu_layout
from torchtpu.sim.mxu_round import round_operand
from torchtpu.sim.numerics import round_bf16

# the transposed products of the compiled GPT-2 / Llama training steps (hidden 128 and 256), then odd sizes
_SHAPES = [((512, 1024), (1024, 256), True, False), ((256, 1024), (1024, 512), False, True),
           ((1000, 512), (512, 256), True, False), ((8, 256, 64), (8, 64, 256), False, True),
           ((8, 64, 256), (8, 256, 256), True, False), ((128, 512), (512, 128), True, True),
           ((97, 300), (300, 131), True, False), ((3, 61, 257), (3, 257, 129), False, True),
           ((255, 129), (129, 67), True, True)]


def _operand(rng: np.random.Generator, shape: tuple[int, ...], swap: bool) -> np.ndarray:
    if not swap:
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.standard_normal((*shape[:-2], shape[-1], shape[-2]), dtype=np.float32).swapaxes(-1, -2)


@pytest.mark.parametrize(("a_shape", "b_shape", "ta", "tb"), _SHAPES)
def test_fast_dot_of_transposed_operands_has_the_c_order_bits(a_shape, b_shape, ta, tb):
    rng = np.random.default_rng(7)
    a, b = _operand(rng, a_shape, ta), _operand(rng, b_shape, tb)
    assert mxu_layout.transposed(a) == ta and mxu_layout.transposed(b) == tb
    got = mxu.matmul(a, b, mode="fast")
    want = mxu.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b), mode="fast")
    assert got.tobytes() == want.tobytes()
    # and both are the fast product (mxu_gemm's, or numpy's BLAS) of the rounded operands in C order
    assert want.tobytes() == mxu.blas_matmul(round_bf16(np.ascontiguousarray(a)),
                                             round_bf16(np.ascontiguousarray(b))).tobytes()


def test_a_layout_that_sums_differently_keeps_the_gather():
    def reordered(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # sums K backwards for a transposed lhs
        if mxu_layout.transposed(x):
            return np.matmul(x[..., ::-1].copy(), y[..., ::-1, :].copy())
        return np.matmul(x, y)

    assert not mxu_layout.same_bits((512, 1024), (1024, 256), True, False, -1, reordered)
    assert mxu_layout.same_bits((512, 1024), (1024, 256), True, False, -2, np.matmul)


def test_small_products_and_c_order_operands_are_not_probed():
    assert not mxu_layout.same_bits((16, 16), (16, 16), True, False, -3, np.matmul)
    assert mxu_layout.same_bits((512, 1024), (1024, 256), False, False, -3, np.matmul)


@pytest.mark.parametrize("slot", [None, "lhs"])
def test_round_operand_keeps_a_transposed_layout(slot):
    x = np.random.default_rng(1).standard_normal((3, 40, 70), dtype=np.float32).swapaxes(-1, -2)
    out = round_operand(x, slot, keep_transposed=True)
    assert mxu_layout.transposed(out)
    assert out.swapaxes(-1, -2).tobytes() == round_bf16(x.swapaxes(-1, -2)).tobytes()
    assert np.array_equal(out.view(np.uint32), round_bf16(np.ascontiguousarray(x)).view(np.uint32))
