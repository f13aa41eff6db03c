"""The driver contract (drivers/ API, no torch): the registry keyed by name, the buffer model, devices that are
different chips in one process (each its own MXU tiling, costs, HBM limit and clock), the bounded executable cache,
and TORCHTPU_DRIVER's valid names."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers import config, registry
from torchtpu.drivers.base import Driver, Executable
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim import mxu


def _matmul(m: int, k: int, n: int, precision: str = "DEFAULT") -> Program:
    b = Builder()
    x, w = b.input((m, k), "float32"), b.input((k, n), "float32")
    (y,) = b.emit("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,),
                  precision=precision, out_dtype="float32")
    return b.finish([y], name=f"mm{m}x{k}x{n}")


def _add(shape: tuple[int, ...]) -> Program:
    b = Builder()
    x, y = b.input(shape, "float32"), b.input(shape, "float32")
    return b.finish([b.emit("add", [x, y])[0]], name="add")


def _run(drv: Driver, program: Program, inputs: list[np.ndarray], device: int = 0) -> np.ndarray:
    out = np.empty(program.outputs[0].shape, np.float32)
    drv.execute(drv.compile(program, device), inputs, [out], device)
    return out


# -- registry --

def test_the_registry_names_every_driver_and_auto():
    assert registry.names() == ("sim", "pjrt", "auto")
    assert isinstance(registry.make("sim"), SimDriver)
    assert registry.resolve(" SIM ") == "sim"


def test_auto_resolves_to_a_present_hardware_driver_else_sim(monkeypatch):
    pjrt = registry._ENTRIES["pjrt"]
    monkeypatch.setitem(registry._ENTRIES, "pjrt", registry.Entry("pjrt", pjrt.factory, lambda: False, ""))
    assert registry.resolve("auto") == "sim"
    monkeypatch.setitem(registry._ENTRIES, "pjrt", registry.Entry("pjrt", pjrt.factory, lambda: True, ""))
    assert registry.resolve("auto") == "pjrt"


def test_an_unknown_driver_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown driver 'gpu'; valid drivers: sim, pjrt, auto"):
        registry.make("gpu")
    with pytest.raises(config.ConfigError, match=r"TORCHTPU_DRIVER='gpu'.*valid values: sim, pjrt, auto"):
        config.parse("TORCHTPU_DRIVER", "gpu")


def test_a_new_driver_is_one_registration(monkeypatch):
    class Other(SimDriver):
        name = "other"

    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    registry.register("other", lambda **kw: Other(**kw), summary="a test driver")
    assert registry.names() == ("sim", "pjrt", "other", "auto")
    assert config.parse("TORCHTPU_DRIVER", "other") == "other"  # the config's valid set is the registry
    drv = registry.make("other", devices=1)
    assert isinstance(drv, Other) and drv.device_count() == 1
    with pytest.raises(ValueError, match="already registered"):
        registry.register("other", Other)
    with pytest.raises(ValueError, match="not 'auto'"):
        registry.register("auto", Other)


# -- the buffer model (sim: zero-copy views of host memory) --

def test_sim_storage_buffers_are_the_memory_itself():
    drv = SimDriver(devices=1)
    memory = np.arange(8, dtype=np.float32)  # stands for a storage's host memory
    key = memory.ctypes.data
    buf = drv.storage_buffer(key, memory.nbytes, "float32", 0)
    assert buf.shape == (8,) and np.shares_memory(buf, memory)
    assert drv.storage_buffer(key, memory.nbytes, "float32", 0) is buf  # cached by address, size and dtype
    as_int = drv.storage_buffer(key, memory.nbytes, "int32", 0)
    np.testing.assert_array_equal(as_int, memory.view(np.int32))
    view = drv.view(drv.storage_buffer(key, memory.nbytes, "float32", 0), (2, 3), (1, 2), 1)  # a strided view
    np.testing.assert_array_equal(view, memory[1:].reshape(-1)[np.array([[0, 2, 4], [1, 3, 5]])])
    view[0, 0] = 100
    assert memory[1] == 100
    read = drv.read_storage(key, memory.nbytes, "float32", 0)
    assert np.shares_memory(read, memory)
    drv.write_storage(key, np.full(8, 7, np.float32), 0)
    np.testing.assert_array_equal(memory, np.full(8, 7, np.float32))
    drv.write_storage(key, read, 0)  # its own memory: nothing to copy
    drv.free_storage(key)
    assert drv.storage_buffer(key, memory.nbytes, "float32", 0) is not buf  # forgotten, mapped anew
    assert drv.strided_operands and not drv.wants_frees


def test_a_launch_on_storage_views_writes_the_storage():
    drv = SimDriver(devices=1)
    memory = np.zeros(12, np.float32)
    key = memory.ctypes.data
    buf = drv.storage_buffer(key, memory.nbytes, "float32", 0)
    a, b, out = (drv.view(buf, (2, 2), (2, 1), off) for off in (0, 4, 8))
    a[...] = [[1, 2], [3, 4]]
    b[...] = 10
    drv.execute(drv.compile(_add((2, 2))), [a, b], [out])
    np.testing.assert_array_equal(memory[8:], [11, 12, 13, 14])


# -- devices of different chips in one process --

def test_two_chips_in_one_process_each_keep_their_tiling_costs_and_clock():
    drv = SimDriver(chips=["v5e", "v6e"])
    assert [drv.device_properties(i)["mxu_shape"] for i in (0, 1)] == [(128, 128), (256, 256)]
    assert drv.memory_limit(0) != drv.memory_limit(1)
    assert drv.device_properties(1)["chip"] == "v6e" and "v6e" in drv.device_name(1).lower()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 512)).astype(np.float32) * np.float32(1e3)
    w = rng.standard_normal((512, 8)).astype(np.float32)
    x[:, ::7] *= np.float32(1e-4)  # magnitudes spread so that the K tiling changes float32 sums
    program = _matmul(8, 512, 8)
    want = {i: mxu.matmul(x, w, precision="DEFAULT", out_dtype=np.float32, mode="exact", array=a)
            for i, a in ((0, 128), (1, 256))}
    assert not np.array_equal(want[0], want[1])  # the two tilings round differently: the test can tell
    previous = mxu._mode
    mxu.set_mode("exact")
    try:
        for device in (0, 1, 0, 1):  # interleaved: no state of one chip leaks into the other
            np.testing.assert_array_equal(_run(drv, program, [x, w], device), want[device])
    finally:
        mxu._mode = previous
    exes = [drv.compile(program, d) for d in (0, 1)]
    assert exes[0] is not exes[1] and [e.meta["mxu_array"] for e in exes] == [128, 256]
    assert exes[0].meta["cost"].seconds != exes[1].meta["cost"].seconds
    s0, s1 = drv.stats(0), drv.stats(1)
    assert s0["chip"] == "v5e" and s1["chip"] == "v6e" and drv.stats()["chip"] == "v5e,v6e"
    assert s0["wall_seconds"] != s1["wall_seconds"]  # each device its own clock
    with pytest.raises(ValueError, match="compiled for v5e; device 1 is a v6e"):
        drv.execute(exes[0], [x, w], [np.empty((8, 8), np.float32)], 1)


def test_devices_of_one_chip_share_executables_and_keep_separate_clocks():
    drv = SimDriver("v5e", devices=2)
    program = _add((4,))
    assert drv.compile(program, 0) is drv.compile(program, 1)
    ones = np.ones(4, np.float32)
    _run(drv, program, [ones, ones], 1)
    assert drv.stats(0)["wall_seconds"] == 0 < drv.stats(1)["wall_seconds"]


def test_bad_chip_lists_are_errors():
    with pytest.raises(ValueError, match="at least one chip"):
        SimDriver(chips=[])
    with pytest.raises(ValueError, match="not both"):
        SimDriver("v5e", chips=["v6e"])
    with pytest.raises(ValueError, match="v9"):
        SimDriver(chips=["v5e", "v9"])


# -- the executable cache --

def test_the_executable_cache_is_bounded_least_recently_used():
    drv = SimDriver(devices=1, cache_size=2)
    a, b, c = (_add((n,)) for n in (1, 2, 3))
    exe_a = drv.compile(a)
    drv.compile(b)
    assert drv.compile(a) is exe_a  # a hit makes `a` the most recent
    drv.compile(c)  # evicts b
    assert len(drv._cache) == 2 and drv.cache_stats.evictions == 1
    assert drv.compile(a) is exe_a
    misses = drv.cache_stats.misses
    drv.compile(b)
    assert drv.cache_stats.misses == misses + 1


def test_the_cache_size_comes_from_config(monkeypatch):
    monkeypatch.setenv("TORCHTPU_EXECUTABLE_CACHE", "3")
    assert SimDriver(devices=1).cache_size == 3
    monkeypatch.setenv("TORCHTPU_EXECUTABLE_CACHE", "0")
    with pytest.raises(config.ConfigError, match="TORCHTPU_EXECUTABLE_CACHE='0'.*an integer >= 1"):
        SimDriver(devices=1)


def test_an_executable_records_its_target():
    drv = SimDriver("v6e", devices=1)
    exe = drv.compile(_add((2,)))
    assert isinstance(exe, Executable) and exe.target.name == "v6e"
