"""The dtypes the "tpu" device supports, per op family, and the one check that refuses the others.

`STORAGE` dtypes may live on the device (`.to("tpu")`, factories, views, copies back to the host); `COMPUTE`
dtypes are the ones the IR has, so every lowered op accepts them; `FAMILIES` narrows that for op families with a
smaller set. A dtype outside `STORAGE` is refused when a tensor is copied to the device, one outside `COMPUTE` when
an op traces a tensor of it. The first raises `UnsupportedDtypeError`, a TypeError as MPS raises for a dtype it
cannot hold; the second `DtypeNotImplementedError`, a NotImplementedError as CPU and CUDA kernels raise ("add_stub"
not implemented for 'UInt16'; a TypeError there would be turned into NotImplemented by Tensor's binary operators).
Both name the dtype, the op and the supported set. docs/install.md has the same table for users.
"""

from __future__ import annotations

import torch

# The IR's dtypes (torchtpu.ops.tracing.TORCH_TO_IR maps them to IR names).
COMPUTE: tuple[torch.dtype, ...] = (
    torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8,
    torch.uint8, torch.bool, torch.complex64,
)
# Kept as bytes (copies, views, hash_tensor's uint64 result); no op computes on them.
STORAGE_ONLY: tuple[torch.dtype, ...] = (torch.uint16, torch.uint32, torch.uint64)
STORAGE: tuple[torch.dtype, ...] = COMPUTE + STORAGE_ONLY

FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
FAMILIES: dict[str, tuple[torch.dtype, ...]] = {
    "storage and copies": STORAGE,
    "elementwise, reductions, indexing, shape ops": COMPUTE,
    "matmul, conv (MXU)": FLOATS + (torch.complex64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8),
    "grouped_mm": (torch.float32, torch.bfloat16, torch.float16),
    "autocast": (torch.bfloat16, torch.float16),
}
NOTES: dict[torch.dtype, str] = {
    torch.float64: "exact on the simulator (host float64); a real TPU has no float64 units and emulates it",
    torch.bfloat16: "native; MXU products in bf16 with float32 accumulation",
    torch.float32: "MXU products as 1, 3 or 6 bf16 passes (torch.tpu.Precision)",
}

_COMPUTE = frozenset(COMPUTE)
_STORAGE = frozenset(STORAGE)


class UnsupportedDtypeError(TypeError):
    """A dtype the tpu device cannot hold."""


class DtypeNotImplementedError(NotImplementedError):
    """A dtype that no tpu op (or no op of one family) computes on."""


def _names(dtypes: tuple[torch.dtype, ...]) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def _refuse(dtype: torch.dtype, op: str, allowed: tuple[torch.dtype, ...], what: str,
            cls: type[Exception] = DtypeNotImplementedError) -> Exception:
    return cls(
        f"{op}: dtype {dtype} is not supported on the tpu device ({what}); supported: {_names(allowed)}. "
        "Convert first (e.g. x.to(torch.float32)) or keep the tensor on the CPU.")


def check_storage(dtype: torch.dtype, op: str) -> None:
    """Raises unless tensors of `dtype` may live on the device (`op` names what asked, e.g. "copy to tpu")."""
    if dtype not in _STORAGE:
        raise _refuse(dtype, op, STORAGE, "no device storage for it", UnsupportedDtypeError)


def check_compute(dtype: torch.dtype, op: str) -> None:
    """Raises unless lowered ops compute on `dtype` (`op` is the ATen op name, e.g. "aten::add.Tensor")."""
    if dtype not in _COMPUTE:
        what = "stored as bytes only, no op computes on it" if dtype in _STORAGE else "the IR has no such type"
        raise _refuse(dtype, op, COMPUTE, what)


def check_family(dtype: torch.dtype, op: str, family: str) -> None:
    """Raises unless `dtype` is in the op family's supported set (a key of FAMILIES)."""
    allowed = FAMILIES[family]
    if dtype not in allowed:
        raise _refuse(dtype, op, allowed, f"not supported by {family}")


def ir_name(dtype: torch.dtype, op: str) -> str:
    """The IR name of a compute dtype; raises UnsupportedDtypeError naming `op` for any other."""
    from torchtpu.ops.tracing import TORCH_TO_IR

    name = TORCH_TO_IR.get(dtype)
    if name is None:
        check_compute(dtype, op)
        raise _refuse(dtype, op, COMPUTE, "the IR has no such type")
    return name


def refusal_for(exc: KeyError, op: str) -> Exception | None:
    """The clear error for a dtype-table lookup (`TORCH_TO_IR[dtype]`) that failed inside a lowering, else None."""
    key = exc.args[0] if len(exc.args) == 1 else None
    if isinstance(key, torch.dtype):
        return _refuse(key, op, COMPUTE, "the IR has no such type")
    return None


def table() -> list[tuple[str, str]]:
    """(family, supported dtypes) rows, as docs/install.md shows them."""
    return [(family, _names(dtypes)) for family, dtypes in FAMILIES.items()]
