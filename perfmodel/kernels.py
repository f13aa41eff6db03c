"""Published TPU kernel measurements and kernel designs that the op costs use where they apply.

Two kinds of source, both cited where they are used:

* **Measured splash attention on TPU7x (Ironwood)** [TKX-splash]: tokamax's microbenchmarks of its Splash
  Attention kernel (forward and fused backward, causal, bf16, batch 1, 32 query / 8 kv heads, block sizes and
  layouts exhaustively tuned per shape), as the fraction of the TensorCore's peak reached on the useful causal
  FLOPs 0.5 * q_heads * S * S * (2 qk + 2 v) (backward: 2.5x the forward). `splash_mfu` interpolates the table in
  log2(S) and returns None outside it (other chips, other head widths, sliding windows, S below the first
  measured length), where the simulator's block model (`perfmodel.ops.attention_cost`) is used instead. Above
  the last measured length the last value is kept (the measured trend flattens: 30.9% at 32k, 34.3% at 128k).
* **Grouped matmul (MoE) tiling** [TKX-gmm], [MT-moe]: MaxText's sparse-matmul MoE runs its expert matmuls as
  grouped matmuls (megablox / tokamax `ragged_dot`, "TPU implementation of the MegaBlocks paper",
  arXiv:2211.15841): tokens sorted by expert form one [m, k] operand split into groups of rows; the kernel tiles
  m by tile_m and visits every m tile once per group that has rows in it (`make_group_metadata`:
  tiles_m <= visits <= tiles_m + groups - 1), each visit a full tile on the MXU with the other groups' rows
  masked. `gmm_tiling` is tokamax's TPU7x heuristic (tile_m starts at min(m, 1024), tile_k and tile_n at the
  full dimension; tiles are deflated by halving, multiples of 128, until the double-buffered input tiles plus
  three output tiles fit 75% of half the core's VMEM: m first, then n, then k; the transposed kernel (weight
  gradient, m is the contraction) deflates k, n, then m). `gmm_visit_factor` is visits / tiles_m with every
  group boundary inside a tile (routed loads are random, so a boundary lands on a tile edge with probability
  about 1 / tile_m). On other chips (no tokamax heuristic) MaxText's configured megablox tiles are used
  (base.yml: 512 rows, 1024 wide). Each visited tile is costed by the simulator with double-buffered weight
  tiles (`torchtpu.sim.systolic.mxu_schedule`): a kernel streams tile after tile.

Sources:
* [TKX-splash] openxla/tokamax `tokamax/_src/ops/experimental/tpu/splash_attention/microbenchmarks.pdf`
  ("Performance Benchmarks on Ironwood TPU", November 13, 2025; peak 1.15e15 FLOP/s per TensorCore).
* [TKX-gmm] openxla/tokamax `tokamax/_src/ops/ragged_dot/pallas_mosaic_tpu.py` (`_get_heuristics_config`,
  `_tgmm_heuristics_config`, `_fit_within_tpu_vmem`, `_deflate_tile`) and `pallas_mosaic_tpu_kernel.py`
  (`make_group_metadata`), snapshot 783ea95.
* [MT-moe] AI-Hypercomputer/maxtext `src/maxtext/layers/moe.py` (`sparse_matmul`: permute, gmm, unpermute;
  `use_tokamax_gmm` calls tokamax `ragged_dot` with its default config), snapshot e591f30.
* Devices per chip: TPU7x has no megacore, so each TensorCore is its own JAX device and runs its own kernels
  on its shard (tpu-facts section 1, [JAX-info]); v4 / v5p megacore and single-core chips: one device per chip.
"""

from __future__ import annotations

import math

from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["MEGABLOX_TILE_KN", "MEGABLOX_TILE_M", "SPLASH_BWD_FLOPS_RATIO", "SPLASH_V7X", "devices_per_chip",
           "gmm_chip_tiling", "gmm_tiling", "gmm_visit_factor", "splash_mfu"]

# [TKX-splash]: {(qk head dim, v head dim): {S: (forward MFU, backward MFU)}}, causal, q_len = kv_len = S.
SPLASH_V7X: dict[tuple[int, int], dict[int, tuple[float, float]]] = {
    (128, 128): {4096: (0.2062, 0.2521), 8192: (0.2487, 0.3015), 32768: (0.3091, 0.3473),
                 131072: (0.3426, 0.3716)},
    (192, 128): {4096: (0.2542, 0.3008), 8192: (0.3030, 0.3599), 32768: (0.3762, 0.4195),
                 131072: (0.4120, 0.4549)},
    (256, 256): {4096: (0.3582, 0.4800), 8192: (0.4486, 0.5690), 32768: (0.5681, 0.6581),
                 131072: (0.6335, 0.7171)},
}
SPLASH_BWD_FLOPS_RATIO = 2.5  # [TKX-splash]: "Required FLOPs BWD: 2.5 * Required FLOPs FWD"
_MEASURED = {"v7x": SPLASH_V7X}
# MaxText base.yml megablox tiles: wi/wo_tile_{fwd,dlhs,drhs}_batch_seq = 512 [MT-moe] (chips other than TPU7x,
# where tokamax has no tiling heuristic and MaxText passes its configured tiles)
MEGABLOX_TILE_M = 512
MEGABLOX_TILE_KN = 1024  # wi/wo_tile_*_{embed,mlp}_dim = 1024 [MT-moe] (base.yml)
_DEVICES_PER_CHIP = {"v7x": 2}  # no megacore: one JAX device per TensorCore (tpu-facts section 1)


def devices_per_chip(chip: ChipSpec | str) -> int:
    """JAX devices per chip: kernels run per device on the device's shard."""
    return _DEVICES_PER_CHIP.get(get_chip(chip).name, 1)


def splash_mfu(chip: ChipSpec | str, seq: int, qk_dim: int, v_dim: int, backward: bool = False) -> float | None:
    """Measured fraction of peak of causal splash attention over a sequence of `seq` tokens, or None when no
    measurement covers the chip, head widths or length ([TKX-splash], interpolated in log2(seq))."""
    table = _MEASURED.get(get_chip(chip).name, {}).get((int(qk_dim), int(v_dim)))
    if not table:
        return None
    lengths = sorted(table)
    if seq < lengths[0]:
        return None
    col = 1 if backward else 0
    if seq >= lengths[-1]:
        return table[lengths[-1]][col]
    for lo, hi in zip(lengths, lengths[1:]):
        if lo <= seq <= hi:
            w = (math.log2(seq) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            return table[lo][col] * (1 - w) + table[hi][col] * w
    return None  # unreachable: the loop covers [lengths[0], lengths[-1])


def _deflate(tile: int) -> int:
    """tokamax `_deflate_tile`: halve, keep a multiple of 128, never below 128."""
    return 128 if tile <= 128 else max((tile // 2 // 128) * 128, 128)


def _fits(inputs: list[tuple[int, int]], out: tuple[int, int], vmem_per_core: float, nbytes: int = 2,
          buffers: int = 2) -> bool:
    """tokamax `_fit_within_tpu_vmem` on TPU7x: double-buffered inputs + 3 output tiles <= 0.75 x VMEM / 2."""
    total = sum(a * b for a, b in inputs) * nbytes * buffers + 3 * out[0] * out[1] * nbytes
    return total <= vmem_per_core / 2 * 0.75


def gmm_tiling(m: int, k: int, n: int, vmem_per_core: float, transposed: bool = False) -> tuple[int, int, int]:
    """(tile_m, tile_k, tile_n) of tokamax's TPU7x grouped-matmul heuristic for lhs [m, k] @ rhs[g, k, n]
    (`transposed`: the weight-gradient kernel lhs [m, k]^T @ rhs [m, n], m contracted) [TKX-gmm]."""
    tm, tk, tn = min(int(m), 1024), int(k), int(n)
    if transposed:
        def fits(a: int, b: int, c: int) -> bool:
            return _fits([(a, b), (a, c)], (b, c), vmem_per_core)
        order = ("k", "n", "m")
    else:
        def fits(a: int, b: int, c: int) -> bool:
            return _fits([(a, b), (b, c)], (a, c), vmem_per_core)
        order = ("m", "n", "k")
    tiles = {"m": tm, "k": tk, "n": tn}
    for dim in order:
        while not fits(tiles["m"], tiles["k"], tiles["n"]) and tiles[dim] > 128:
            tiles[dim] = _deflate(tiles[dim])
    return tiles["m"], tiles["k"], tiles["n"]


def gmm_visit_factor(rows: float, groups: float, tile_m: int) -> float:
    """MXU work of a grouped matmul over `rows` sorted rows in `groups` non-empty groups relative to one pass
    over its m tiles: (tiles_m + groups - 1) / tiles_m, every boundary inside a tile [TKX-gmm]."""
    if rows <= 0 or tile_m <= 0:
        return 1.0
    tiles = max(1.0, math.ceil(rows / tile_m))
    return (tiles + max(0.0, groups - 1.0)) / tiles


def gmm_chip_tiling(chip: ChipSpec | str, rows: float, k: int, n: int, transposed: bool = False
                    ) -> tuple[int, int, int]:
    """(tile_m, tile_k, tile_n) of the grouped matmul over `rows` rows of one device: tokamax's heuristic on
    TPU7x, MaxText's configured megablox tiles (512, 1024, 1024, clipped to the dimensions) elsewhere."""
    chip = get_chip(chip)
    m = max(1, math.ceil(rows))
    if chip.name != "v7x":
        return min(m, MEGABLOX_TILE_M), min(int(k), MEGABLOX_TILE_KN), min(int(n), MEGABLOX_TILE_KN)
    return gmm_tiling(m, k, n, chip.vmem_bytes_per_core, transposed)
