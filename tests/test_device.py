"""Registration, the torch.tpu module, autoload, RNG and memory accounting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torchtpu


def test_autoload_registers_tpu_on_plain_import_torch_and_compile_finds_the_backend_lazily(tmp_path):
    """Autoload leaves Dynamo unimported (a third of the import time); torch.compile(backend="tpu") then finds
    the backend through its entry point. Run outside the checkout: a stale egg-info there hides the entry point."""
    code = ("import sys, torch; x = torch.ones(2, device='tpu')\n"
            "print(x.device, torch.accelerator.current_accelerator(), 'torch._dynamo' in sys.modules)\n"
            "f = torch.compile(lambda t: t * 2 + 1, backend='tpu')\n"
            "from torchtpu.compile.backend import stats\n"
            "print(f(x).cpu().tolist(), stats.programs)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.split("\n")[:2] == ["tpu:0 tpu False", "[3.0, 3.0] 1"]


def test_autoload_can_be_disabled_and_import_torchtpu_still_works():
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    code = ("import torch\ntry:\n    torch.ones(1, device='tpu')\n    print('registered')\nexcept RuntimeError:\n"
            "    print('not registered')\nimport torchtpu\nprint(torch.ones(1, device='tpu').device)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split("\n")[:2] == ["not registered", "tpu:0"]


@pytest.mark.sim_only("asserts the simulated v5e chip's properties (16 GB HBM, name)")
def test_device_module_api(tpu):
    assert torch.tpu.is_available() and torch.tpu.device_count() >= 1
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    props = torch.tpu.get_device_properties(0)
    assert props.total_memory == 16_000_000_000 and "v5e" in props.name
    assert "TPU" in torch.tpu.get_device_name()
    assert torch.tpu.is_bf16_supported()
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()
    torch.tpu.synchronize()
    assert torch.accelerator.current_accelerator().type == "tpu"
    with pytest.raises(ValueError, match="valid indices"):
        torch.tpu.set_device(5)


def test_manual_seed_makes_runs_reproducible(tpu):
    torch.manual_seed(123)
    a = torch.randn(5, device=tpu).cpu()
    torch.manual_seed(123)
    b = torch.randn(5, device=tpu).cpu()
    c = torch.randn(5, device=tpu).cpu()
    assert torch.equal(a, b) and not torch.equal(b, c)
    assert torch.tpu.initial_seed() == 123
    state = torch.tpu.get_rng_state()
    d = torch.rand(3, device=tpu).cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(d, torch.rand(3, device=tpu).cpu())


def test_random_ops_follow_their_distributions(tpu):
    torch.manual_seed(0)
    n = torch.randn(20000, device=tpu).cpu()
    assert abs(n.mean().item()) < 0.03 and abs(n.std().item() - 1) < 0.03
    u = torch.rand(20000, device=tpu).cpu()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean().item() - 0.5) < 0.01
    r = torch.randint(3, 7, (5000,), device=tpu).cpu()
    assert set(r.unique().tolist()) == {3, 4, 5, 6}
    b = torch.empty(20000, device=tpu).bernoulli_(0.3).cpu()
    assert abs(b.mean().item() - 0.3) < 0.02
    assert torchtpu.fallback_counts() == {}


def test_memory_accounting_returns_to_baseline(tpu, steady_memory):
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    x = torch.empty(1024, 1024, device=tpu)
    assert torch.tpu.memory_allocated() == base + 4 * 1024 * 1024
    assert torch.tpu.max_memory_allocated() >= base + 4 * 1024 * 1024
    del x
    assert torch.tpu.memory_allocated() == base
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == base
    stats = torch.tpu.memory_stats()
    assert stats["allocated_bytes.all.current"] == base


def test_torch_accelerator_memory_calls_read_the_same_counters(tpu, steady_memory):
    # torch.accelerator reaches the allocator as a c10::DeviceAllocator (an internal assert before)
    torch.tpu.synchronize()
    base = torch.accelerator.memory_allocated(tpu)
    assert base == torch.tpu.memory_allocated()
    x = torch.empty(256, 1024, device=tpu)
    assert torch.accelerator.memory_allocated(tpu) == base + 1024 * 1024 == torch.tpu.memory_allocated()
    assert torch.accelerator.memory_reserved(tpu) == base + 1024 * 1024
    stats = torch.accelerator.memory_stats(tpu)
    assert stats["allocated_bytes.all.current"] == torch.tpu.memory_stats()["allocated_bytes.all.current"]
    assert stats["allocation.all.current"] == torch.tpu.memory_stats()["allocation.all.current"] >= 1
    free, total = torch.accelerator.get_memory_info(tpu)
    assert total == torch.tpu.memory_stats()["limit_bytes"] and free == total - torch.tpu.memory_allocated()
    del x
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats(tpu)
    assert torch.accelerator.max_memory_allocated(tpu) == base == torch.tpu.max_memory_allocated()
    allocs = torch.tpu.memory_stats()["allocation.all.allocated"]
    live = torch.tpu.memory_stats()["allocation.all.current"]
    assert allocs >= 1
    torch.accelerator.reset_accumulated_memory_stats(tpu)
    after = torch.tpu.memory_stats()
    assert after["allocation.all.allocated"] == after["allocation.all.freed"] == 0
    assert after["allocation.all.current"] == live  # live blocks stay counted
    y = torch.empty(4, device=tpu)
    assert torch.tpu.memory_stats()["allocation.all.allocated"] == 1
    del y
    with pytest.raises(RuntimeError, match="tpu:7 is not a device of this process"):
        torch.accelerator.memory_allocated(7)


@pytest.mark.sim_only("asserts the sim's HBM accounting (out of simulated HBM at the chip's capacity)")
def test_oom_raises_and_leaves_tensors_intact(tpu, steady_memory):
    keep = torch.arange(10, device=tpu)
    before = torch.tpu.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match=r"out of simulated HBM: tried to allocate 20000000000 bytes"):
        torch.empty(5_000_000_000, dtype=torch.float32, device=tpu)
    assert torch.tpu.memory_allocated() == before
    assert torch.tpu.memory_stats()["num_ooms"] >= 1
    assert keep.cpu().tolist() == list(range(10))


@pytest.mark.sim_only("asserts simulated costs (stats flops)")
def test_stats_report_simulated_costs(tpu):
    a = torch.randn(256, 256, device=tpu)
    torchtpu.reset_stats()
    (a @ a).sum().item()
    s = torchtpu.stats()
    assert s["launches"] == 2 and s["flops"] >= 2 * 256**3
    assert s["device_seconds"] > 0 and s["hbm_bytes"] > 0
    assert s["by_op"]["aten.mm.default"]["flops"] >= 2 * 256**3
    assert s.cache["misses"] + s.cache["hits"] == 2


def test_pinned_memory_for_data_loaders(tpu):
    pinned = torch.arange(6.0).pin_memory()
    assert pinned.is_pinned() and not torch.zeros(2).is_pinned()
    assert pinned.to(tpu, non_blocking=True).cpu().tolist() == list(range(6))
    torch.accelerator.empty_host_cache()  # the pinned allocator is tpu's at::HostAllocator (a null one crashed)
    assert pinned.is_pinned() and pinned.tolist() == list(range(6))


def test_autocast_runs_matmuls_in_bf16_and_sensitive_ops_in_fp32(tpu):
    x = torch.randn(4, 4).to(tpu)
    with torch.autocast("tpu", dtype=torch.bfloat16):
        y = x @ x
        z = torch.softmax(y, -1)
        w = x + 1
    assert (y.dtype, z.dtype, w.dtype) == (torch.bfloat16, torch.float32, torch.float32)
    torch.testing.assert_close(y.float().cpu(), x.cpu().bfloat16().float() @ x.cpu().bfloat16().float(),
                               rtol=1e-2, atol=1e-2)


def test_module_to_tpu_keeps_tied_parameters_tied(tpu):
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    b.weight = a.weight
    m = torch.nn.ModuleDict({"a": a, "b": b}).to(tpu)
    assert m.a.weight is m.b.weight and m.a.weight.device.type == "tpu"


@pytest.mark.parametrize("make", [
    lambda d: torch.empty(3, device=d),
    lambda d: torch.zeros(3).to(d),
    lambda d: torch.ones(2, 2, device=d),
    lambda d: torch.UntypedStorage(8, device=d),
    lambda d: torch.tpu.set_device(d),
    lambda d: torch.tpu.memory_allocated(d),
    lambda d: torch.tpu.get_device_properties(d),
], ids=["empty", "to", "ones", "storage", "set_device", "memory_allocated", "properties"])
@pytest.mark.parametrize("index", [1, 63, 64, 127])
def test_a_device_index_past_device_count_is_refused_everywhere(tpu, steady_memory, make, index):
    count = torch.tpu.device_count()
    if index < count:
        pytest.skip(f"tpu:{index} exists here ({count} devices)")
    before = torch.tpu.memory_allocated()
    with pytest.raises(RuntimeError, match=rf"tpu:{index} is not a device .*invalid device ordinal {index}\); "
                                           rf"valid indices are 0..{count - 1}"):
        make(f"tpu:{index}")
    assert torch.tpu.memory_allocated() == before and torch.tpu.current_device() == 0


def test_a_shim_that_cannot_build_leaves_import_torch_working(tmp_path):
    import torchtpu._native as native_module

    if native_module._prebuilt() is not None:
        pytest.skip("this install ships the prebuilt shim: no build to fail (tests/test_install.py covers it)")
    env = {**os.environ, "CXX": "no-such-compiler", "TORCHTPU_CACHE_DIR": str(tmp_path)}
    code = ("import torch\nprint(torch.ones(2).sum().item())\ntry:\n    import torchtpu\nexcept RuntimeError as e:\n"
            "    print('raised')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2.0", "raised"]
    assert r.stderr.count("could not register the 'tpu' device") == 1 and "'no-such-compiler'" in r.stderr


def test_a_repeated_op_on_a_whole_storage_driver_launches_from_cpp(tpu, monkeypatch):
    """On a driver whose operands are whole storages (pjrt), a repeated DEFER_NEVER op runs its one-op region's
    prepared launch from the C++ launch path (csrc/record_native.cpp), without the Python recording path
    (deferred._launch_one); with that turned off it takes the Python path. The same results either way. (On the
    sim, DEFER_NEVER ops launch from their own entries: neither path is taken.)"""
    from torchtpu import runtime
    from torchtpu.execution import deferred, record_fast

    whole_storage = not runtime.driver().strided_operands
    gen = torch.Generator().manual_seed(7)
    a, b = (torch.randn(16, 16, generator=gen).to(tpu) for _ in range(2))
    calls = []
    python_way = deferred._launch_one
    monkeypatch.setattr(deferred, "_launch_one", lambda *args: calls.append(args[0][0]) or python_way(*args))
    results = {}
    try:
        for native in (False, True):
            record_fast.native_recording(native)
            with torchtpu.eager_mode("DEFER_NEVER"):
                for _ in range(3):  # the prepared launch is learned on the first calls
                    torch.mm(a, b)
                calls.clear()
                results[native] = [(torch.mm(a, b) + a).cpu() for _ in range(4)]
                torch.tpu.synchronize()
            assert (len(calls) > 0) == (whole_storage and not native), calls
    finally:
        record_fast.native_recording(True)
    for x, y in zip(results[False], results[True], strict=True):
        assert x.view(torch.int32).equal(y.view(torch.int32))
