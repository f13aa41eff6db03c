"""The PJRT driver's launch of a cached one-op region (torchtpu/execution/one_op_fast.py): `PjrtDriver.execute`
with everything that is fixed for the region worked out once.

A DEFER_NEVER op on PJRT runs as a one-op region of its own, the same Program on storages of the same sizes each
call; only the storage addresses change. `runner` checks once what `execute` checks each call (each input
storage's bytes and dtype against the program's input, which loaded executable: the plain one, nothing donated
because no storage is both read and written, on this device) and returns a function of the call's storage
addresses and scalar buffers that binds each input straight from its storage's device buffer, launches, and
binds the results to the output storages, as `execute` would. It declines (False, nothing launched) whatever
`execute` would handle another way: a storage not bound yet or seen through another dtype, an address reused
for a storage of another size or device, a launch that raised (the caller runs the op the long way, which
raises its error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torchtpu.drivers.pjrt.driver import _MAX_INFLIGHT, _Storage


def runner(drv: Any, exe: Any, input_slots: Sequence[int], output_slots: Sequence[int],
           slot_types: Sequence[tuple[int, str]], device: int) -> Callable[[tuple, Sequence[Any]], bool] | None:
    """The launch of `exe` (a one-op region's executable) with inputs `input_slots` then scalar buffers and
    outputs `output_slots` (`slot_types`: per slot (bytes, IR dtype)) on `device`; None when `execute` must run
    it (a storage both read and written that could be donated, or inputs that do not match the program)."""
    compiled = exe.payload
    metas = compiled.inputs
    if drv.donate and set(input_slots) & set(output_slots):
        return None
    if len(input_slots) > len(metas) or len(output_slots) != compiled.n_outputs:
        return None
    ins = []
    for s, (n, dtype, np_dtype) in zip(input_slots, metas):
        nbytes, slot_dtype = slot_types[s]
        if slot_dtype != dtype or nbytes != n * np_dtype.itemsize:
            return None
        ins.append((s, nbytes, np_dtype))
    outs = [(s, slot_types[s][0]) for s in output_slots]
    scalar_metas = [(meta, v) for meta, v in zip(metas[len(ins):], exe.program.inputs[len(ins):])]
    loaded = compiled.plain if device == 0 else drv._loaded(exe, (), device)
    checks = compiled.checks
    n_results = compiled.n_outputs + bool(checks)
    storages, client, input_buffer, inflight = drv._storages, drv.client, drv._input_buffer, drv._inflight[device]
    many, n_scalars = len(outs) > 1, len(scalar_metas)

    def run(addresses: tuple, scalars: Sequence[Any]) -> bool:
        buffers = []
        for s, nbytes, np_dtype in ins:
            st = storages.get(addresses[s])
            if st is None or st.nbytes != nbytes or st.device != device:
                return False
            array = st.array
            if array is None or array.dtype != np_dtype:
                return False
            buffers.append(array)
        if len(scalars) != n_scalars:
            return False
        for (meta, value), x in zip(scalar_metas, scalars):
            buffers.append(input_buffer(meta, x, device, value))
        try:
            results = client.execute(loaded, buffers, n_results)
            if checks:
                drv._raise_failed_check(checks, results.pop())
        except Exception:  # noqa: BLE001 - nothing was written: the long way runs it again and raises its error
            return False
        drv.launches += 1
        inflight.extend(results)  # drv._track
        if len(inflight) > _MAX_INFLIGHT:
            client.block(inflight)
            inflight.clear()
        for (s, nbytes), result in zip(outs, results):
            key = addresses[s]
            st = storages.get(key)
            if st is None or st.nbytes != nbytes or st.device != device:  # a new storage (or an address reused)
                st = storages[key] = _Storage(key, nbytes, device)
            st.array = result
            st.shared = many and sum(r is result for r in results) > 1  # one buffer bound to two storages
        return True

    return run

