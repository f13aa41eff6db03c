"""Copies between devices and dtypes, and reading a scalar back: the kernels that cross the host boundary.

CPU<->tpu copies move bytes between host memory and the device buffer (for the simulator both are host
memory) and are charged on the simulated timeline at the chip's PCIe bandwidth (`torchtpu.streams.charge_copy`:
the current stream's copy engine; `non_blocking=False` makes the host wait for the copy's end, as CUDA's
stream synchronize after a copy; a device-to-host copy first waits for the device, as before). tpu->tpu copies,
with any dtype change or broadcast, are an IR program like any other op; between two tpu devices they are not
charged. Reading a scalar back (`.item()`) synchronizes without a transfer charge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu import dtypes, runtime
from torchtpu.execution import deferred, eager, fast_launch, overlap
from torchtpu.ops import many_dims
from torchtpu.ops.arg_checks import sizes_text
from torchtpu.ops.cpu_raise_checks import broadcast
from torchtpu.ops.prims import broadcast_to, convert
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _sync(t: torch.Tensor) -> None:
    deferred.flush()
    runtime.driver().synchronize(t.device.index or 0)


def _charge(device: int, nbytes: int, blocking: bool) -> None:
    from torchtpu.streams import charge_copy  # streams loads after the ops (it registers with the shim)

    charge_copy(device, nbytes, blocking)


def _device_copy(dst_dtype: torch.dtype, dst_shape: tuple[int, ...]) -> Callable[[Sym], Sym]:
    def lowering(src: Sym) -> Sym:
        return broadcast_to(convert(src, dst_dtype), dst_shape)

    return lowering


_device_copies: dict[tuple, Callable[[Sym], Sym]] = {}
_SIGNED = {torch.uint64: torch.int64, torch.uint32: torch.int32, torch.uint16: torch.int16}


def _bytes_view(t: torch.Tensor) -> torch.Tensor:
    """Unsigned types the IR lacks (hash_tensor's uint64) cross the host boundary as their signed twin's bytes."""
    signed = _SIGNED.get(t.dtype)
    return t if signed is None else t.view(signed)


def check_copy_shapes(dst_shape: Sequence[int], src_shape: Sequence[int]) -> None:
    """ATen's TensorIterator checks of `dst.copy_(src)`: src broadcasts to dst's shape, in its class and words."""
    out = broadcast(dst_shape, src_shape)
    if tuple(out) != tuple(dst_shape):
        raise RuntimeError(f"output with shape {sizes_text(dst_shape)} doesn't match the broadcast shape "
                           f"{sizes_text(out)}")


def copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    if dst.device.type == "tpu":
        dtypes.check_storage(dst.dtype, f"copy to {dst.device}")
    check_copy_shapes(tuple(dst.shape), tuple(src.shape))
    if dst.numel() == 0:
        return dst
    if src.is_conj() or src.is_neg() or dst.is_conj() or dst.is_neg():
        # reached past the Conjugate/Negative keys (a dispatch that excludes them, e.g. under DTensor's TP in
        # autograd): materializing the bit here would re-enter this copy; apply it as the bits' own kernel does
        from torchtpu.ops.complex import copy_from_with_bits

        return copy_from_with_bits(src, dst, non_blocking)
    if src.device.type == "tpu" and dst.device.type == "tpu":
        if src.device == dst.device:
            overlap.refuse_overlap("copy_", [dst], (src,), {}, False)
            if many_dims.past_limit((src, dst), {}) and \
                    (views := many_dims.collapsed_views([dst, src.expand(dst.shape)])) is not None:
                with fast_launch.not_stored():  # (not under this call's key: its tensors have more dims)
                    copy_from(views[1], views[0], non_blocking)  # the same elements, fewer dims
                return dst
            key = (dst.dtype, tuple(dst.shape))
            lowering = _device_copies.setdefault(key, _device_copy(*key))
            eager.run("aten::copy_", lowering, (src,), {}, write_into=[dst], fast_kind=fast_launch.COPY_FROM)
            return dst
        _sync(src)
        runtime.write_from_host(_bytes_view(dst), runtime.host_tensor(_bytes_view(src)))
        return dst
    if src.device.type == "tpu":  # tpu -> cpu
        if non_blocking:
            deferred.flush()
        else:
            _sync(src)
        host = runtime.host_tensor(_bytes_view(src))
        dst.copy_(host.view(src.dtype) if host.dtype != src.dtype else host)
        _charge(src.device.index or 0, src.numel() * src.element_size(), not non_blocking)
        return dst
    if deferred.touches(dst):  # the pending region reads or writes this storage: materialize first
        deferred.flush()
    if dst.dtype in _SIGNED and src.dtype != dst.dtype:
        src = src.to(dst.dtype)
    runtime.write_from_host(_bytes_view(dst), _bytes_view(src.contiguous()) if dst.dtype in _SIGNED else src)
    _charge(dst.device.index or 0, dst.numel() * dst.element_size(), not non_blocking)
    return dst



def copy_to_host_many(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]], gather: ScalarGather | None = None) -> None:
    """`dst.copy_(src)` for each (src on tpu, dst on the CPU) pair, as `copy_from` makes a blocking tpu -> cpu
    copy (the same values, and the same charge per copy), with one flush and device synchronization for all
    instead of a dispatch and a synchronization each: a compiled AdamW step hands back one step count per
    parameter. `gather`, made for exactly these sources (`ScalarGather.of`), reads them all in one step."""
    deferred.flush()
    drv = runtime.driver()
    for device in {src.device.index or 0 for src, _ in pairs}:
        drv.synchronize(device)
    if gather is not None and gather.matches(pairs):
        gather.copy_into([dst for _, dst in pairs])
    else:
        for src, dst in pairs:
            if dst.numel():
                host = runtime.host_tensor(_bytes_view(src))
                dst.copy_(host.view(src.dtype) if host.dtype != src.dtype else host)
    from torchtpu.streams import charge_copy  # streams loads after the ops (it registers with the shim)

    for src, dst in pairs:
        if dst.numel():
            charge_copy(src.device.index or 0, src.numel() * src.element_size(), True)


class ScalarGather:
    """A fixed list of 0-d tpu tensors copied back to the host together again and again (a compiled AdamW step's
    pooled step counts, compile/launch_layout.py), where the driver's buffers are host memory (the simulator):
    their values are gathered in one numpy assignment from the buffers' cached views into a host staging tensor,
    whose 0-d parts go to the destinations in one `_foreach_copy_`."""

    __slots__ = ("srcs", "_views", "_staging", "_parts")

    def __init__(self, srcs: list[torch.Tensor]) -> None:
        self.srcs = srcs
        self._views = [runtime.buffer(src) for src in srcs]
        staging = torch.empty(len(srcs), dtype=srcs[0].dtype)
        self._staging = staging.numpy()
        self._parts = list(staging.unbind())

    @staticmethod
    def of(srcs: list[torch.Tensor]) -> ScalarGather | None:
        """A gather for `srcs`, or None where there is none: a driver whose buffers are device memory (pjrt), a
        source that is not 0-d, or sources of several dtypes or of one numpy lacks (bfloat16, fp8, uint64...)."""
        if not srcs or not runtime.driver().strided_operands:
            return None
        dtype = srcs[0].dtype
        if dtype in _NOT_GATHERED or any(src.dim() or src.dtype != dtype for src in srcs):
            return None
        return ScalarGather(srcs)

    def matches(self, pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> bool:
        return len(pairs) == len(self.srcs) and all(src is mine for (src, _), mine in zip(pairs, self.srcs))

    def copy_into(self, dsts: list[torch.Tensor]) -> None:
        for fn in runtime.host_access:  # poison.py: a never-written source fails as a host read would
            for src in self.srcs:
                fn(src, False)
        self._staging[:] = self._views
        torch._foreach_copy_(dsts, self._parts)


_NOT_GATHERED = {torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, *_SIGNED}


def copy_from_and_resize(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    if tuple(dst.shape) != tuple(src.shape):
        dst.resize_(src.shape)
    return copy_from(src, dst)


def local_scalar_dense(t: torch.Tensor) -> Any:
    _sync(t)
    return runtime.host_tensor(t).item()


def register(kernel: Any) -> None:
    kernel(aten._copy_from.default, copy_from, fast=(fast_launch.COPY_FROM, "aten::copy_"))  # tpu->tpu: C++ cache
    kernel(aten._copy_from_and_resize.default, copy_from_and_resize)
    kernel(aten._local_scalar_dense.default, local_scalar_dense)
