"""Errors and values PyTorch's test_torch.py (TestTorchDeviceType) found differing on tpu: each call raises CPU's
exception class and message, or gives CPU's values and dtype, in every eager mode (DEFER_NEVER, LAUNCH_BLOCKING,
DEFER_AND_FUSE); each case runs twice per mode, so a cached program must check as the first trace did."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _outcome(fn: Callable[[str], Any], device: str) -> tuple[type, str] | torch.Tensor:
    try:
        return fn(device).cpu()
    except RuntimeError as e:  # the device's ExecutionError is a RuntimeError naming the IR op after CPU's words
        return RuntimeError, str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return type(e), str(e).splitlines()[0]


def _ones_mask(d: str, dtype: torch.dtype = torch.bool) -> torch.Tensor:
    return torch.tensor([1, 0, 1, 1], dtype=dtype, device=d)


REFUSED: dict[str, Callable[[str], Any]] = {
    # masked_select's mask must be bool (uint8 too is refused now); it selected silently before
    "masked_select_uint8_mask": lambda d: torch.arange(4.0, device=d).masked_select(_ones_mask(d, torch.uint8)),
    "masked_select_int16_mask": lambda d: torch.arange(4.0, device=d).masked_select(_ones_mask(d, torch.int16)),
    # masked_scatter with fewer source elements than ones in the mask: the last element was repeated before
    "masked_scatter_short_source": lambda d: torch.zeros(4, device=d).masked_scatter(_ones_mask(d),
                                                                                     torch.ones(2, device=d)),
    "masked_scatter_empty_source": lambda d: torch.zeros(4, device=d).masked_scatter_(_ones_mask(d),
                                                                                      torch.ones(0, device=d)),
    # the samplers' parameter checks (a negative lambda gave negative samples, p=1.5 gave ones)
    "exponential_negative": lambda d: torch.empty(3, device=d).exponential_(-0.5),
    "exponential_zero": lambda d: torch.empty(3, device=d).exponential_(0.0),
    "exponential_nan": lambda d: torch.empty(3, device=d).exponential_(float("nan")),
    "cauchy_zero_sigma": lambda d: torch.empty(3, device=d).cauchy_(0.0, 0.0),
    "cauchy_negative_sigma": lambda d: torch.empty(3, device=d).cauchy_(1.0, -2.5),
    "log_normal_zero_std": lambda d: torch.empty(3, device=d).log_normal_(1.0, 0.0),
    "geometric_zero": lambda d: torch.empty(3, device=d).geometric_(0.0),
    "geometric_one": lambda d: torch.empty(3, device=d).geometric_(1.0),
    "geometric_above_one": lambda d: torch.empty(3, device=d).geometric_(1.5),
    # index_fill of a complex value into a non-complex tensor (bool filled True silently before)
    "index_fill_complex_into_float": lambda d: torch.zeros(2, 2, device=d).index_fill_(
        1, torch.tensor([0], device=d), 1 + 1j),
    "index_fill_complex_into_bool": lambda d: torch.zeros(2, 2, dtype=torch.bool, device=d).index_fill_(
        1, torch.tensor([0], device=d), 1 + 1j),
    "index_fill_complex_into_int": lambda d: torch.zeros(2, 2, dtype=torch.int32, device=d).index_fill(
        0, torch.tensor([1], device=d), 2j),
    "index_fill_complex_tensor_value": lambda d: torch.zeros(2, 2, device=d).index_fill(
        0, torch.tensor([1], device=d), torch.tensor(1 + 1j, device=d)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_as_cpu_in_every_mode(tpu, name):
    fn = REFUSED[name]
    want = _outcome(fn, "cpu")
    assert isinstance(want, tuple), f"CPU gave a value for {name}"
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            for _ in range(2):
                got = _outcome(fn, "tpu")
                assert isinstance(got, tuple), f"{mode}: tpu gave a value"
                assert got[0] is want[0] and want[1] in got[1], (mode, got, want)


def _copy_into_bits(d: str, dst_dtype: torch.dtype, src_dtype: torch.dtype, dst_bits: str, src_bits: str,
                    transpose: bool) -> torch.Tensor:
    """dst with `dst_bits` ('n' negative, 'c' conjugate) .copy_(src with `src_bits`); returns dst's plain values."""
    src = torch.tensor([[1.5, -2.0, 3.0], [0.25, 5.0, -6.0], [7.0, 8.5, 9.0]]).to(src_dtype)
    if src_dtype.is_complex:
        src = src + 1j * torch.tensor([[2.0, 0.5, -1.0], [3.0, -4.0, 1.0], [0.0, 2.5, -3.5]])
    src = src.to(d)
    if transpose:
        src = src.transpose(0, 1)
    dst = torch.zeros(3, 3, dtype=dst_dtype, device=d)
    view_src, view_dst = src, dst
    for bit in src_bits:
        view_src = view_src.conj() if bit == "c" else torch._neg_view(view_src)
    for bit in dst_bits:
        view_dst = view_dst.conj() if bit == "c" else torch._neg_view(view_dst)
    view_dst.copy_(view_src)
    return dst


COPY_CASES = [
    (dst_dt, src_dt, dst_bits, src_bits, transpose)
    for dst_dt, src_dt in [(torch.float32, torch.float32), (torch.float64, torch.float32), (torch.int64, torch.int32),
                           (torch.complex64, torch.complex64), (torch.complex128, torch.complex64)]
    for dst_bits in ("", "n", "c", "nc") for src_bits in ("", "n", "c", "nc") for transpose in (False, True)
    if (dst_dt.is_complex or "c" not in dst_bits) and (src_dt.is_complex or "c" not in src_bits)
    and (dst_bits or src_bits)
]


@pytest.mark.parametrize("case", COPY_CASES, ids=lambda c: f"{str(c[0])[6:]}{c[2] or '-'}_{str(c[1])[6:]}"
                         f"{c[3] or '-'}{'_T' if c[4] else ''}")
def test_copy_into_math_bit_views_matches_cpu_in_every_mode(tpu, case):
    """copy_ into a negative or conjugate view writes the bits' inverse into the memory (the destination's bits
    were ignored before: `dst._neg_view().copy_(src)` left dst == src, CPU's dst == -src)."""
    want = _copy_into_bits("cpu", *case)
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            for _ in range(2):
                got = _copy_into_bits("tpu", *case).cpu()
                assert got.dtype == want.dtype
                assert torch.equal(got, want), (mode, got, want)


def test_masked_scatter_values_unchanged_where_the_source_suffices(tpu):
    """The check leaves the values: exactly as many source elements as ones, more, and an empty mask."""
    def call(d: str) -> list[torch.Tensor]:
        dest = torch.arange(1.0, 11.0, device=d)
        mask = torch.tensor([0, 0, 0, 0, 1, 0, 1, 0, 1, 0], dtype=torch.bool, device=d)
        return [dest.clone().masked_scatter_(mask, torch.tensor([7.0, 8.0, 9.0], device=d)),
                dest.clone().masked_scatter_(mask, torch.arange(20.0, device=d)),
                torch.empty(5, 0, 5, device=d).masked_scatter_(torch.ones(5, 1, 5, dtype=torch.bool, device=d),
                                                              torch.empty(0, device=d)),
                dest.clone().masked_scatter_(torch.zeros(10, dtype=torch.bool, device=d), torch.empty(0, device=d))]

    want = call("cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = [t.cpu() for t in call("tpu")]
        for g, w in zip(got, want):
            assert g.shape == w.shape and torch.equal(g, w), mode


def test_samplers_still_sample_at_valid_parameters(tpu):
    """The parameter checks pass the values CPU accepts: an infinite lambda gives 0, an infinite median inf."""
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            assert torch.empty(2, device="tpu").exponential_(float("inf")).cpu().tolist() == [0.0, 0.0]
            assert torch.empty(1, device="tpu").cauchy_(float("inf"), 0.5).item() == float("inf")
            g = torch.empty(1000, device="tpu").geometric_(0.5).cpu()
            assert g.min().item() >= 1 and 1.7 < g.mean().item() < 2.3
            assert torch.empty(100, device="tpu").log_normal_(0.0, 0.5).cpu().min().item() > 0


@pytest.mark.parametrize("dim", [0, -1])
def test_gather_zero_dim_index_of_a_vector_matches_cpu_in_every_mode(tpu, dim):
    """A 0-d index of a 1-d tensor gathers one element into a 0-d result (the IR refused the rank-0 index)."""
    def call(d: str) -> torch.Tensor:
        return torch.gather(torch.tensor([4.0, -1.5, 7.0], device=d), dim, torch.tensor(2, device=d))

    want = call("cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = call("tpu").cpu()
        assert got.shape == want.shape == () and got.dtype == want.dtype and torch.equal(got, want), mode
    def out_of_bounds(d: str) -> torch.Tensor:
        return torch.gather(torch.arange(3.0, device=d), 0, torch.tensor(3, device=d))

    want_error, got_error = _outcome(out_of_bounds, "cpu"), _outcome(out_of_bounds, "tpu")
    assert got_error[0] is want_error[0] and want_error[1] in got_error[1], (got_error, want_error)
