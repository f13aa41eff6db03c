"""Parallelism layouts and how they land on the TPU torus.

A `Layout` names the size of each mesh axis, MaxText style: inside a slice (ICI) `dp` (data), `fsdp` (data +
sharded weights/grads/optimizer, ZeRO-3), `tp` (tensor: heads and MLP hidden), `ep` (experts; dense layers
treat it as data), `cp` (context/sequence: the sequence is split, keys and values gathered); across slices
(DCN) `dcn_dp` and `dcn_fsdp`; pipeline stages `pp` (inside a slice) and `dcn_pp` (one or more stages per
slice, activations sent over DCN). The batch is sharded over dp x fsdp x ep (x dcn_dp x dcn_fsdp), the sequence
over cp, the layers over pp x dcn_pp.
`sp` = sequence-parallel activations under TP (saved activations sharded over tp as well), the MaxText and
Megatron-SP default.

`assign_axes` maps logical axes onto the physical slice torus (innermost, most communication-heavy first:
tp, ep, cp, fsdp, dp, pp), giving each logical axis the physical `Axis` pieces its collectives run over.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace

from torchtpu.perfmodel.collectives import Axis
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["ICI_AXES", "DCN_AXES", "Layout", "assign_axes", "default_slice_shape", "divisors"]

ICI_AXES = ("tp", "ep", "cp", "fsdp", "dp", "pp")  # assignment order, innermost first
DCN_AXES = ("dcn_dp", "dcn_fsdp", "dcn_pp")


@dataclass(frozen=True)
class Layout:
    """Mesh axis sizes; the product of ICI axes is the chips of one slice, of DCN axes the slices."""

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    ep: int = 1
    cp: int = 1
    dcn_dp: int = 1
    dcn_fsdp: int = 1
    pp: int = 1
    dcn_pp: int = 1
    sp: bool = True

    def __post_init__(self) -> None:
        bad = {k: v for k, v in asdict(self).items() if k != "sp" and (not isinstance(v, int) or v < 1)}
        if bad:
            raise ValueError(f"mesh axis sizes must be positive integers, got {bad}")

    @property
    def ici_size(self) -> int:
        return self.dp * self.fsdp * self.tp * self.ep * self.cp * self.pp

    @property
    def dcn_size(self) -> int:
        return self.dcn_dp * self.dcn_fsdp * self.dcn_pp

    @property
    def stages(self) -> int:
        """Pipeline stages, pp x dcn_pp."""
        return self.pp * self.dcn_pp

    @property
    def size(self) -> int:
        return self.ici_size * self.dcn_size

    @property
    def data_shards(self) -> int:
        """Ways the batch is split: dp * fsdp * ep * dcn_dp * dcn_fsdp."""
        return self.dp * self.fsdp * self.ep * self.dcn_dp * self.dcn_fsdp

    @property
    def weight_shards(self) -> int:
        """Ways a dense weight is split in memory: fsdp * tp * dcn_fsdp."""
        return self.fsdp * self.tp * self.dcn_fsdp

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in asdict(self).items() if k != "sp" and v != 1]
        if self.tp > 1 and not self.sp:
            parts.append("sp=0")
        return ",".join(parts) or "single"

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in asdict(self).items() if k != "sp"}

    @classmethod
    def parse(cls, text: str, n_chips: int | None = None, n_slices: int = 1) -> Layout:
        """'fsdp=-1,tp=8' -> Layout; one axis may be -1 (fill the slice; a DCN axis fills the slices).

        With `n_chips` given, checks that the layout uses exactly n_chips in n_slices slices; an unnamed DCN
        extent defaults to dcn_dp = n_slices.
        """
        vals: dict[str, int] = {}
        sp = True
        for item in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
            key, _, val = item.partition("=") if "=" in item else item.partition(":")
            key = key.strip().lower()
            if key == "sp":
                sp = val.strip() not in ("0", "false", "no")
                continue
            if key not in ICI_AXES + DCN_AXES:
                raise ValueError(f"unknown mesh axis {key!r}; valid: {', '.join(ICI_AXES + DCN_AXES)}, sp")
            try:
                vals[key] = int(val)
            except ValueError:
                raise ValueError(f"mesh axis {key}={val.strip()!r} is not an integer") from None
        if n_chips is not None:
            per_slice = n_chips // max(1, n_slices)
            if n_chips % max(1, n_slices):
                raise ValueError(f"{n_chips} chips do not split into {n_slices} slices")
            vals = _fill(vals, ICI_AXES, per_slice)
            if not any(k in vals for k in DCN_AXES):
                vals["dcn_dp"] = n_slices
            vals = _fill(vals, DCN_AXES, n_slices)
        lay = cls(**{k: v for k, v in vals.items()}, sp=sp)
        if n_chips is not None and lay.size != n_chips:
            raise ValueError(f"layout {lay} uses {lay.size} chips, not {n_chips}")
        return lay

    def with_(self, **changes: int) -> Layout:
        return replace(self, **changes)


def _fill(vals: dict[str, int], axes: tuple[str, ...], total: int) -> dict[str, int]:
    vals = dict(vals)
    free = [k for k in axes if vals.get(k) == -1]
    if len(free) > 1:
        raise ValueError("at most one -1 per group of axes")
    known = math.prod(v for k, v in vals.items() if k in axes and v != -1)
    if free:
        if total % known:
            raise ValueError(f"axes {vals} do not divide {total}")
        vals[free[0]] = total // known
    return vals


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_slice_shape(chip: ChipSpec | str, n_chips: int) -> tuple[int, ...]:
    """A plausible slice topology for n chips: 2D (v5e, v6e) or 3D tori built of 4x4x4 cubes (v4, v5p, v7x).

    Balanced factors (powers of two first), e.g. v5e 256 -> 16x16, v5p 128 -> 4x4x8, 3840 -> 12x16x20.
    """
    chip = get_chip(chip)
    dims = chip.ici_dims
    if n_chips <= 0:
        raise ValueError("n_chips must be positive")
    return _balanced_shape(dims, n_chips)


@functools.lru_cache(maxsize=4096)
def _balanced_shape(dims: int, n_chips: int) -> tuple[int, ...]:
    best: tuple[int, ...] | None = None
    best_score = math.inf
    for a in divisors(n_chips):
        rest = n_chips // a
        cands = [(a, rest)] if dims == 2 else [(a, b, rest // b) for b in divisors(rest)]
        for shape in cands:
            shape = tuple(sorted(shape))
            cube = dims == 3 and n_chips >= 64
            if cube and any(s % 4 for s in shape):
                continue
            score = max(shape) / min(shape) + (0 if all(s & (s - 1) == 0 for s in shape) else 0.5)
            if score < best_score:
                best, best_score = shape, score
    if best is None:  # no cube-compatible factorisation: a line
        best = (1,) * (dims - 1) + (n_chips,)
    return best


def assign_axes(chip: ChipSpec | str, layout: Layout, shape: tuple[int, ...] | None = None) -> dict[str, list[Axis]]:
    """Physical torus pieces for each ICI logical axis of `layout` on a slice of `shape`.

    Greedy, innermost logical axis first: take a whole physical dimension of the right size, else whole
    dimensions whose product matches, else a contiguous piece of one dimension (a line: no wraparound). A
    dimension keeps its wraparound when one logical axis covers it fully (also when strided over a ring).
    """
    chip = get_chip(chip)
    shape = shape or default_slice_shape(chip, layout.ici_size)
    if math.prod(shape) != layout.ici_size:
        raise ValueError(f"slice shape {shape} has {math.prod(shape)} chips, layout {layout} needs {layout.ici_size}")
    bw = chip.ici_link_bw_bidi
    rem = list(shape)
    out: dict[str, list[Axis]] = {}
    for name in ICI_AXES:
        n = getattr(layout, name)
        pieces: list[Axis] = []
        if n > 1:
            exact = [i for i, r in enumerate(rem) if r == n]
            if exact:
                i = exact[0]
                pieces.append(Axis(n, chip.has_wraparound(shape[i]), bw))
                rem[i] = 1
                n = 1
            for i in sorted(range(len(rem)), key=lambda j: -rem[j]):
                if n > 1 and rem[i] > 1 and n % rem[i] == 0:
                    pieces.append(Axis(rem[i], chip.has_wraparound(shape[i]), bw))
                    n //= rem[i]
                    rem[i] = 1
            if n > 1:
                for i in range(len(rem)):
                    if rem[i] % n == 0 and rem[i] > 1:
                        pieces.append(Axis(n, False, bw))
                        rem[i] //= n
                        n = 1
                        break
            if n > 1:  # awkward sizes: spread as a line
                pieces.append(Axis(n, False, bw))
        out[name] = pieces
    return out
