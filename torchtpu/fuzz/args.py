"""Schema-driven argument generation: one random call of an ATen overload, built from its FunctionSchema.

`make_call(op, rng)` returns a `Call`: positional and keyword arguments in which every tensor is a `TensorArg`
(a CPU base tensor plus the view that makes it non-contiguous, expanded or sliced), so the very same call can
be materialized on CPU and on "tpu" (`Call.materialize(device)`). Shapes share one main shape per call (most
ops need compatible operands), with broadcastable and unrelated variants, 0-size dims, 0-dim tensors; values
include NaN, +-inf, -0.0, huge and tiny numbers; index-like arguments include negative and out-of-range indices.
Everything is small (numel capped) so no call can allocate much.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

DTYPES = (*[torch.float32] * 5, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64)  # float32 five times: most drawn
INDEX_NAMES = ("index", "indices", "idx", "offsets", "lengths", "input_lengths", "target_lengths", "indptr")
SIZE_NAMES = ("size", "shape", "sizes", "output_size", "stride", "new_size", "split_sizes")
DIM_NAMES = ("dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "axis", "source", "destination", "dims",
             "axis0", "axis1", "src_dim")
STR_CHOICES = {
    "reduce": ("sum", "prod", "mean", "amax", "amin", "add", "multiply"),
    "rounding_mode": ("trunc", "floor"),
    "approximate": ("none", "tanh"),
    "side": ("left", "right"),
    "interpolation": ("linear", "lower", "higher", "midpoint", "nearest"),
    "padding_mode": ("zeros", "border", "reflection"),
    "mode": ("bilinear", "nearest", "reflect", "replicate", "constant", "circular"),
    "reduction": ("none", "mean", "sum"),
    "padding": ("same", "valid"),
}


@dataclass
class TensorArg:
    """A tensor argument: `base` (CPU) and the view applied to it on each device."""

    base: torch.Tensor
    view: str = "contiguous"  # contiguous | transpose | step | expand | offset

    def materialize(self, device: str) -> torch.Tensor:
        t = self.base.to(device) if device != "cpu" else self.base.clone()
        if self.view == "transpose":
            return t.transpose(-1, -2)
        if self.view == "step":
            return t[..., ::2]
        if self.view == "expand":
            return t.expand(*t.shape[:-1], 3)
        if self.view == "offset":
            return t.reshape(-1)[1:]
        return t

    def __repr__(self) -> str:
        shape = list(self.materialize("cpu").shape)
        return f"T({str(self.base.dtype).removeprefix('torch.')}{shape}{'' if self.view == 'contiguous' else ','}" \
               f"{'' if self.view == 'contiguous' else self.view})"


class Device:
    """Placeholder for a `device=` argument: the device the call runs on."""

    def __repr__(self) -> str:
        return "DEVICE"


DEVICE = Device()


@dataclass
class Call:
    op: torch._ops.OpOverload
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def materialize(self, device: str) -> tuple[list[Any], dict[str, Any]]:
        def conv(x: Any) -> Any:
            if isinstance(x, TensorArg):
                return x.materialize(device)
            if isinstance(x, Device):
                return torch.device(device)
            if isinstance(x, list):
                return [conv(y) for y in x]
            return x

        return [conv(a) for a in self.args], {k: conv(v) for k, v in self.kwargs.items()}

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.op}({', '.join(parts)})"


class _Gen:
    """Draws one call; `main` is the shared shape, `dtype` the shared dtype."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        ndim = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        sizes = [0, 1, 2, 3, 4, 5] if rng.random() < 0.08 else [1, 2, 3, 4, 5]
        self.main = tuple(int(rng.choice(sizes)) for _ in range(ndim))
        self.dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        self.specials = rng.random() < 0.35

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def shape(self) -> tuple[int, ...]:
        r = self.rng.random()
        if r < 0.65:
            return self.main
        if r < 0.8 and self.main:  # broadcastable: some dims 1, maybe fewer leading dims
            s = [1 if self.chance(0.4) else d for d in self.main]
            return tuple(s[int(self.rng.integers(len(s) + 1)):]) if self.chance(0.3) else tuple(s)
        return tuple(int(self.rng.integers(0 if self.chance(0.05) else 1, 5))
                     for _ in range(int(self.rng.integers(0, 4))))

    def values(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        n = int(np.prod(shape)) if shape else 1
        rng = self.rng
        if dtype == torch.bool:
            data = torch.from_numpy(rng.random(n) < 0.5)
        elif dtype.is_floating_point or dtype.is_complex:
            real = rng.standard_normal(n) * float(rng.choice([1.0, 1.0, 3.0, 0.1, 100.0]))
            if self.specials and n:
                special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, 1e-40, 1.0, -1.0])
                where = rng.random(n) < 0.25
                real[where] = rng.choice(special, int(where.sum()))
            data = torch.from_numpy(real)
            if dtype.is_complex:
                data = torch.complex(data, torch.from_numpy(rng.standard_normal(n)))
        else:
            info = torch.iinfo(dtype)
            lo, hi = max(info.min, -10), min(info.max, 10)
            ints = rng.integers(lo, hi + 1, n)
            if self.specials and n:
                where = rng.random(n) < 0.2
                ints[where] = rng.choice([info.min, info.max, 0, -1 if info.min < 0 else 1], int(where.sum()))
            data = torch.from_numpy(ints)
        return data.to(dtype).reshape(shape)

    def tensor(self, shape: tuple[int, ...] | None = None, dtype: torch.dtype | None = None,
               views: bool = True) -> TensorArg:
        shape = self.shape() if shape is None else shape
        if dtype is None:
            dtype = self.dtype if self.chance(0.8) else DTYPES[int(self.rng.integers(len(DTYPES)))]
        view = "contiguous"
        if views and self.chance(0.3):
            view = str(self.rng.choice(["transpose", "step", "expand", "offset"]))
            if view == "transpose" and len(shape) >= 2:
                return TensorArg(self.values((*shape[:-2], shape[-1], shape[-2]), dtype), view)
            if view == "step" and shape:
                return TensorArg(self.values((*shape[:-1], 2 * shape[-1]), dtype), view)
            if view == "expand" and shape and shape[-1] == 3:
                return TensorArg(self.values((*shape[:-1], 1), dtype), view)
            if view == "offset":
                n = int(np.prod(shape)) if shape else 1
                if len(shape) == 1:
                    return TensorArg(self.values((n + 1,), dtype), view)
        return TensorArg(self.values(shape, dtype), "contiguous")

    def index_tensor(self, bound: int | None = None) -> TensorArg:
        n = bound if bound is not None else (max(self.main) if self.main else 1)
        shape = self.main if self.chance(0.5) else (int(self.rng.integers(0, 4)),)
        count = int(np.prod(shape)) if shape else 1
        lo, hi = (-n, n) if self.chance(0.3) else (0, max(n, 1))
        vals = self.rng.integers(lo, hi, count) if hi > lo else np.zeros(count, dtype=np.int64)
        if self.chance(0.1) and count:
            vals[int(self.rng.integers(count))] = int(self.rng.choice([n, -n - 1, 10 ** 6]))
        dtype = torch.int64 if self.chance(0.9) else torch.int32
        return TensorArg(torch.from_numpy(vals).to(dtype).reshape(shape), "contiguous")

    def dim(self) -> int:
        nd = max(len(self.main), 1)
        if self.chance(0.05):
            return int(self.rng.choice([nd, -nd - 1, 64]))
        return int(self.rng.integers(-nd, nd))

    def int_list(self, name: str, n: int | None) -> list[int]:
        if name in ("dim", "dims", "dim_list"):
            nd = len(self.main)
            k = int(self.rng.integers(0, nd + 1)) if n is None else n
            picks = list(self.rng.permutation(nd)[:k]) if nd else []
            return [int(p) - (nd if self.chance(0.3) else 0) for p in picks]
        if name in SIZE_NAMES:
            numel = int(np.prod(self.main)) if self.main else 1
            if self.chance(0.5) and n is None:  # a reshape of the main shape
                shape = list(self.rng.permutation(list(self.main))) if self.main else []
                if shape and self.chance(0.3):
                    shape[int(self.rng.integers(len(shape)))] = -1
                if self.chance(0.3) and numel:
                    shape = [numel]
                return [int(s) for s in shape]
            k = n if n is not None else int(self.rng.integers(0, 4))
            return [int(self.rng.integers(0 if self.chance(0.1) else 1, 5)) for _ in range(k)]
        k = n if n is not None else int(self.rng.integers(1, 3))
        return [int(self.rng.integers(0 if "pad" in name else 1, 4)) for _ in range(k)]

    def scalar(self) -> Any:
        r = self.rng.random()
        if r < 0.35:
            return int(self.rng.integers(-5, 6))
        if r < 0.7:
            return float(np.round(self.rng.standard_normal() * 3, 3))
        if r < 0.85:
            return float(self.rng.choice([np.nan, np.inf, -np.inf, -0.0, 1e30, 2.0 ** 40]))
        if r < 0.95:
            return bool(self.chance(0.5))
        return complex(float(self.rng.standard_normal()), 1.0)

    def value(self, name: str, type_str: str, default: Any, n: int | None, is_out: bool) -> Any:
        t = type_str
        if t.startswith("Optional["):
            if (default is None and self.chance(0.5)) or self.chance(0.15):
                return None
            t = t[len("Optional["):-1]
        if t == "Tensor":
            if is_out:
                return TensorArg(torch.empty((0,) if self.chance(0.5) else self.main, dtype=self.dtype))
            if name in INDEX_NAMES:
                return self.index_tensor()
            if name == "target":
                return self.index_tensor() if self.chance(0.5) else self.tensor()
            if name == "mask":
                return self.tensor(dtype=torch.bool)
            if name in ("weight", "bias", "running_mean", "running_var") and self.main and self.chance(0.5):
                pick = self.main[1] if len(self.main) > 1 and self.chance(0.6) else self.main[-1]
                return self.tensor(shape=(pick,), dtype=self.dtype)
            return self.tensor()
        if t in ("List[Tensor]", "List[Optional[Tensor]]"):
            if name in ("indices",) or "Optional" in t:
                return [None if self.chance(0.3) else
                        (self.tensor(dtype=torch.bool, views=False) if self.chance(0.2) else self.index_tensor())
                        for _ in range(int(self.rng.integers(1, max(len(self.main), 1) + 1)))]
            if is_out:
                return [TensorArg(torch.empty((0,), dtype=self.dtype)) for _ in range(2)]
            return [self.tensor() for _ in range(int(self.rng.integers(1, 4)))]
        if name in ("dtype", "out_dtype", "scalar_type"):  # ScalarType prints as int in schemas
            return DTYPES[int(self.rng.integers(len(DTYPES)))]
        if name == "memory_format":
            return self.rng.choice([torch.contiguous_format, torch.preserve_format])
        if t in ("int", "SymInt"):
            if name in DIM_NAMES:
                return self.dim()
            if default is not None and self.chance(0.4):
                return int(default)
            return int(self.rng.integers(-2, 7))
        if t in ("List[int]", "List[SymInt]"):
            if name in ("dim", "dims") and n == 1:
                return [self.dim()]
            return self.int_list(name, n)
        if t == "float":
            if name in ("p", "momentum", "alpha", "beta", "lambd", "label_smoothing") and self.chance(0.7):
                return float(np.round(self.rng.random(), 3))
            if name == "eps":
                return 1e-5
            return float(self.rng.choice([0.5, 2.0, -1.0, 1e-3, np.nan, np.inf, 0.0, 3.0]))
        if t == "List[float]":
            return [float(self.rng.choice([0.5, 1.0, 2.0])) for _ in range(n or 2)]
        if t in ("Scalar", "number"):
            return self.scalar()
        if t == "List[number]":
            return [self.scalar() for _ in range(n or int(self.rng.integers(1, 4)))]
        if t == "List[bool]":
            return [bool(self.chance(0.7)) for _ in range(n or 3)]
        if t == "bool":
            return bool(self.chance(0.5))
        if t == "ScalarType":
            return DTYPES[int(self.rng.integers(len(DTYPES)))]
        if t == "str":
            choices = STR_CHOICES.get(name)
            if default is not None and (choices is None or self.chance(0.5)):
                return default
            return str(self.rng.choice(choices)) if choices else default
        if t == "Device":
            return DEVICE
        if t == "MemoryFormat":
            return self.rng.choice([torch.contiguous_format, torch.preserve_format])
        if t in ("Layout", "Generator"):
            return None
        raise Unsupported(f"argument type {type_str}")


class Unsupported(Exception):
    """The schema has an argument the generator cannot make."""


def make_call(op: torch._ops.OpOverload, rng: np.random.Generator, seed: int = 0) -> Call:
    """One random call of `op` from its schema (raises Unsupported for argument types it cannot make)."""
    gen = _Gen(rng)
    call = Call(op, seed=seed)
    skipped = False
    for arg in op._schema.arguments:
        has_default = arg.has_default_value()
        default = arg.default_value if has_default else None
        is_out = arg.kwarg_only and arg.is_write
        if has_default and not is_out and gen.chance(0.4):
            skipped = True
            continue  # leave it at its default
        if arg.name in ("device",):
            value: Any = DEVICE
        elif arg.name in ("layout", "pin_memory", "generator"):
            skipped = True
            continue
        else:
            value = gen.value(arg.name, str(arg.type), default, arg.N, is_out)
        if arg.kwarg_only or skipped:  # after a left-out positional, by name
            call.kwargs[arg.name] = value
        else:
            call.args.append(value)
    return call
