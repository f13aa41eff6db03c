"""Bad input gets a clear error that names what was wrong and what is valid."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torchtpu
from torchtpu.ops import fallback


def test_cpu_plus_tpu_names_both_devices(tpu):
    with pytest.raises(RuntimeError, match=r"tpu:0 and cpu"):
        torch.ones(3, device=tpu) + torch.ones(3)


def test_cpu_scalar_tensor_is_allowed_like_cuda(tpu):
    out = torch.ones(3, device=tpu) * torch.tensor(2.0)
    assert out.cpu().tolist() == [2.0, 2.0, 2.0]


def _run(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env})


def test_bad_driver_lists_valid_values():
    r = _run({"TORCHTPU_DRIVER": "gpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, "import torchtpu")
    assert r.returncode != 0 and "TORCHTPU_DRIVER='gpu'" in r.stderr and "sim, pjrt, auto" in r.stderr


def test_pjrt_with_an_unknown_platform_lists_the_valid_ones():
    r = _run({"TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "gpu9", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
             "import torchtpu")
    assert r.returncode != 0 and "tpu" in r.stderr and "cpu" in r.stderr and "cuda" in r.stderr


@pytest.mark.sim_only("TORCHTPU_CHIP selects the simulated chip; the pjrt driver takes the real device")
def test_bad_chip_lists_valid_values():
    r = _run({"TORCHTPU_CHIP": "v9", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, "import torchtpu")
    assert r.returncode != 0 and "TORCHTPU_CHIP='v9'" in r.stderr and "v5e" in r.stderr


@pytest.mark.sim_only("TORCHTPU_CHIP selects the simulated chip's HBM size; the pjrt driver "
                      "reports the real device's memory")
def test_chip_selects_hbm_size():
    r = _run({"TORCHTPU_CHIP": "v5p"}, "import torch; print(torch.tpu.get_device_properties().total_memory)")
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 90 * 2**30


# An operator with only a CPU kernel: on "tpu" it can only run through the CPU fallback.
_lib = torch.library.Library("torchtpu_test", "DEF")
_lib.define("twice(Tensor x) -> Tensor")
_lib.impl("twice", lambda x: x * 2, "CPU")


def test_strict_mode_names_the_op_without_lowering(tpu, monkeypatch):
    monkeypatch.setenv("TORCHTPU_CPU_FALLBACK", "0")
    x = torch.randn(4, 4, device=tpu)
    with pytest.raises(NotImplementedError, match=r"torchtpu_test\.twice\.default has no tpu lowering"):
        torch.ops.torchtpu_test.twice(x)


def test_fallback_is_counted_and_correct(tpu):
    x = torch.randn(4, 4)
    out = torch.ops.torchtpu_test.twice(x.to(tpu))
    assert out.device.type == "tpu" and torch.equal(out.cpu(), x * 2)
    assert torchtpu.fallback_counts() == {"torchtpu_test.twice.default": 1}


def test_bad_fallback_env_value(monkeypatch):
    monkeypatch.setenv("TORCHTPU_CPU_FALLBACK", "maybe")
    with pytest.raises(ValueError, match="valid values"):
        fallback.strict()


def test_bad_precision_lists_valid():
    with pytest.raises(ValueError, match="DEFAULT, HIGH, HIGHEST"):
        torchtpu.set_precision("ultra")


def test_shape_errors_point_at_the_call(tpu):
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.ones(2, 3, device=tpu) @ torch.ones(4, 5, device=tpu)


def test_a_shim_build_lock_left_by_a_killed_build_is_removed_by_name(tmp_path):
    from torchtpu._native import build_guard

    lock = tmp_path / "lock"
    lock.write_text("")  # torch's build lock, left behind: no build holds the guard
    with pytest.warns(RuntimeWarning, match=str(lock)), build_guard(tmp_path):
        assert not lock.exists()


def test_the_shim_build_guard_waits_for_a_live_build_and_not_for_a_killed_one(tmp_path):
    import subprocess
    import sys
    import threading

    from torchtpu._native import build_guard

    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"h = open({str(tmp_path / 'torchtpu-build.flock')!r}, 'a'); fcntl.flock(h, fcntl.LOCK_EX)\n"
        "print('held', flush=True); time.sleep(120)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        entered = threading.Event()

        def build() -> None:
            with build_guard(tmp_path):
                entered.set()

        waiter = threading.Thread(target=build, daemon=True)
        waiter.start()
        assert not entered.wait(1.0)  # a live build holds the guard
        holder.kill()  # killed mid-build: the kernel releases its flock
        assert entered.wait(20.0)
    finally:
        holder.kill()
        holder.wait(timeout=10)
