"""Calls CPU PyTorch crashes on (fuzz/overloads.py: CPU_CRASHES): the fuzzer's rule names each call found so far, so
a seeded run completes, and tpu refuses the call with the words CPU's public API uses for the same mistake."""

from __future__ import annotations

import re

import pytest
import torch
from refusal_cases import MODES

import torchtpu  # noqa: F401
from torchtpu.fuzz.args import Call, TensorArg, make_call
from torchtpu.fuzz.overloads import cpu_crashes, registered
from torchtpu.fuzz.runner import call_rng


def _call(name: str, seed: int, index: int):  # noqa: ANN202 - a fuzz Call
    op = {str(o): o for o in registered()}[name]
    return make_call(op, call_rng(seed, name, index), seed)


@pytest.mark.parametrize(("name", "seed", "index"), [
    ("aten._fft_c2r.default", 4, 2),  # last_dim_size 0: segfault
    ("aten.batch_norm_backward.default", 5, 1),  # update=False without running_var: segfault
    ("aten.adaptive_max_pool2d_backward.default", 4, 2),  # index -2: heap corruption
    ("aten._pdist_backward.default", 8, 0),  # grad float32[1, 2, 3]: reads outside grad's buffer
    ("aten._native_batch_norm_legit.no_stats_out", 7, 2),  # training=False without stats: segfault
    ("aten._fft_r2c.default", 9, 1),  # dims [-3, -2]: segfault
    ("aten.smooth_l1_loss_backward.default", 9, 2),  # int16 with beta NaN: SIGFPE
    ("aten._cholesky_solve_helper.out", 12, 2),  # A of 3x2 matrices: heap corruption
    ("aten._native_batch_norm_legit_no_training.default", 28, 1),  # running stats of shape [0]: segfault
    ("aten.lcm.default", 41, 2),  # int64 -2^63 with 2^63 - 1: gcd -1, INT_MIN / -1 is SIGFPE
    ("aten.lcm_.default", 44, 0),  # the same in int32
    ("aten._log_softmax_backward_data.out", 65, 1),  # grad [1, 1, 0], output [2], dim 1: SIGFPE
])
def test_rule_names_the_crashing_call(name: str, seed: int, index: int) -> None:
    assert cpu_crashes(_call(name, seed, index)) is not None


def test_softmax_backward_rule_leaves_empty_grads_of_output_shape_to_the_comparison() -> None:
    backward = {str(o): o for o in registered()}["aten._softmax_backward_data.default"]

    def call(grad: tuple, output: tuple, dim: int) -> Call:
        return Call(backward, [TensorArg(torch.ones(grad)), TensorArg(torch.ones(output)), dim, torch.float32])

    for grad, output, dim in (((1, 1, 0), (1, 1, 0), 1), ((1, 1, 0), (2,), 2), ((0,), (2,), 0), ((2,), (3,), 0)):
        assert cpu_crashes(call(grad, output, dim)) is None, (grad, output, dim)
    for grad, output, dim in (((1, 1, 0), (2,), 1), ((1, 0, 1), (2,), 0), ((1, 0), (3,), 0)):
        assert cpu_crashes(call(grad, output, dim)) is not None, (grad, output, dim)


def test_rule_leaves_valid_pool_indices_to_the_comparison() -> None:
    assert cpu_crashes(_call("aten.adaptive_max_pool2d_backward.default", 4, 0)) is None  # index 0 of a 3x4 plane


def test_rule_leaves_cholesky_solve_operands_of_matching_shapes_to_the_comparison() -> None:
    helper = {str(o): o for o in registered()}["aten._cholesky_solve_helper.default"]

    def call(b: tuple, a: tuple) -> Call:
        return Call(helper, [TensorArg(torch.ones(b)), TensorArg(torch.ones(a)), False])

    assert cpu_crashes(call((2, 3, 2), (2, 3, 3))) is None
    for b, a in (((3, 2), (3, 2)), ((2, 2), (3, 3)), ((1, 3, 2), (2, 3, 3)), ((3,), (3, 3))):
        assert cpu_crashes(call(b, a)) is not None, (b, a)


def test_lcm_rule_skips_only_a_minimum_whose_gcd_is_minus_one() -> None:
    lcm = {str(o): o for o in registered()}["aten.lcm.default"]

    def call(a: list[int], b: list[int], dtype: torch.dtype = torch.int64) -> Call:
        return Call(lcm, [TensorArg(torch.tensor(a, dtype=dtype)), TensorArg(torch.tensor(b, dtype=dtype))])

    lo, hi = torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).max
    assert cpu_crashes(call([lo, 3], [hi, 5])) is not None
    assert cpu_crashes(call([-2**31], [2**31 - 1], torch.int32)) is not None
    for a, b in (([lo, 3], [8, hi]), ([lo], [-1]), ([lo], [0]), ([hi], [lo])):
        assert cpu_crashes(call(a, b)) is None, (a, b)
        assert torch.lcm(torch.tensor(a), torch.tensor(b)).shape == (len(a),)  # CPU survives these
    assert cpu_crashes(call([-2**31], [2**31 - 1])) is None  # int64: no wrap


@pytest.mark.parametrize("mode", MODES)
def test_c2r_without_data_points_refused_in_irfft_words(mode: str) -> None:
    x = torch.ones(3, 1, dtype=torch.complex64)
    with pytest.raises(RuntimeError) as cpu:
        torch.fft.irfft(x, n=0, dim=0)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match=re.escape(str(cpu.value).split("\n")[0])):
        torch.ops.aten._fft_c2r.default(x.to("tpu"), [-2], 1, 0)
        torch.tpu.synchronize()


def test_polynomial_degree_past_the_limit_is_skipped_where_cpu_loops() -> None:
    assert cpu_crashes(_call("aten.special_legendre_polynomial_p.n_scalar", 6, 0)) is not None  # n = 2^40: hangs
    assert cpu_crashes(_call("aten.special_legendre_polynomial_p.n_scalar", 6, 1)) is None  # n = -0.877


@pytest.mark.parametrize("mode", MODES)
def test_fft_negative_dims_computed_as_wrapped(mode: str) -> None:
    x = torch.randn(4, 2, 2, dtype=torch.float64)
    with torch.tpu.eager_mode(mode):
        r2c = torch.ops.aten._fft_r2c.default(x.to("tpu"), [-3, -2], 0, True).cpu()
        c2c = torch.ops.aten._fft_c2c.default(x.to(torch.complex128).to("tpu"), [-3, -2], 0, True).cpu()
    torch.testing.assert_close(r2c, torch.ops.aten._fft_r2c.default(x, [0, 1], 0, True))
    torch.testing.assert_close(c2c, torch.ops.aten._fft_c2c.default(x.to(torch.complex128), [0, 1], 0, True))
