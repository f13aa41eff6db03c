"""sim/mxu_gather.py: MXU operands gathered into C order through PyTorch's blocked copy where numpy's is slow
(transposes with a power-of-two row pitch) are the same bits, and rounding the copy in place never touches
the caller's operand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.sim import mxu, mxu_gather
from torchtpu.sim.mxu_round import round_operand
from torchtpu.sim.numerics import round_bf16


def _layouts() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    base = rng.standard_normal((128, 512), dtype=np.float32)
    wide = rng.standard_normal((256, 1024), dtype=np.float32)
    odd = rng.standard_normal((128, 1000), dtype=np.float32)
    batched = rng.standard_normal((2, 4, 64, 256), dtype=np.float32)
    special = base.copy()
    special[0, :6] = [np.nan, -np.inf, np.inf, -0.0, 1e-40, 3.4e38]
    return [base.T, wide.T, odd.T, batched.transpose(0, 1, 3, 2), special.T, base, base[:, ::2].T,
            wide.T[::2], np.asarray(base[0, 0]), base[:64, :256].T]


def test_transposed_power_of_two_pitch_takes_the_blocked_copy() -> None:
    x = np.zeros((128, 512), np.float32).T  # (512, 128) with a 2 KiB stride
    assert mxu_gather.blocked(x)
    assert not mxu_gather.blocked(np.zeros((128, 1000), np.float32).T)  # 4000-byte pitch: numpy's copy
    assert not mxu_gather.blocked(np.zeros((512, 128), np.float32))  # already C order
    assert not mxu_gather.blocked(np.zeros((16, 64), np.float32).T)  # too small to pay torch's dispatch
    assert not mxu_gather.blocked(np.zeros((128, 512), np.float64).T)


@pytest.mark.parametrize("k", range(len(_layouts())))
def test_c_order_is_numpys_copy(k: int) -> None:
    x = _layouts()[k]
    before = x.copy()
    got = mxu_gather.c_order(x)
    want = np.ascontiguousarray(x)
    assert got.flags.c_contiguous and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(x.view(np.uint32) if x.flags.c_contiguous else x.copy().view(np.uint32),
                          before.view(np.uint32))


@pytest.mark.parametrize("k", range(len(_layouts())))
def test_round_operand_same_bits_input_untouched(k: int) -> None:
    x = _layouts()[k]
    before = np.array(x, copy=True)
    got = round_operand(x)
    want = round_bf16(np.ascontiguousarray(x))
    assert got.flags.c_contiguous
    assert np.array_equal(np.asarray(got).view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
    assert np.array_equal(np.array(x, copy=True).view(np.uint32), before.view(np.uint32))  # rounded a copy


def test_read_only_operand_uses_numpy() -> None:
    x = np.ones((128, 512), np.float32).T
    x.flags.writeable = False
    assert np.array_equal(mxu_gather.c_order(x), np.ascontiguousarray(x))
    assert np.array_equal(round_operand(x), np.ones((512, 128), np.float32))


def test_dot_with_transposed_operand_same_bits_both_copies() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 512), dtype=np.float32).T  # (512, 128), 2 KiB pitch
    b = rng.standard_normal((128, 256), dtype=np.float32)
    with_blocked = mxu.matmul(a[None], b[None], precision="DEFAULT", out_dtype=np.float32, mode="fast")
    mxu_gather.ENABLED = False
    try:
        with_numpy = mxu.matmul(a[None], b[None], precision="DEFAULT", out_dtype=np.float32, mode="fast")
    finally:
        mxu_gather.ENABLED = True
    assert np.array_equal(with_blocked.view(np.uint32), with_numpy.view(np.uint32))
    ref = torch.from_numpy(round_bf16(np.ascontiguousarray(a))) @ torch.from_numpy(round_bf16(b))
    torch.testing.assert_close(torch.from_numpy(with_blocked[0]), ref, rtol=1e-5, atol=1e-4)
