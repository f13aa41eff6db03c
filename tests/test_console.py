"""The `torchtpu` console command: demo (short run), info, and perf wiring."""

from __future__ import annotations

import pytest

from torchtpu.cli import main
from torchtpu.demo import report, run


@pytest.mark.sim_only("the demo reports the sim's simulated step time and MFU (stats device_seconds, flops)")
def test_demo_trains_and_reports(tpu):
    result = run(steps=3, batch=4)
    assert len(result["cpu_losses"]) == len(result["tpu_losses"]) == 3
    for a, b in zip(result["cpu_losses"], result["tpu_losses"]):
        assert abs(a - b) <= 1e-2 * abs(a)
    assert result["fallbacks"] == {} and result["launches_per_step"] > 10 and 0 < result["mfu"] < 1
    text = report(result)
    assert "simulated step time" in text and "MFU" in text and "CPU fallbacks            0" in text


@pytest.mark.sim_only("the demo reports the sim's simulated step time and MFU (stats device_seconds, flops)")
def test_demo_in_defer_and_fuse_launches_once_per_step(tpu):
    result = run(steps=3, batch=4, eager_mode="DEFER_AND_FUSE")
    assert result["launches_per_step"] == 1


@pytest.mark.sim_only("asserts the info line of the sim driver ('driver: sim')")
def test_info_and_perf_commands(capsys):
    assert main(["info"]) == 0
    assert "driver: sim" in capsys.readouterr().out
    assert main(["perf", "--list-models"]) == 0
    assert "llama3.1-8b" in capsys.readouterr().out
