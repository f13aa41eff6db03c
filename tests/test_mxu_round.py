"""sim/mxu_round.py: the vectorized operand rounding is numerics.round_bf16, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.sim import mxu, mxu_round
from torchtpu.sim.mxu_round import round_bits, round_operand
from torchtpu.sim.numerics import round_bf16, round_bf16_bits

_SPECIAL = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFF800001, 0x7FC00000, 0xFFC00000,
            0x7FFFFFFF, 0xFFFFFFFF, 0x7FBFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F7F8001,
            0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x007F8000, 0x007F7FFF,
            0x00808000, 0x00818000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x3F800000, 0xBF808000]


def _patterns() -> np.ndarray:
    rng = np.random.default_rng(0)
    around = np.array([p + d for p in _SPECIAL for d in (-2, -1, 0, 1, 2)], np.int64) % (1 << 32)
    sweep = np.arange(0, 1 << 32, 65521, dtype=np.uint64)  # every exponent, many mantissas
    return np.concatenate([np.array(_SPECIAL, np.uint32), around.astype(np.uint32), sweep.astype(np.uint32),
                           rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])


def test_round_bits_equals_round_bf16_bits_on_every_special_and_random_pattern():
    bits = _patterns()
    out = np.empty_like(bits)
    round_bits(bits, out)
    assert np.array_equal(out, round_bf16_bits(bits))


def test_round_bits_in_place():
    bits = _patterns()
    ref = round_bf16_bits(bits)
    round_bits(bits, bits)
    assert np.array_equal(bits, ref)


@pytest.mark.parametrize("layout", ["c", "transposed", "sliced", "3d_transposed"])
def test_round_operand_equals_round_bf16_in_every_layout(layout):
    bits = _patterns()[: 96 * 130]
    x = bits.view(np.float32).reshape(96, 130)
    x = {"c": x, "transposed": x.T, "sliced": x[::2, 3:], "3d_transposed": x.reshape(4, 24, 130).transpose(0, 2, 1)
         }[layout]
    got, ref = round_operand(x), round_bf16(x)
    assert got.flags.c_contiguous and got.dtype == np.float32 and got.shape == ref.shape
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))


def test_round_operand_other_dtypes_go_through_round_bf16():
    x = np.linspace(-3, 3, 60, dtype=np.float64).reshape(6, 10) / 7
    assert np.array_equal(round_operand(x).view(np.uint32), round_bf16(x).view(np.uint32))


def test_default_fast_matmul_is_the_fast_product_of_round_bf16_operands():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 70, 90)).astype(np.float32)
    b = rng.standard_normal((2, 90, 50)).astype(np.float32)
    a[0, 0, :3] = [np.nan, np.inf, 1e-39]
    b[1, :2, 0] = [-np.inf, 3e38]
    b_t = b.transpose(0, 2, 1).copy().transpose(0, 2, 1)  # the same values laid out as a transpose
    got = mxu.matmul(a, b, mode="fast")
    assert np.array_equal(mxu.matmul(a, b_t, mode="fast").view(np.uint32), got.view(np.uint32))
    with np.errstate(all="ignore"):
        ref = mxu.blas_matmul(round_bf16(a), round_bf16(b))
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("layout", ["pitch_2k", "pitch_4k_37_cols", "row_sliced", "batched", "batch_strided",
                                    "pitch_512_1000_cols", "pitch_256_batched"])
def test_blocked_gather_of_long_pitch_transposes_is_numpys_copy(layout):
    """`_gather` copies a transposed operand of >= _MIN_PITCH bytes between columns, or of >= _MIN_COLUMNS
    columns, in column blocks: the same values in C order as np.ascontiguousarray, also where the column count
    is no multiple of the block, the base's rows are sliced, or batch dimensions are strided; rounding it gives
    round_bf16's bits."""
    bits = _patterns()
    base = bits[: 8 * 300 * 1024].view(np.float32)
    x = {"pitch_2k": base[: 128 * 512].reshape(128, 512).T,           # (512, 128), columns 2 KiB apart
         "pitch_4k_37_cols": base[: 37 * 1024].reshape(37, 1024).T,   # 37 columns: a partial last block
         "row_sliced": base[: 300 * 1024].reshape(300, 1024)[5:290:3, 7:200].T,
         "batched": base[: 3 * 128 * 512].reshape(3, 128, 512).transpose(0, 2, 1),
         "batch_strided": base[: 6 * 300 * 256].reshape(6, 300, 256)[::2, :, 1:].transpose(0, 2, 1),
         "pitch_512_1000_cols": base[: 1000 * 128].reshape(1000, 128).T,  # (128, 1000), a 37-column tail
         "pitch_256_batched": base[: 8 * 250 * 64].reshape(8, 250, 64).transpose(0, 2, 1)}[layout]
    assert x.strides[-2] == 4 and not x.flags.c_contiguous
    assert x.strides[-1] >= mxu_round._MIN_PITCH or x.shape[-1] >= mxu_round._MIN_COLUMNS
    got = mxu_round._gather(x)
    assert got.flags.c_contiguous and np.array_equal(got.view(np.uint32), x.view(np.uint32))
    rounded, ref = round_operand(x), round_bf16(x)
    assert rounded.flags.c_contiguous and np.array_equal(rounded.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("layout", ["c", "transposed", "pitch_2k"])
def test_round_operand_into_a_slot_is_round_bf16_and_reuses_the_threads_scratch(layout):
    """With a slot, round_operand gives round_bf16's bits in a C-contiguous array over this thread's scratch for
    that slot: a later, smaller operand reuses the same memory, another slot or thread gets other memory, and
    an operand over _SCRATCH_MAX_BYTES gets a new array."""
    import threading

    bits = _patterns()
    base = bits[: 128 * 512].view(np.float32)
    x = {"c": base.reshape(128, 512), "transposed": base[: 96 * 130].reshape(96, 130).T,
         "pitch_2k": base.reshape(128, 512).T}[layout]
    got = round_operand(x, "lhs")
    assert got.flags.c_contiguous and got.shape == x.shape
    assert np.array_equal(got.view(np.uint32), round_bf16(x).view(np.uint32))
    small = round_operand(base[:60].reshape(6, 10), "lhs")
    assert np.shares_memory(small, got) and not np.shares_memory(round_operand(x, "rhs"), small)
    assert np.array_equal(small.view(np.uint32), round_bf16(base[:60].reshape(6, 10)).view(np.uint32))
    other = []
    worker = threading.Thread(target=lambda: other.append(round_operand(x, "lhs")))
    worker.start()
    worker.join()
    assert not np.shares_memory(other[0], small)
    assert np.array_equal(other[0].view(np.uint32), round_bf16(x).view(np.uint32))
    big = np.zeros(mxu_round._SCRATCH_MAX_BYTES // 4 + 1, np.float32).reshape(1, -1)
    assert not np.shares_memory(round_operand(big, "lhs"), round_operand(x, "lhs"))


def test_fast_default_matmuls_in_a_row_do_not_see_each_others_scratch():
    """Two DEFAULT fast products of different shapes, then the first again: each equals the fast product of
    freshly rounded operands (the scratch of one call is never read by the next)."""
    rng = np.random.default_rng(3)
    a1, b1 = rng.standard_normal((80, 300)).astype(np.float32), rng.standard_normal((300, 40)).astype(np.float32)
    a2, b2 = rng.standard_normal((30, 20)).astype(np.float32), rng.standard_normal((50, 20)).astype(np.float32).T
    r1 = mxu.matmul(a1, b1, mode="fast")
    r2 = mxu.matmul(a2, b2, mode="fast")
    again = mxu.matmul(a1, b1.T.copy().T, mode="fast")
    with np.errstate(all="ignore"):
        assert np.array_equal(r1.view(np.uint32), mxu.blas_matmul(round_bf16(a1), round_bf16(b1)).view(np.uint32))
        assert np.array_equal(r2.view(np.uint32), mxu.blas_matmul(round_bf16(a2), round_bf16(b2)).view(np.uint32))
    assert np.array_equal(again.view(np.uint32), r1.view(np.uint32))
    assert not np.shares_memory(r1, r2)
