"""Differential test: every IR op, run by the sim and the pjrt(cpu) drivers on the same Programs, agrees."""

from __future__ import annotations

import numpy as np
import pytest
from pjrt_cases import CASES, IR_DTYPE, f
from pjrt_run import assert_same, run
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.pjrt.emit import NP_DTYPES


def _phase(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    inner = np.sum(np.conj(got) * want, axis=-2, keepdims=True)
    return np.where(np.abs(inner) > 0, inner / np.maximum(np.abs(inner), 1e-30), 1)


def _align_svd_vh(u: np.ndarray, u_want: np.ndarray, vh: np.ndarray, vh_want: np.ndarray, k: int) -> np.ndarray:
    """vh's first k rows take the conjugate of u's column factors; rows past k (full_matrices) align alone."""
    phase = np.swapaxes(_phase(u[..., :k], u_want[..., :k]), -1, -2)  # (..., k, 1)
    out = vh.astype(np.complex128 if vh.dtype.kind == "c" else np.float64)
    out[..., :k, :] = out[..., :k, :] * np.conj(phase)
    if vh.shape[-2] > k:
        rest = np.swapaxes(out[..., k:, :], -1, -2)
        out[..., k:, :] = np.swapaxes(_align_phase(rest, np.swapaxes(vh_want[..., k:, :], -1, -2)), -1, -2)
    return out.astype(vh.dtype)


def _align_phase(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Eigen- and singular vectors are defined up to a unit factor per column (LAPACK builds pick different
    signs): rotate each of `got`'s columns onto `want`'s before comparing."""
    return (got * _phase(got, want)).astype(got.dtype)


def _nan_whole_matrix(a: np.ndarray) -> np.ndarray:
    bad = np.isnan(a).any(axis=(-2, -1), keepdims=True)
    return np.where(bad, np.nan, a).astype(a.dtype)


def _outputs(op: str, variant) -> int:
    """How many outputs the variant's op gives (a lowered op's program holds its expansion, not the op)."""
    b = Builder()
    return len(b.emit(op, [b.input(a.shape, IR_DTYPE[a.dtype]) for a in variant.inputs], **variant.attrs))


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_sim(op, sim, pjrt):
    for case in CASES[op]:
        program, inputs = case.program()
        want = run(sim, program, inputs)
        got = run(pjrt, program, inputs)
        k = 0
        for vi, variant in enumerate(case.variants):
            n = _outputs(op, variant)
            for j in range(n):
                kinds = [x.dtype.name + str(x.shape) for x in variant.inputs]
                what = f"{op} variant {vi} output {j}: inputs {kinds} attrs {variant.attrs}\ninputs: {variant.inputs}"
                g, w = got[k], want[k]
                if op == "cholesky":  # a failed factorization: the sim keeps the factor up to the failing minor
                    w = _nan_whole_matrix(w)  # (linalg's info), XLA's is NaN throughout (info 1 on pjrt)
                if (op, j) in (("eig", 1), ("eigh", 1), ("svd", 0)):
                    g = _align_phase(got[k], want[k])
                elif (op, j) == ("svd", 2):
                    g = _align_svd_vh(got[k - 2], want[k - 2], got[k], want[k], got[k - 1].shape[-1])
                assert_same(g, w, case.rtol, case.atol, what)
                k += 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_division_by_a_broadcast_scalar_is_correctly_rounded(dtype, sim, pjrt):
    """XLA rewrites x / broadcast(s) as x * broadcast(1 / s): one rounding more, off by an ulp in about a third of
    float32 quotients. ATen and the sim divide, so the pjrt emitter keeps such a divisor behind a barrier."""
    n = 4096
    b = Builder()
    x, s = b.input((n,), dtype), b.input((), dtype)
    (sb,) = b.emit("broadcast_in_dim", [s], shape=(n,), broadcast_dimensions=())
    (q,) = b.emit("divide", [x, sb])
    (fq,) = b.emit("floor_divide", [x, sb])
    program = b.finish([q, fq], name="divide_by_scalar")
    xs = f((n,), -100, 100, np.float64).astype(NP_DTYPES[dtype])
    for divisor in (3.0, 7.0, 0.1):
        inputs = [xs, np.array(divisor, NP_DTYPES[dtype])]
        want, got = run(sim, program, inputs), run(pjrt, program, inputs)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g.view(np.uint8), w.view(np.uint8)), (dtype, divisor, np.sum(g != w))
