"""PjrtDriver.execute's per-launch path: inputs bound straight from their storages, results one shard each."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")  # the PJRT driver's optional dependency: pip install 'torchtpu[pjrt]'

from torchtpu.drivers.ir import Builder  # noqa: E402
from torchtpu.drivers.pjrt.driver import PjrtDriver  # noqa: E402

N = 6


@pytest.fixture(scope="module")
def drv() -> PjrtDriver:
    return PjrtDriver("cpu")


def _three_outputs():
    """(x, y) -> (-x, x + y, -x): three results, the first and last one value."""
    b = Builder()
    x, y = b.input((N,), "float32"), b.input((N,), "float32")
    (neg,) = b.emit("negate", [x])
    (total,) = b.emit("add", [x, y])
    return b.finish([neg, total, neg])


def _storages(drv: PjrtDriver, base: int, count: int) -> list:
    return [drv.storage_buffer(base + 4096 * i, 4 * N, "float32", 0) for i in range(count)]


def test_every_result_rebinds_its_storage(drv: PjrtDriver) -> None:
    exe = drv.compile(_three_outputs())
    x, y, a, b, c = _storages(drv, 1 << 41, 5)
    drv.write_storage(x.storage.key, np.arange(N, dtype=np.float32), 0)
    drv.write_storage(y.storage.key, np.full(N, 10, np.float32), 0)
    launches = drv.launches
    drv.execute(exe, [x, y], [a, b, c], 0)
    assert drv.launches == launches + 1
    for ref, want in ((a, -np.arange(N)), (b, np.arange(N) + 10), (c, -np.arange(N))):
        np.testing.assert_array_equal(drv.read_storage(ref.storage.key, 4 * N, "float32", 0), want.astype(np.float32))
    # a storage shares its buffer only with another result that is that very buffer
    assert a.storage.shared == (a.storage.array is c.storage.array) and not b.storage.shared
    # an unwritten input reads as zeros; a host array input is put on the device for the launch
    d, e, f = _storages(drv, 1 << 42, 3)
    drv.execute(exe, [d, np.ones(N, np.float32)], [e, f, f], 0)
    np.testing.assert_array_equal(drv.read_storage(f.storage.key, 4 * N, "float32", 0), np.zeros(N, np.float32))


def test_a_storage_of_another_dtype_or_size_is_refused_or_reinterpreted(drv: PjrtDriver) -> None:
    exe = drv.compile(_three_outputs())
    x, y, a, b, c = _storages(drv, 1 << 43, 5)
    bits = np.arange(N, dtype=np.float32).view(np.int32)
    drv.write_storage(x.storage.key, bits, 0)  # an int32 buffer read as float32: the same bytes
    drv.write_storage(y.storage.key, np.zeros(N, np.float32), 0)
    drv.execute(exe, [x, y], [a, b, c], 0)
    np.testing.assert_array_equal(drv.read_storage(b.storage.key, 4 * N, "float32", 0), np.arange(N, dtype=np.float32))
    small = drv.storage_buffer((1 << 43) + 4096 * 9, 4 * (N - 1), "float32", 0)
    with pytest.raises(TypeError, match="inputs are whole storages"):
        drv.execute(exe, [small, y], [a, b, c], 0)


def test_wrong_arity_names_what_the_program_takes(drv: PjrtDriver) -> None:
    exe = drv.compile(_three_outputs())
    x, y, a, b = _storages(drv, 1 << 44, 4)
    with pytest.raises(TypeError, match="takes 2 inputs and 3 outputs; got 2 and 2"):
        drv.execute(exe, [x, y], [a, b], 0)
    with pytest.raises(TypeError, match="takes 2 inputs and 3 outputs; got 1 and 3"):
        drv.execute(exe, [x], [a, b, b], 0)


def test_client_execute_takes_the_result_count(drv: PjrtDriver) -> None:
    exe = drv.compile(_three_outputs())
    bufs = [drv.client.put(np.full(N, 2, np.float32)), drv.client.put(np.full(N, 3, np.float32))]
    results = drv.client.execute(exe.payload.plain, bufs, 3)
    assert len(results) == 3
    np.testing.assert_array_equal(drv.client.to_host(results[1]), np.full(N, 5, np.float32))
    with pytest.raises(Exception, match="num_results"):  # jaxlib: "Mismatch between out_handlers and num_results"
        drv.client.execute(exe.payload.plain, bufs, 2)
