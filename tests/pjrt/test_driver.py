"""PjrtDriver's storage model: storage-keyed immutable buffers rebound by programs, async launches, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.pjrt import client as pjrt_client
from torchtpu.drivers.pjrt.driver import PjrtDriver, PjrtUnavailable, StorageRef

_next_key = [1 << 40]


def _key() -> int:
    _next_key[0] += 4096
    return _next_key[0]


def _add_program(n: int, dtype: str = "float32"):
    """(storage a, storage b, scalar s) -> (a + b * s): the shape of a deferred region's program."""
    b = Builder()
    a, x, s = b.input((n,), dtype), b.input((n,), dtype), b.input((), dtype)
    (sb,) = b.emit("broadcast_in_dim", [s], shape=(n,), broadcast_dimensions=())
    (m,) = b.emit("multiply", [x, sb])
    (y,) = b.emit("add", [a, m])
    return b.finish([y], name="axpy")


def test_storage_roundtrip_zeros_and_free(pjrt):
    k = _key()
    np.testing.assert_array_equal(pjrt.read_storage(k, 16, "float32", 0), np.zeros(4, np.float32))
    data = np.arange(4, dtype=np.float32)
    pjrt.write_storage(k, data.copy(), 0)
    got = pjrt.read_storage(k, 16, "float32", 0)
    np.testing.assert_array_equal(got, data)
    got[0] = 99  # the caller owns the copy
    np.testing.assert_array_equal(pjrt.read_storage(k, 16, "float32", 0), data)
    view = pjrt.read_storage(k, 16, "float32", 0, writable=False)  # zero-copy on the CPU client
    np.testing.assert_array_equal(view, data)
    assert not view.flags.writeable
    # the same bytes seen through another dtype
    np.testing.assert_array_equal(pjrt.read_storage(k, 16, "int32", 0), data.view(np.int32))
    pjrt.free_storage(k)
    np.testing.assert_array_equal(pjrt.read_storage(k, 16, "float32", 0), np.zeros(4, np.float32))


def test_program_rebinds_its_output_storage_in_place(pjrt):
    n = 6
    exe = pjrt.compile(_add_program(n))
    ka, kb = _key(), _key()
    pjrt.write_storage(ka, np.ones(n, np.float32), 0)
    pjrt.write_storage(kb, np.arange(n, dtype=np.float32), 0)
    for _ in range(3):  # a += b * 2, in place: input and output are the same storage
        a = pjrt.storage_buffer(ka, 4 * n, "float32", 0)
        b = pjrt.storage_buffer(kb, 4 * n, "float32", 0)
        pjrt.execute(exe, [a, b, np.array(2.0, np.float32)], [a], 0)
    pjrt.synchronize(0)
    np.testing.assert_array_equal(pjrt.read_storage(ka, 4 * n, "float32", 0), 1 + 6 * np.arange(n))
    np.testing.assert_array_equal(pjrt.read_storage(kb, 4 * n, "float32", 0), np.arange(n))


def test_never_written_storage_reads_as_zeros_in_a_program(pjrt):
    n = 5
    exe = pjrt.compile(_add_program(n, "int32"))
    ka, kb, kout = _key(), _key(), _key()
    pjrt.write_storage(kb, np.arange(n, dtype=np.int32), 0)
    args = [pjrt.storage_buffer(k, 4 * n, "int32", 0) for k in (ka, kb)]
    pjrt.execute(exe, [*args, np.array(3, np.int32)], [pjrt.storage_buffer(kout, 4 * n, "int32", 0)], 0)
    np.testing.assert_array_equal(pjrt.read_storage(kout, 4 * n, "int32", 0), 3 * np.arange(n))


def test_storage_viewed_through_another_dtype_in_a_program(pjrt):
    b = Builder()
    x = b.input((4,), "int32")
    (y,) = b.emit("add", [x, b.emit("constant", [], value=1, shape=(4,), dtype="int32")[0]])
    exe = pjrt.compile(b.finish([y]))
    k = _key()
    pjrt.write_storage(k, np.array([1.0, 2.0, -1.0, 0.5], np.float32), 0)
    ref = pjrt.storage_buffer(k, 16, "int32", 0)
    pjrt.execute(exe, [ref], [ref], 0)
    want = np.array([1.0, 2.0, -1.0, 0.5], np.float32).view(np.int32) + 1
    np.testing.assert_array_equal(pjrt.read_storage(k, 16, "int32", 0), want)


def test_donation_reuses_the_overwritten_storage_buffer():
    drv = PjrtDriver("cpu", donate=True)
    n = 8
    exe = drv.compile(_add_program(n))
    ka, kb = _key(), _key()
    drv.write_storage(ka, np.ones(n, np.float32), 0)
    drv.write_storage(kb, np.full(n, 2, np.float32), 0)
    a, b = (drv.storage_buffer(k, 4 * n, "float32", 0) for k in (ka, kb))
    old = a.storage.array
    drv.execute(exe, [a, b, np.array(1.0, np.float32)], [a], 0)
    assert drv.client.is_deleted(old)  # donated to the launch
    assert exe.payload.variants.keys() == {(), ((0, 0),)}
    np.testing.assert_array_equal(drv.read_storage(ka, 4 * n, "float32", 0), np.full(n, 3, np.float32))
    # the same storage read twice is not donated (the second read would see a deleted buffer)
    drv.execute(exe, [a, a, np.array(1.0, np.float32)], [a], 0)
    np.testing.assert_array_equal(drv.read_storage(ka, 4 * n, "float32", 0), np.full(n, 6, np.float32))
    # one buffer rebound to two storages is never donated afterwards
    bb = Builder()
    x = bb.input((n,), "float32")
    (y,) = bb.emit("negate", [x])
    twice = drv.compile(bb.finish([y, y]))
    kc, kd = _key(), _key()
    c, d = (drv.storage_buffer(k, 4 * n, "float32", 0) for k in (kc, kd))
    drv.execute(twice, [a], [c, d], 0)
    drv.execute(exe, [c, b, np.array(1.0, np.float32)], [c], 0)
    np.testing.assert_array_equal(drv.read_storage(kd, 4 * n, "float32", 0), np.full(n, -6, np.float32))
    np.testing.assert_array_equal(drv.read_storage(kc, 4 * n, "float32", 0), np.full(n, -4, np.float32))


def test_async_launches_and_synchronize(pjrt):
    n = 1 << 14
    exe = pjrt.compile(_add_program(n))
    k = _key()
    pjrt.write_storage(k, np.zeros(n, np.float32), 0)
    ref = pjrt.storage_buffer(k, 4 * n, "float32", 0)
    one = np.ones(n, np.float32)
    kb = _key()
    pjrt.write_storage(kb, one, 0)
    b = pjrt.storage_buffer(kb, 4 * n, "float32", 0)
    for _ in range(20):
        pjrt.execute(exe, [ref, b, np.array(0.5, np.float32)], [ref], 0)
    pjrt.synchronize()
    assert all(not x for x in pjrt._inflight)
    np.testing.assert_array_equal(pjrt.read_storage(k, 4 * n, "float32", 0), np.full(n, 10, np.float32))


def test_executables_are_cached_by_structure(pjrt):
    before = (pjrt.cache_stats.hits, pjrt.cache_stats.misses)
    e1 = pjrt.compile(_add_program(3, "int64"))
    e2 = pjrt.compile(_add_program(3, "int64"))
    assert e1 is e2
    assert pjrt.cache_stats.hits - before[0] >= 1 and pjrt.cache_stats.misses - before[1] <= 1


def test_inputs_must_be_whole_storages(pjrt):
    exe = pjrt.compile(_add_program(4))
    k = _key()
    with pytest.raises(TypeError, match="whole storages"):
        pjrt.execute(exe, [pjrt.storage_buffer(k, 32, "float32", 0)] * 2 + [np.float32(1)],
                     [pjrt.storage_buffer(k, 32, "float32", 0)], 0)


def test_device_properties_and_stats(pjrt):
    assert pjrt.device_count() >= 1 and "cpu" in pjrt.device_name(0)
    props = pjrt.device_properties(0)
    assert props["total_memory"] == pjrt.memory_limit(0) > 2**30 and props["platform"] == "cpu"
    assert props["jax_version"] == pjrt_client.JAX_VERSION_TESTED
    stats = pjrt.stats()
    for key in ("launches", "storages", "storage_bytes", "executables", "memory", "compile_seconds"):
        assert key in stats
    assert not pjrt.strided_operands and pjrt.wants_frees
    ref = pjrt.storage_buffer(_key(), 8, "float32", 0)
    assert isinstance(ref, StorageRef) and ref.numel == 2


def test_platform_choice_errors(monkeypatch):
    monkeypatch.setenv("TORCHTPU_PJRT_PLATFORM", "gpu")
    with pytest.raises(ValueError, match="tpu, cpu, cuda"):
        PjrtDriver()
    with pytest.raises(ValueError, match="tpu, cpu, cuda"):
        PjrtDriver("rocm")


def test_no_tpu_here_is_one_clear_error():
    with pytest.raises(PjrtUnavailable, match=r"pip install 'torchtpu\[tpu\]'"):
        PjrtDriver("tpu")


def test_missing_jax_is_one_clear_error(monkeypatch):
    def no_jax():
        raise pjrt_client.PjrtUnavailable("No module named 'jax'")

    monkeypatch.setattr(pjrt_client, "_import_jax", no_jax)
    with pytest.raises(PjrtUnavailable, match=r"needs jax and jaxlib .* pip install 'torchtpu\[pjrt\]'"):
        PjrtDriver("cpu")


def test_two_cpu_devices_in_a_fresh_process():
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import numpy as np
        from torchtpu.drivers.ir import Builder
        from torchtpu.drivers.pjrt.driver import PjrtDriver
        d = PjrtDriver("cpu", devices=2)
        b = Builder()
        x = b.input((4,), "float32")
        (y,) = b.emit("exponential", [x])
        exe = d.compile(b.finish([y]))
        for dev in (1, 0):
            d.write_storage(10 + dev, np.arange(4, dtype=np.float32), dev)
            r = d.storage_buffer(10 + dev, 16, "float32", dev)
            d.execute(exe, [r], [r], dev)
            assert r.storage.array.devices() == {d.client.devices[dev]}
            np.testing.assert_allclose(d.read_storage(10 + dev, 16, "float32", dev), np.exp(np.arange(4)), 1e-6)
        print(d.device_count())
    ''')
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_DRIVER", "TORCHTPU_NUM_DEVICES")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("2"), proc.stderr[-3000:]


def test_more_cpu_devices_than_the_open_client_has_is_refused():
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        from torchtpu.drivers.pjrt.driver import PjrtDriver, PjrtUnavailable
        PjrtDriver("cpu", devices=1)
        try:
            PjrtDriver("cpu", devices=2)
        except PjrtUnavailable as exc:
            print(exc)
    ''')
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_DRIVER", "TORCHTPU_NUM_DEVICES")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "already open in this process with 1" in proc.stdout and "TORCHTPU_NUM_DEVICES=2" in proc.stdout


def test_device_out_of_memory_is_a_memory_error():
    with pytest.raises(pjrt_client.DeviceOutOfMemory, match="RESOURCE_EXHAUSTED"):
        pjrt_client._reraise(RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 1.0G"), "PJRT execute")
    assert issubclass(pjrt_client.DeviceOutOfMemory, MemoryError)
    with pytest.raises(ValueError, match="other"):
        pjrt_client._reraise(ValueError("other"), "PJRT execute")


def test_complex_lu_reconstructs_its_input(pjrt):
    from pjrt_run import run

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))).astype(np.complex64)
    b = Builder()
    v = b.input((2, 4, 4), "complex64")
    prog = b.finish(b.emit("lu", [v]))
    lu, piv, info = run(pjrt, prog, [x])
    assert (info == 0).all()
    for k in range(2):
        low = np.tril(lu[k], -1) + np.eye(4)
        a = x[k].copy()
        for i, p in enumerate(piv[k] - 1):  # LAPACK's row swaps, in order
            a[[i, p]] = a[[p, i]]
        np.testing.assert_allclose(low @ np.triu(lu[k]), a, rtol=1e-5, atol=1e-5)
