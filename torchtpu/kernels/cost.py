"""The simulated cost of a JAX function or Pallas kernel on one chip: owns `kernel_cost` and the VMEM check.

It reads the function's jaxpr (shapes, grid, BlockSpecs, the kernel body), never values, and prices it with the
chip's `CostModel` (sim/cost.py), as the sim prices a Program:

* Around kernels (plain jax.numpy ops, which XLA fuses): one fused region, its MXU ops priced by
  `CostModel.matmul`, its element-wise ops on the VPU/EUP, HBM = the function's inputs read and outputs written.
* A `pallas_call`: its body runs `prod(grid)` times. Per step: MXU time of each `dot_general` on the *block*
  shapes (`CostModel.matmul` pads each to the MXU's tiles, so a block narrower than the array costs a full
  tile: a badly tiled kernel costs more) and VPU/EUP time of its element-wise work. HBM traffic is what the
  BlockSpecs imply: a VMEM block is fetched (inputs) or written back (outputs) each time its block index
  changes between consecutive grid steps, as Pallas's pipeline skips unchanged blocks (the index maps are
  evaluated over the whole grid; with scalar-prefetch operands every step counts as a change); blocks left in
  HBM (`memory_space=pl.ANY`) move only by the kernel's own `dma_start`s. Time = max(steps x compute, DMA)
  + the first fetch and last write-back (not overlapped) + a fixed overhead per grid step.
* Helion's kernels (`mpmd_map` over `emit_pipeline`): their manual DMAs (`dma_start`) and compute, loops
  multiplied by their trip counts (`scan` length; a `while` of unknown trips counts once, noted in `detail`).

The blocks' VMEM (double-buffered inputs and outputs, plus scratch) is checked against the chip's VMEM per core
(or the kernel's `vmem_limit_bytes`, if smaller): an over-subscribed kernel raises `VmemOversubscribed` naming
every block, as Mosaic refuses it on a chip (JAX's interpreter does not check capacity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchtpu.sim.cost import CostModel, CostRecord, dtype_bytes

# Fixed cost of one Pallas grid step on a TensorCore, ~0.35 us: JAX's Pallas TPU matmul guide
# (docs.jax.dev/en/latest/pallas/tpu/matmul.html, "Performance of pipelined kernels"); an assumption for chips
# the guide does not measure.
STEP_OVERHEAD_S = 0.35e-6
# Element-wise primitives the EUP computes (transcendentals [SB-tpus]); the rest of the element-wise set is VPU.
TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
                            "erf", "erfc", "erf_inv", "rsqrt", "sqrt", "cbrt", "pow", "atan2", "lgamma",
                            "digamma", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"})
# Primitives that move no data through the VPU: views, ref loads/stores of VMEM, control, synchronisation.
FREE = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim", "bitcast_convert_type", "iota",
                  "get", "swap", "program_id", "num_programs", "dma_wait", "semaphore_wait", "semaphore_signal",
                  "semaphore_read", "copy_p", "pjit", "closed_call", "run_scoped", "device_id", "delay",
                  "multiple_of", "stop_gradient", "slice", "dynamic_slice", "transpose", "concatenate",
                  "pad", "rev", "max_contiguous", "optimization_barrier"})
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin",
                        "reduce_and", "reduce_or", "cumsum", "cummax", "cumlogsumexp", "reduce_precision"})


class VmemOversubscribed(ValueError):
    """A Pallas kernel's blocks and scratch need more VMEM than the chip has (or the kernel's limit allows)."""


@dataclass
class Work:
    """Unit times and counts summed over a jaxpr (seconds on one chip)."""

    mxu_s: float = 0.0
    vpu_ops: float = 0.0
    trans: float = 0.0
    flops: float = 0.0
    padded_flops: float = 0.0
    dma_bytes: float = 0.0
    steps: float = 0.0  # pipeline steps of a hand-written (or Helion) pipeline: trips of the loops issuing DMAs
    dots: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add(self, other: Work, times: float = 1.0) -> None:
        self.mxu_s += other.mxu_s * times
        self.vpu_ops += other.vpu_ops * times
        self.trans += other.trans * times
        self.flops += other.flops * times
        self.padded_flops += other.padded_flops * times
        self.dma_bytes += other.dma_bytes * times
        if other.dma_bytes:
            self.steps = max(self.steps, max(other.steps, 1.0) * times)
        self.dots.extend(other.dots)
        self.notes.extend(other.notes)

    def compute_s(self, model: CostModel) -> float:
        return max(self.mxu_s, self.vpu_ops / model.chip.vpu_flops, self.trans / model.eup_rate())


def _size(aval: Any) -> int:
    return int(math.prod(getattr(aval, "shape", ()) or ()))


def _nbytes(aval: Any) -> float:
    """Bytes of an array (or a ref's array); 0 for what holds no data (semaphores, tokens)."""
    inner = getattr(aval, "inner_aval", aval)
    try:
        return _size(inner) * dtype_bytes(inner.dtype)
    except (AttributeError, ValueError):
        return 0.0


def _subjaxprs(value: Any) -> list[Any]:
    """The jaxprs inside one equation parameter (a Jaxpr, ClosedJaxpr, or a tuple of them)."""
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return [value.jaxpr]
    if isinstance(value, tuple | list):
        return [j for v in value for j in _subjaxprs(v)]
    return []


def _precision(params: dict) -> str:
    prec = params.get("precision")
    if isinstance(prec, tuple):
        prec = prec[0]
    name = str(prec).upper() if prec is not None else "DEFAULT"
    for p in ("HIGHEST", "HIGH"):
        if p in name:
            return p
    return "DEFAULT"


def _dot(eqn: Any, model: CostModel) -> CostRecord:
    lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
    (lc, rc), (lb, _rb) = eqn.params["dimension_numbers"]
    batch = math.prod(lhs.shape[d] for d in lb)
    k = math.prod(lhs.shape[d] for d in lc)
    m = math.prod(s for d, s in enumerate(lhs.shape) if d not in lc and d not in lb)
    n = math.prod(s for d, s in enumerate(rhs.shape) if d not in rc and d not in _rb)
    out = eqn.outvars[0].aval
    return model.matmul(batch, m, n, k, str(lhs.dtype), str(out.dtype), _precision(eqn.params), op="dot_general")


def _dma_bytes(eqn: Any) -> float:
    import jax

    try:
        leaves = [v.aval if hasattr(v, "aval") else v for v in eqn.invars]
        src = jax.tree_util.tree_unflatten(eqn.params["tree"], leaves)[0]  # the source ref, sliced
        shape = getattr(src, "shape", None)
        aval = getattr(src, "ref", src)
        inner = getattr(aval, "inner_aval", aval)
        if shape is None:
            shape = inner.shape
        return float(math.prod(shape) * dtype_bytes(inner.dtype))
    except Exception:  # noqa: BLE001 - an unknown operand layout: the destination buffer's size (an upper bound)
        return max((_nbytes(v.aval) for v in eqn.invars if hasattr(v, "aval")), default=0.0)


def walk(jaxpr: Any, model: CostModel, kernels: list[CostRecord], name: str) -> Work:
    """The work of `jaxpr`'s equations (pallas_calls priced on their own and appended to `kernels`)."""
    work = Work()
    for eqn in jaxpr.eqns:
        prim = eqn.primitive.name
        if prim == "pallas_call":
            kernels.append(pallas_call_cost(eqn, model, name))
            continue
        if prim == "dot_general":
            rec = _dot(eqn, model)
            work.mxu_s += rec.mxu_seconds
            work.vpu_ops += rec.detail.get("vpu_ops", 0.0)
            work.flops += rec.flops
            work.padded_flops += rec.padded_flops
            work.dots.append(tuple(eqn.invars[0].aval.shape) + tuple(eqn.invars[1].aval.shape))
            continue
        if prim == "dma_start":
            work.dma_bytes += _dma_bytes(eqn)
            work.steps = max(work.steps, 1.0)
            continue
        subs = [j for v in eqn.params.values() for j in _subjaxprs(v)]
        if subs:
            if prim == "cond":
                branches = [walk(j, model, kernels, name) for j in subs]
                work.add(max(branches, key=lambda w: (w.compute_s(model), w.dma_bytes)))
                continue
            times = float(eqn.params.get("length", 1)) if prim == "scan" else 1.0
            if prim == "while":
                work.notes.append("a while loop of unknown trip count is counted once")
            for j in subs:
                work.add(walk(j, model, kernels, name), times)
            continue
        if prim in FREE:
            continue
        if prim in REDUCTIONS:
            work.vpu_ops += sum(_size(v.aval) for v in eqn.invars if hasattr(v, "aval"))
            continue
        elements = sum(_size(v.aval) for v in eqn.outvars)
        work.vpu_ops += elements
        if prim in TRANSCENDENTAL:
            work.trans += elements
    return work


def _fetches(bm: Any, grid: tuple[int, ...], prefetched: bool) -> int:
    """How often the block of `bm` changes over the grid in execution order (row-major, last axis fastest)."""
    steps = math.prod(grid) if grid else 1
    if prefetched or steps <= 1:
        return steps
    import jax
    import jax.numpy as jnp

    closed = bm.index_map_jaxpr
    try:
        idx = np.indices(grid).reshape(len(grid), -1)
        outs = jax.vmap(lambda *i: jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *i))(
            *[jnp.asarray(r, jnp.int32) for r in idx])
        blocks = np.stack([np.broadcast_to(np.asarray(o), (steps,)) for o in outs], 1)
    except Exception:  # noqa: BLE001 - an index map we cannot evaluate alone: every step fetches
        return steps
    return 1 + int(np.count_nonzero(np.any(blocks[1:] != blocks[:-1], axis=1)))


def _block_bytes(bm: Any) -> tuple[tuple, float]:
    shape = tuple(int(getattr(b, "block_size", b) or 1) if b is not None else 1 for b in bm.block_shape)
    return shape, math.prod(shape) * dtype_bytes(bm.array_aval.dtype)


def _in_hbm(bm: Any) -> bool:
    space = str(getattr(bm.block_aval, "memory_space", "")).lower()
    return space.endswith("any") or space.endswith("hbm")


def _vmem_limit(params: dict, model: CostModel) -> int:
    limit = int(model.chip.vmem_bytes_per_core)
    compiler = params.get("compiler_params")
    for p in (compiler.values() if isinstance(compiler, dict) else [compiler]):
        asked = getattr(p, "vmem_limit_bytes", None)
        if asked:
            limit = min(limit, int(asked))
    return limit


def pallas_call_cost(eqn: Any, model: CostModel, name: str) -> CostRecord:
    """One `pallas_call` on `model`'s chip (module docstring); raises VmemOversubscribed."""
    params = eqn.params
    gm = params["grid_mapping"]
    grid = tuple(gm.grid)
    if not all(isinstance(g, int) for g in grid):
        raise ValueError(f"kernel {name}: a grid of dynamic size {grid} cannot be priced; valid: static grid sizes")
    steps = math.prod(grid) if grid else 1
    kernel_name = params.get("name") or getattr(params.get("metadata"), "name", None) or name
    prefetched = gm.num_index_operands > 0
    body = walk(params["jaxpr"], model, [], name)
    n_in = gm.num_inputs
    fetch_bytes = first = last = 0.0
    vmem = 0.0
    blocks = []
    for i, bm in enumerate(gm.block_mappings):
        role = f"in{i}" if i < n_in else f"out{i - n_in}"
        if _in_hbm(bm):
            blocks.append(f"{role} {tuple(bm.array_aval.shape)} {bm.array_aval.dtype} in HBM (manual DMA)")
            continue
        shape, nbytes = _block_bytes(bm)
        count = _fetches(bm, grid, prefetched)
        fetch_bytes += count * nbytes
        if i < n_in:
            first += nbytes
        else:
            last += nbytes
        vmem += 2 * nbytes  # double-buffered by the pipeline
        blocks.append(f"{role} block {shape} {bm.array_aval.dtype} = {int(nbytes)} B x2")
    for aval in getattr(gm, "scratch_avals", ()) or ():
        nbytes = _nbytes(aval)
        if nbytes and "semaphore" not in str(aval).lower():
            vmem += nbytes
            blocks.append(f"scratch {aval} = {int(nbytes)} B")
    limit = _vmem_limit(params, model)
    if vmem > limit:
        raise VmemOversubscribed(
            f"kernel {kernel_name}: its blocks need {int(vmem)} bytes of VMEM ({'; '.join(blocks)}), more than "
            f"the {int(limit)} bytes per TensorCore of the {model.chip.name} (VMEM, or the kernel's "
            "vmem_limit_bytes); valid: smaller block_shape values (fewer rows or columns per block) or fewer "
            "scratch buffers")
    hbm_bytes = fetch_bytes + body.dma_bytes * steps
    compute = steps * body.compute_s(model)
    bw = model.chip.hbm_bw
    overlapped = max(hbm_bytes - first - last, 0.0) / bw
    seconds = max(compute, overlapped) + (first + last) / bw + steps * STEP_OVERHEAD_S
    mxu_s, vpu_s = steps * body.mxu_s, steps * max(body.vpu_ops / model.chip.vpu_flops, body.trans / model.eup_rate())
    terms = {"mxu": mxu_s, "vpu": vpu_s, "hbm": hbm_bytes / bw, "grid": steps * STEP_OVERHEAD_S}
    bound = max(terms, key=terms.get)  # type: ignore[arg-type]
    detail = {"grid": grid, "steps": steps, "blocks": blocks, "vmem_bytes": vmem, "vmem_limit": limit,
              "dots_per_step": body.dots, "dma_bytes": hbm_bytes, "notes": body.notes}
    return CostRecord(op=f"kernel:{kernel_name}", flops=steps * body.flops + steps * body.vpu_ops,
                      hbm_bytes=hbm_bytes, seconds=seconds, mxu_seconds=mxu_s, vpu_seconds=vpu_s,
                      hbm_seconds=hbm_bytes / bw, bound=bound, cycles=seconds * model.chip.clock_hz,
                      transcendentals=steps * body.trans, padded_flops=steps * body.padded_flops, detail=detail)


def kernel_cost(closed_jaxpr: Any, model: CostModel, name: str) -> CostRecord:
    """The cost of one call of a JAX function (its ClosedJaxpr) on `model`'s chip: its pallas_calls one after
    another, plus the XLA-fused work around them (module docstring)."""
    kernels: list[CostRecord] = []
    outer = walk(closed_jaxpr.jaxpr, model, kernels, name)
    io = sum(_nbytes(v.aval) for v in closed_jaxpr.jaxpr.invars) + sum(_nbytes(v.aval)
                                                                        for v in closed_jaxpr.jaxpr.outvars)
    seconds = sum(k.seconds for k in kernels)
    hbm = sum(k.hbm_bytes for k in kernels)
    mxu_s = sum(k.mxu_seconds for k in kernels) + outer.mxu_s
    vpu_s = sum(k.vpu_seconds for k in kernels)
    flops = sum(k.flops for k in kernels) + outer.flops
    bw = model.chip.hbm_bw
    outer_compute = outer.compute_s(model)
    if outer.dma_bytes and not kernels:  # a hand-made pipeline (Helion's): its first DMA is not overlapped
        steps = max(outer.steps, 1.0)
        dma_s = outer.dma_bytes / bw
        seconds += max(outer_compute, dma_s) + dma_s / steps + steps * STEP_OVERHEAD_S
        hbm += outer.dma_bytes
    elif outer_compute > 0 or not kernels:  # XLA's fusion around kernels (or the whole function without them)
        extra = 0.0 if kernels else io  # with kernels, their DMAs are the traffic
        seconds += max(outer_compute, extra / bw)
        hbm += extra
    vpu_s += max(outer.vpu_ops / model.chip.vpu_flops, outer.trans / model.eup_rate())
    flops += outer.vpu_ops
    terms = {"mxu": mxu_s, "vpu": vpu_s, "hbm": hbm / model.chip.hbm_bw}
    bound = max(terms, key=terms.get)  # type: ignore[arg-type]
    if seconds < model.launch_seconds():
        bound = "launch"
    detail = {"kernels": [k.detail | {"op": k.op, "seconds": k.seconds} for k in kernels],
              "notes": outer.notes, "dots": outer.dots}
    return CostRecord(op=f"kernel:{name}", flops=flops, hbm_bytes=hbm, seconds=seconds, mxu_seconds=mxu_s,
                      vpu_seconds=vpu_s, hbm_seconds=hbm / model.chip.hbm_bw, bound=bound,
                      cycles=seconds * model.chip.clock_hz, transcendentals=outer.trans + sum(
                          k.transcendentals for k in kernels),
                      padded_flops=outer.padded_flops + sum(k.padded_flops for k in kernels), detail=detail)
