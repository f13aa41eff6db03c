"""random_(from, to) / random_(to) on tpu against CPU: ATen's errors (class and words) and precision warnings for
every dtype and bound, and values: every one in [from, to) (exact integers: int32 near 2**31 and int64 spans used
to round through float32 and leave the range), covering the range, and the same draws in every eager mode and
under torch.compile for the same seed (ops/random_ints.py)."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchtpu  # noqa: F401

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64, torch.bool]
BOUNDS = [(0, 42), (-42, 0), (5, 3), (0, 0), (0, None), (INT64_MIN, None), (INT64_MIN, INT64_MAX), (0, 2**31 - 1),
          (-42, 2**40), (2**62, 2**62 + 7), (-(2**31), 2**31 - 1), (2**53 - 3, None)]
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"]


def _call(device: str, dtype: torch.dtype, frm: int, to: int | None) -> tuple[object, list[str]]:
    t = torch.empty(3000, dtype=dtype, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t.random_(frm, to)
        except (RuntimeError, NotImplementedError) as exc:
            return exc, []
    return t.cpu().double(), [str(w.message).split(" (Triggered")[0] for w in caught]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bounds_errors_and_warnings_match_cpu(dtype: torch.dtype) -> None:
    for frm, to in BOUNDS:
        want, want_warn = _call("cpu", dtype, frm, to)
        got, got_warn = _call("tpu", dtype, frm, to)
        what = f"random_({frm}, {to}) on {dtype}"
        if isinstance(want, Exception):
            assert type(got) is type(want), f"{what}: {got!r} vs CPU's {want!r}"
            words = str(want).split(" for ")[0].replace("_cpu", "")
            assert str(got).startswith(words), f"{what}: {got} vs CPU's {want}"
            continue
        assert isinstance(got, torch.Tensor), f"{what}: {got!r}"
        assert got_warn == want_warn, what
        hi = to if to is not None else float("inf")
        lo_cpu, hi_cpu = want.min().item(), want.max().item()
        assert got.min().item() >= min(frm, lo_cpu) and got.max().item() <= max(hi_cpu, hi - 1 if to else hi), what
        span = hi_cpu - lo_cpu  # the range is covered as CPU covers it (3,000 draws: within 2% of the span)
        lo, hi = got.min().item(), got.max().item()
        assert abs(lo - lo_cpu) <= 0.02 * span + 1 and abs(hi - hi_cpu) <= 0.02 * span + 1, \
            f"{what}: [{lo}, {hi}] vs CPU's [{lo_cpu}, {hi_cpu}]"


def test_exact_integers_at_int32_max() -> None:
    """to = 2**31 - 1 on int32: every value below it (a float32 path rounded 2**31 - 2 up and wrapped)."""
    t = torch.empty(20000, dtype=torch.int32, device="tpu").random_(2**31 - 100, 2**31 - 1).cpu()
    assert t.min().item() >= 2**31 - 100 and t.max().item() == 2**31 - 2
    assert t.unique().numel() == 99


@pytest.mark.parametrize("mode", MODES)
def test_modes_draw_the_same(mode: str) -> None:
    def fn(t: torch.Tensor) -> torch.Tensor:
        return t.random_(-5, 2**40) * 1

    def run(m: str) -> torch.Tensor:
        torch.manual_seed(11)
        t = torch.zeros(64, dtype=torch.int64, device="tpu")
        if m == "compile":
            torch._dynamo.reset()
            return torch.compile(fn, backend="tpu")(t).cpu()
        with torch.tpu.eager_mode(m):
            return fn(t).cpu()

    got, ref = run(mode), run("DEFER_NEVER")
    assert got.min().item() >= -5 and got.max().item() < 2**40
    assert torch.equal(got, ref)
