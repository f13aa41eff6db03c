"""torchtpu.config: every TORCHTPU_* variable is in one table, and each bad value raises naming the variable, the
value and the valid set (at import for the variables read then, at first use for the rest)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from torchtpu.drivers import config

ROOT = Path(__file__).resolve().parents[1]

BAD = {
    "TORCHTPU_DRIVER": ["gpu"],
    "TORCHTPU_PJRT_PLATFORM": ["gpu9"],
    "TORCHTPU_CHIP": ["v9"],
    "TORCHTPU_PRECISION": ["ultra"],
    "TORCHTPU_EAGER_MODE": ["sometimes"],
    "TORCHTPU_SHAPE_BUCKETS": ["-5,0", "big", "128,,256", "0"],
    "TORCHTPU_MAX_REGION_OPS": ["lots", "-1", "0", "1.5"],
    "TORCHTPU_FAST_LAUNCH": ["yes", "2"],
    "TORCHTPU_ONE_OP_STREAK": ["on", "2"],
    "TORCHTPU_CPU_FALLBACK": ["maybe"],
    "TORCHTPU_MXU_MODE": ["bogus"],
    "TORCHTPU_NUM_DEVICES": ["0", "65", "two", "-1"],
    "TORCHTPU_TOPOLOGY": ["abc", "0x2", "2x2x2x2", "2x", "2x2x2", "32x4", "3x4", "32x32"],  # last four: not a v5e slice
    "TORCHTPU_HOSTS": ["0", "two"],
    "TORCHTPU_PJRT_CHECKS": ["off"],
    "TORCHTPU_PJRT_DONATE": ["sometimes"],
    "TORCHTPU_PJRT_DISTRIBUTED": ["yes", "2"],
    "TORCHTPU_PJRT_MXU_PASSES": ["6"],
    "TORCHTPU_VALIDATE_TRACEBACK": ["verbose"],
    "TORCHTPU_VERBOSE_BUILD": ["loud"],
    "TORCHTPU_EXECUTABLE_CACHE": ["0", "many"],
    "TORCHTPU_HELION_AUTOTUNE": ["triton", "SIMULATED"],
    "TORCHTPU_VLLM_SIM_KV_BYTES": ["0", "1GiB"],
}
GOOD = {
    "TORCHTPU_DRIVER": [(" SIM ", "sim"), ("auto", "auto")],
    "TORCHTPU_CHIP": [("V6E", "v6e"), ("trillium", "v6e")],
    "TORCHTPU_PRECISION": [("highest", "HIGHEST")],
    "TORCHTPU_EAGER_MODE": [("defer_and_fuse", "DEFER_AND_FUSE")],
    "TORCHTPU_SHAPE_BUCKETS": [("pow2", "pow2"), ("256,128,128", (128, 256))],
    "TORCHTPU_MAX_REGION_OPS": [("1", 1), ("20000", 20000)],
    "TORCHTPU_NUM_DEVICES": [("64", 64)],
    "TORCHTPU_TOPOLOGY": [("2x2", (2, 2)), (" 2X2x1 ", (2, 2, 1)), ("8", (8,)), ("16x16", (16, 16))],
    "TORCHTPU_HOSTS": [("4", 4)],
    "TORCHTPU_PJRT_DONATE": [("auto", None), ("0", False)],
    "TORCHTPU_PJRT_DISTRIBUTED": [("auto", None), ("1", True), ("0", False)],
    "TORCHTPU_FAST_LAUNCH": [("0", False), ("1", True)],
    "TORCHTPU_ONE_OP_STREAK": [("0", False), ("1", True)],
}


def test_every_variable_the_code_reads_is_in_the_table():
    used = set()
    for folder in ("torchtpu", "drivers", "sim"):
        for path in (ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r"TORCHTPU_[A-Z0-9_]+", path.read_text()))
    assert used - set(config.VARS) == set()
    assert set(BAD) | {"TORCHTPU_CACHE_DIR"} == set(config.VARS)


def test_only_the_config_module_and_the_sim_read_torchtpu_variables():
    pattern = re.compile(r"environ(?:\.get)?\(?\[?\s*[\"']TORCHTPU_")
    readers = sorted(str(p.relative_to(ROOT)) for folder in ("torchtpu", "drivers", "sim")
                     for p in (ROOT / folder).rglob("*.py") if pattern.search(p.read_text()))
    assert readers == [], readers


@pytest.mark.parametrize("name,raw", [(n, v) for n, vs in BAD.items() for v in vs])
def test_bad_value_names_the_variable_the_value_and_the_valid_set(name, raw):
    with pytest.raises(config.ConfigError) as info:
        config.parse(name, raw)
    message = str(info.value)
    valid = config.table()[list(config.VARS).index(name)][2]
    assert f"{name}={raw!r}" in message and f"valid values: {valid}" in message


@pytest.mark.parametrize("name,raw,value", [(n, r, v) for n, rvs in GOOD.items() for r, v in rvs])
def test_good_values_parse(name, raw, value):
    assert config.parse(name, raw) == value


def test_get_reads_the_environment_each_time_it_changes(monkeypatch):
    monkeypatch.delenv("TORCHTPU_MAX_REGION_OPS", raising=False)
    assert config.get("TORCHTPU_MAX_REGION_OPS") == 20000
    monkeypatch.setenv("TORCHTPU_MAX_REGION_OPS", "7")
    assert config.get("TORCHTPU_MAX_REGION_OPS") == 7
    monkeypatch.setenv("TORCHTPU_MAX_REGION_OPS", "lots")
    with pytest.raises(ValueError, match="TORCHTPU_MAX_REGION_OPS='lots'.*an integer >= 1"):
        config.get("TORCHTPU_MAX_REGION_OPS")
    monkeypatch.setenv("TORCHTPU_MAX_REGION_OPS", "")
    assert config.get("TORCHTPU_MAX_REGION_OPS") == 20000


def test_cache_dir_must_be_a_directory(tmp_path, monkeypatch):
    afile = tmp_path / "f"
    afile.write_text("x")
    with pytest.raises(config.ConfigError, match="TORCHTPU_CACHE_DIR=.*not a directory"):
        config.parse("TORCHTPU_CACHE_DIR", str(afile))
    assert config.parse("TORCHTPU_CACHE_DIR", str(tmp_path / "new")) == str(tmp_path / "new")
    monkeypatch.delenv("TORCHTPU_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert config.get("TORCHTPU_CACHE_DIR") == str(tmp_path / "torchtpu")


def test_the_chip_list_is_the_chip_table():
    from torchtpu.sim.chips import CHIPS

    assert config.table()[list(config.VARS).index("TORCHTPU_CHIP")][2] == ", ".join(CHIPS)


def test_the_config_core_does_not_import_torch():
    code = ("import sys; sys.modules['torch'] = None; import torchtpu.drivers.config as c; c.check_all(); "
            "print(sys.modules['torch'] is None)")  # None in sys.modules: any `import torch` would fail
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


def test_bad_value_at_import_fails_an_explicit_import_and_only_warns_under_autoload():
    env = {**os.environ, "TORCHTPU_MAX_REGION_OPS": "-1"}
    explicit = subprocess.run([sys.executable, "-c", "import torchtpu"], capture_output=True, text=True,
                              env={**env, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert explicit.returncode != 0 and "ConfigError: TORCHTPU_MAX_REGION_OPS='-1'" in explicit.stderr
    code = ("import torch\nprint(torch.ones(2).sum().item())\ntry:\n    import torchtpu\nexcept ValueError as e:\n"
            "    print('raised', type(e).__name__)")
    auto = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.split() == ["2.0", "raised", "ConfigError"]
    assert auto.stderr.count("could not register the 'tpu' device") == 1
    assert "TORCHTPU_MAX_REGION_OPS='-1'" in auto.stderr and "an integer >= 1" in auto.stderr


def test_docs_list_every_variable_with_its_valid_values():
    text = (ROOT / "docs" / "install.md").read_text()
    for name, default, valid, meaning in config.table():
        assert f"| `{name}` | {default} | {valid} | {meaning} |" in text, name


def test_reader_follows_every_change_of_the_variable(monkeypatch):
    """config.reader (the sim's per-matmul TORCHTPU_MXU_MODE source) gives what `get` gives after every change:
    set, changed, set again to an equal value, unset, bad (raises as `get` does), os.environ replaced."""
    read = config.reader("TORCHTPU_MXU_MODE")
    monkeypatch.delenv("TORCHTPU_MXU_MODE", raising=False)
    assert read() == "auto" and read() == "auto"
    for value in ("fast", "exact", "exact", "auto", "fast"):
        monkeypatch.setenv("TORCHTPU_MXU_MODE", value)
        assert read() == value == config.get("TORCHTPU_MXU_MODE")
        assert read() == value
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "bogus")
    with pytest.raises(config.ConfigError, match="TORCHTPU_MXU_MODE='bogus'"):
        read()
    monkeypatch.delenv("TORCHTPU_MXU_MODE")
    assert read() == "auto"
    monkeypatch.setattr(os, "environ", {"TORCHTPU_MXU_MODE": "exact"})
    assert read() == "exact"


def test_the_sim_driver_reads_the_mxu_mode_through_a_reader(monkeypatch):
    from torchtpu.drivers.sim import driver
    from torchtpu.sim import mxu

    monkeypatch.setattr(mxu, "_source", driver._mxu_mode)
    monkeypatch.setattr(mxu, "_mode", None)
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "fast")
    assert mxu.get_mode() == "fast"
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "exact")
    assert mxu.get_mode() == "exact"
