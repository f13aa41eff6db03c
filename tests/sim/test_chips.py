"""Tests for torchtpu.sim.chips: the table loads, every number has a source, derived values hold."""

import dataclasses
import json
from pathlib import Path

import pytest
from torchtpu.sim import chips
from torchtpu.sim.chips import CHIPS, ChipSpec, get_chip

META = {"name", "sources", "unknown", "notes", "alternates", "display_name"}


def test_short_names():
    assert list(CHIPS) == ["v4", "v5e", "v5p", "v6e", "v7x"]
    for name, spec in CHIPS.items():
        assert spec.name == name


def test_get_chip_case_insensitive_and_default():
    assert get_chip("V5E") is CHIPS["v5e"]
    assert get_chip("TPU v6e") is CHIPS["v6e"]
    assert get_chip("TPU7x") is CHIPS["v7x"]
    for spec in CHIPS.values():
        assert get_chip(spec.display_name) is spec
    kinds = {"TPU v4": "v4", "TPU v5 lite": "v5e", "TPU v5": "v5p", "TPU v6 lite": "v6e", "TPU7x": "v7x"}
    for kind, name in kinds.items():  # JAX device_kind strings
        assert get_chip(kind).name == name
    assert get_chip(None) is CHIPS["v5e"]
    assert get_chip(CHIPS["v4"]) is CHIPS["v4"]


def test_unknown_chip_lists_valid_names():
    with pytest.raises(ValueError, match="v4, v5e, v5p, v6e, v7x"):
        get_chip("v3")


def test_every_field_has_a_source():
    for spec in CHIPS.values():
        for f in dataclasses.fields(ChipSpec):
            if f.name not in META:
                assert f.name in spec.sources, (spec.name, f.name)
                assert spec.sources[f.name].strip()


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CHIPS["v5e"].bf16_flops = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("name", list(CHIPS))
def test_peak_matches_mxu_times_clock(name):
    c = CHIPS[name]
    peak = 2 * c.tensorcores * c.mxus_per_core * c.mxu_rows * c.mxu_cols * c.clock_hz
    assert peak == pytest.approx(c.bf16_flops, rel=0.01)


def test_contract_values():
    v5e = get_chip("v5e")
    assert v5e.hbm_bytes == 16e9
    assert v5e.bf16_flops == 197e12
    assert v5e.ici_wraparound_min_axis == 16 and v5e.ici_dims == 2
    assert get_chip("v5p").alternates["hbm_bw"] == [2.46e12, 2.5e12, 2.8e12]
    assert get_chip("v6e").mxu_array == 256 and get_chip("v7x").mxu_array == 256
    assert get_chip("v4").fp8_flops is None and get_chip("v4").dcn_bw is None
    assert all(isinstance(c.pod_shape, tuple) for c in CHIPS.values())
    for c in CHIPS.values():
        assert len(c.pod_shape) == c.ici_dims
        n = 1
        for d in c.pod_shape:
            n *= d
        assert n == c.pod_chips
        assert c.ici_link_bw_bidi == pytest.approx(2 * c.ici_link_bw_oneway)


def test_wraparound():
    assert get_chip("v5e").has_wraparound(16) and not get_chip("v5e").has_wraparound(8)
    assert get_chip("v5p").has_wraparound(8) and not get_chip("v5p").has_wraparound(6)


def test_bad_entry_rejected(tmp_path: Path):
    raw = json.loads(chips._DATA.read_text())
    del raw["chips"]["v5e"]["sources"]["hbm_bw"]
    p = tmp_path / "c.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="no source"):
        chips.load_chips(p)
