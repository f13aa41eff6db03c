"""Predicted vs published MFU (tpu-facts section 4): every case within 15%, multislice trend reproduced."""

import pytest
from torchtpu.perfmodel import simcost
from torchtpu.perfmodel.calibration import DEFAULT
from torchtpu.perfmodel.published import CASES, cases
from torchtpu.perfmodel.validation import fit_grid, format_table, validate

TOLERANCE = 0.15


@pytest.fixture(scope="module")
def rows():
    return validate()


def test_every_published_case_within_15_percent(rows, record_table):
    table = format_table(rows)
    record_table(f"kernel costs from: {simcost.source('v5e')}\n{table}")
    print(table)
    bad = [(r.case.id, f"{100 * r.rel_error:+.1f}%") for r in rows if abs(r.rel_error) > TOLERANCE]
    assert not bad, bad
    assert len(rows) == len(CASES) == 35
    assert {r.case.group for r in rows} == {"v5e multislice", "v5p dense", "v6e"}


def test_multislice_trend_is_reproduced(rows):
    """Per-chip throughput across 1 -> 32 slices: falls monotonically and by about the published amount."""
    for model in ("maxtext-16b", "maxtext-32b", "maxtext-64b", "maxtext-128b"):
        series = [r for r in rows if r.case.group == "v5e multislice" and r.case.model == model]
        assert [r.case.slices for r in series] == [1, 2, 4, 8, 16, 32]
        tput = [r.report.tokens_per_second_per_chip for r in series]
        assert all(a >= b for a, b in zip(tput, tput[1:])), model
        drop_pred = series[-1].predicted / series[0].predicted
        drop_pub = series[-1].published / series[0].published
        assert abs(drop_pred - drop_pub) < 0.08, (model, drop_pred, drop_pub)


def test_published_flop_convention_is_full_attention():
    v6e = cases("v6e")[0]
    assert v6e.convention == "full"
    # the v6e log line: TFLOP/s per device x step seconds per token = the full-attention MaxText count
    assert v6e.tflops_per_chip == pytest.approx(462.297)


def test_fit_grid_keeps_the_default_near_optimal():
    few = [c for c in CASES if c.slices in (1, 32)][:6]
    cal, err = fit_grid({"efficiency": [DEFAULT.efficiency - 0.1, DEFAULT.efficiency]}, few)
    assert cal.efficiency == DEFAULT.efficiency and err < TOLERANCE


def test_validation_only_cases_are_listed_with_their_error(record_table):
    """Cases never used for fitting: each within 15%, or (not reproduced) at the error the docs list."""
    from torchtpu.perfmodel.published import SERVING_CASES, VALIDATION_CASES
    from torchtpu.perfmodel.validation import serving_mfu

    rows = validate(VALIDATION_CASES)
    record_table(format_table(rows))
    assert all(c.role == "validation" and c.source for c in VALIDATION_CASES)
    assert all(c.role == "calibration" for c in CASES)
    for r in rows:
        if abs(r.rel_error) > TOLERANCE:  # not reproduced: must be the documented error (docs/perfmodel.md)
            assert r.rel_error == pytest.approx(r.case.expected_error, abs=0.02), r.case.id
    for c in SERVING_CASES:
        err = serving_mfu(c) / c.mfu - 1
        assert abs(err) <= TOLERANCE or err == pytest.approx(c.expected_error, abs=0.02), (c.id, err)
