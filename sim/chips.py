"""Chip parameters: owns `ChipSpec`, the table `CHIPS` and `get_chip`.

The numbers live in `sim/data/chips.json` (one entry per generation, a source for every field); this module
only loads, validates and exposes them. Adding a chip generation is a data change: add a JSON entry.
Units are SI (FLOP/s, bytes, bytes/s, Hz, seconds), per chip unless the field name says `per_core`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = ["CHIPS", "DEFAULT_CHIP", "ChipSpec", "MxuDtypeError", "get_chip"]

_DATA = Path(__file__).with_name("data") / "chips.json"


class MxuDtypeError(NotImplementedError):
    """A matmul whose operand type the chip's MXU does not multiply (int8 on v7x, fp8 on v4/v5e, ...)."""


def _empty() -> MappingProxyType:
    return MappingProxyType({})


@dataclass(frozen=True)
class ChipSpec:
    """One TPU generation. See `sources` for where each number comes from and `unknown` for guesses."""

    name: str
    display_name: str
    bf16_flops: float
    int8_ops: float
    fp8_flops: float | None
    mxu_int8: bool  # s8 x s8 -> s32 products on the MXU
    mxu_fp8: tuple[str, ...]  # torch's fp8 formats the MXU multiplies ('float8_e5m2', 'float8_e4m3fn')
    tensorcores: int
    mxus_per_core: int
    mxu_rows: int
    mxu_cols: int
    clock_hz: float
    hbm_bytes: float
    hbm_bw: float
    vmem_bytes_per_core: int
    vpu_flops: float
    ici_dims: int
    ici_links: int
    ici_link_bw_oneway: float
    ici_link_bw_bidi: float
    ici_wraparound_min_axis: int
    pod_chips: int
    pod_shape: tuple[int, ...]
    chips_per_host: int
    dcn_bw: float | None
    pcie_bw: float
    launch_overhead_s: float
    sources: MappingProxyType = field(compare=False, repr=False, default_factory=_empty)
    unknown: tuple[str, ...] = field(compare=False, repr=False, default=())
    notes: str = field(compare=False, repr=False, default="")
    alternates: MappingProxyType = field(compare=False, repr=False, default_factory=_empty)

    # ---- derived conveniences (computed from the fields above, no new numbers) ----
    @property
    def mxus(self) -> int:
        """MXUs on the whole chip (tensorcores x mxus_per_core)."""
        return self.tensorcores * self.mxus_per_core

    @property
    def mxu_array(self) -> int:
        """Systolic array width used for K tiling and padding (128, or 256 on v6e/v7x)."""
        return self.mxu_cols

    @property
    def hbm_critical_intensity(self) -> float:
        """bf16 FLOP per HBM byte at which a kernel turns compute-bound ([SB-roof])."""
        return self.bf16_flops / self.hbm_bw

    def peak_flops(self, dtype: str = "bfloat16") -> float:
        """Peak MXU rate for an input dtype name ('bfloat16', 'float32', 'int8', 'float8_*')."""
        d = str(dtype).lower()
        if d in ("int8", "uint8", "s8", "u8"):
            return self.int8_ops
        if d.startswith("float8") or d.startswith("f8"):
            return self.fp8_flops if self.fp8_flops is not None else self.bf16_flops
        return self.bf16_flops

    def mxu_multiplies(self, dtype: str) -> bool:
        """Whether this chip's MXU takes `dtype` operands natively (int8/uint8 pairs, or an fp8 format listed in
        `mxu_fp8`); every chip takes float32 and bfloat16 ones."""
        d = str(dtype).lower()
        if d in ("int8", "uint8"):
            return self.mxu_int8
        if d.startswith("float8"):
            return d in self.mxu_fp8
        return True

    def check_mxu_operands(self, dtype: str, what: str) -> None:
        """Raises MxuDtypeError naming `what`, this chip and the chips whose MXU takes `dtype`, unless it does."""
        if self.mxu_multiplies(dtype):
            return
        able = [n for n, c in CHIPS.items() if c.mxu_multiplies(dtype)]
        field = "mxu_int8" if "int" in str(dtype) else "mxu_fp8"
        raise MxuDtypeError(
            f"{what}: the {self.display_name} ({self.name}) MXU has no {dtype} x {dtype} products "
            f"(sim/data/chips.json {field}: {self.sources.get(field)}); "
            f"chips whose MXU has them: {', '.join(able) or 'none'}. Pick one with TORCHTPU_CHIP, or dequantize "
            "to bfloat16 first.")

    def has_wraparound(self, axis: int) -> bool:
        """Whether a slice axis of this length gets torus wraparound links.

        2D-torus chips (v5e, v6e): only a full-pod axis (16) wraps [SB-tpus]. 3D chips (v4, v5p, v7x): slices
        made of full 4x4x4 cubes wrap, modelled as 'axis a multiple of 4' [GC-v4], [GC-v5p].
        """
        m = self.ici_wraparound_min_axis
        if self.ici_dims == 2:
            return axis >= m
        return axis >= m and axis % m == 0


# other spellings, including JAX device_kind strings ([JAX-info] / tpu-chips.json "jax_device_kind")
_ALIASES = {"v5lite": "v5e", "v5": "v5p", "v6lite": "v6e", "v6": "v6e", "7x": "v7x", "v7": "v7x",
            "ironwood": "v7x", "trillium": "v6e"}

DEFAULT_CHIP = "v5e"  # project default ([DESIGN] sim options TORCHTPU_CHIP, default v5e)

_META = ("sources", "unknown", "notes", "alternates")


def _build(name: str, entry: dict[str, Any]) -> ChipSpec:
    names = {f.name for f in fields(ChipSpec)}
    values = {k: v for k, v in entry.items() if k in names}
    extra = set(entry) - names
    if extra:
        raise ValueError(f"chips.json entry {name!r} has unknown fields {sorted(extra)}")
    missing = names - set(values) - {"name", "unknown", "notes", "alternates"}
    if missing:
        raise ValueError(f"chips.json entry {name!r} lacks fields {sorted(missing)}")
    sources = values.pop("sources")
    nosource = [k for k in values if k not in _META and k != "display_name" and k not in sources]
    if nosource:
        raise ValueError(f"chips.json entry {name!r}: no source for {nosource}")
    values["pod_shape"] = tuple(values["pod_shape"])
    values["mxu_fp8"] = tuple(values["mxu_fp8"])
    for k in ("tensorcores", "mxus_per_core", "mxu_rows", "mxu_cols", "ici_dims", "ici_links",
              "ici_wraparound_min_axis", "pod_chips", "chips_per_host", "vmem_bytes_per_core"):
        values[k] = int(values[k])
    for k in ("bf16_flops", "int8_ops", "clock_hz", "hbm_bytes", "hbm_bw", "vpu_flops", "ici_link_bw_oneway",
              "ici_link_bw_bidi", "pcie_bw", "launch_overhead_s"):
        values[k] = float(values[k])
    return ChipSpec(
        name=name,
        sources=MappingProxyType(dict(sources)),
        unknown=tuple(values.pop("unknown", ())),
        notes=values.pop("notes", ""),
        alternates=MappingProxyType({k: list(v) for k, v in values.pop("alternates", {}).items()}),
        **values,
    )


def load_chips(path: str | Path = _DATA) -> dict[str, ChipSpec]:
    """Read a chips.json file into {short name: ChipSpec} (validating that every field has a source)."""
    raw = json.loads(Path(path).read_text())
    return {name: _build(name, entry) for name, entry in raw["chips"].items()}


CHIPS: dict[str, ChipSpec] = load_chips()


def get_chip(name: str | ChipSpec | None = None) -> ChipSpec:
    """Return the ChipSpec for a short name ('v5e', case-insensitive; 'TPU v5e', JAX device kinds such as
    'TPU v5 lite' or 'TPU7x', and display names are also accepted).

    None returns the default chip (v5e). A ChipSpec is returned unchanged. Unknown names raise ValueError
    listing the valid ones.
    """
    if isinstance(name, ChipSpec):
        return name
    if name is None:
        return CHIPS[DEFAULT_CHIP]
    key = str(name).strip().lower().replace(" ", "").replace("(trillium)", "").replace("(ironwood)", "")
    if key.startswith("tpu"):
        key = key[3:]
    key = _ALIASES.get(key, key)
    if key in CHIPS:
        return CHIPS[key]
    raise ValueError(f"unknown TPU chip {name!r}; valid chips: {', '.join(CHIPS)}")
