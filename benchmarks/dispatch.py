"""Per-op eager dispatch latency of a small `add` and `mm` on "tpu" (sim driver) against CPU PyTorch eager,
printed as ratios (medians over repeated timed loops, same run). Goal (issue #2): under 5x CPU per op.

Two clocks: wall time, and this thread's CPU time (`time.thread_time`), which other processes on a shared
machine do not inflate (the sim runs on the calling thread). Measured on a loaded 2-core machine, thread CPU
time per op (wall time within noise of it when the machine is quiet):

    op   shape      before (e6151f9)        after (perf branch)
    add  64x64      26 us  (15x CPU)        16-18 us (10x CPU)
    mm   64x64^T    190 us (27x CPU)        140-155 us (20x CPU)

What is left is mostly the sim's kernels (drivers/sim/kernels*.py, torchtpu.sim.mxu): 64^3 mm spends ~100 us
in the exact MXU kernel's parallel region (a serial twin runs it in ~14 us) and ~40 us in the dot_general
kernel's Python (np.prod on lists, mode and errstate lookups); add spends ~3 us in the kernel, ~1.5 us in the
timeline record, ~1.5 us allocating the output, ~1 us copying the result into it.

perf2 branch (after the serial MXU twin): dot_general planned once per op (math.prod, no per-call attr lookups),
the MXU env mode parsed once per env value, broadcast_in_dim planned per shape, timeline records kept as tuples.
Thread CPU time, main d842c7b -> perf2, same loaded machine (back-to-back runs; +-40% run to run):

    add  64x64      16-17 us (10x CPU)  ->  15-16 us (9x CPU)
    mm   64x64^T    80-84 us (11x CPU)  ->  53-57 us (7.3-8x CPU)

mm's rest: ~20 us in the exact kernel (serial), ~9 us in round_bf16, np.prod in mxu_kernel.dot_exact (~4 us).

smallmm branch: mm of <= 2,048 multiply-adds (8x8) written into the output buffer directly (defer_and_fuse.py has
the 8x8 figures: DEFER_NEVER ~1.1 us less per op); the 64x64 mm here is above that and keeps the packed kernel:
after, same loaded machine: add 4.62 us (2.8x CPU), mm 22.2 us (3.1x CPU), thread CPU time.

perfop branch (issue #22 goal 3; 8x8 rows added, synced = torch.tpu.synchronize() after each tpu op): a cached
launch of a one-kernel plan calls that kernel into the output buffer directly (drivers/sim/launcher.py, no
`execute` value list, straight-line run or copies), `synchronize` without a per-call import, the timeline's issue
with its accounting inlined, TORCHTPU_MXU_MODE read through `config.reader`; the timeline keeps its records as
flat numbers, so launches no longer fill the GC's oldest generation (200k 8x8 mm launches: ~1.7 -> 0.08 us of
collection per launch). 8x8, thread CPU time, one process, old (launcher and synchronize as before) and new paths
interleaved ABBA, 7 samples x 2,000 ops (the old path already has the timeline changes, so the gain is if
anything understated; loaded 2-core machine):

    add unsynced  4.77 -> 3.77 us (3.42x -> 2.70x CPU)     add synced  5.85 -> 4.31 us (4.19x -> 3.09x CPU)
    mm  unsynced  6.19 -> 5.10 us (3.98x -> 3.28x CPU)     mm  synced  7.28 -> 5.58 us (4.67x -> 3.58x CPU)

mm's launch is still ~3.4 us: numba's dispatch of `_mm_rounded_into` ~1 us, the numpy error state ~0.25 us, the
timeline charge ~0.4 us, the mode and contiguity checks ~0.4 us; outside it the C++ key, output allocation and
three numpy views take ~2 us (add: the same ~2 us plus a ~1.5 us launch). The next step is a native entry
(a numba cfunc called from C++ with raw pointers, charged from C++), which skips the views, the dispatch and the
error state.

perfop2 branch: that native entry for the small exact mm (sim/mxu_native.py: `_mm_rounded_into` as a cfunc; C++
calls it on the tensors' memory after one Python call that checks the mode and target and charges the
timeline, drivers/sim/launcher.py `_native`); the C++ views are built on the stack and `execute` is vectorcalled.
8x8, thread CPU time, one process, old (no native entry) and new interleaved ABBA, 12 samples x 2,000 ops each
(loaded 2-core machine, load ~7):

    mm  unsynced  5.03 -> 3.41 us (2.95x -> 2.00x CPU)     mm  synced  5.41 -> 3.80 us (3.25x -> 2.28x CPU)
    add unsynced  3.73 -> 3.81 us (2.72x -> 2.78x CPU)     add synced  4.19 -> 4.36 us (2.89x -> 3.01x CPU)

(add does not take the native entry: old and new are the same path there, so its spread is the noise). Separate
processes, main ce07a17 vs perfop2, ABBA, this script: add synced 4.06-4.85 -> 4.05-4.13 us, mm synced 6.68-6.77
-> 4.16-6.55 us (one outlier; two more runs 3.82-4.05 us), ratios 2.8-3.0x (add synced) and 2.7-2.95x (mm
synced). What is left on add: the C++ key, output allocation and views (~2 us with a no-op launch), the launch's
error state and checks (~0.4 us), np.add (~0.4 us), the timeline charge (~0.5 us); on mm the same C++ ~2 us, the
mode read (config reader, ~0.2 us) and the charge.

Session 50 (the 64x64 mm row, 6.8-7.5x CPU in thread time on a loaded machine: 34-41 us against 5.1-5.5 us).
64^3 is the largest product `auto` keeps exact, so it runs the packed exact-order kernel (sim/mxu_kernel.py
`_dot_exact3_serial`): 22.6 us of it in one process (median of 15 x 300 calls), of which the packing, zeroing
and accumulator passes are 8.0 us (the kernel with its micro kernel taken out) and the micro kernel 14.6 us. The
micro kernel is vectorized (ymm mulps/addps in numba's machine code) but load-bound: each row of a register
block reloads the same packed B rows, one load per multiply-add. Letting LLVM contract each multiply-add into an
FMA (fastmath "contract"; the products of bf16 values are exact in float32, so every sum is unchanged: equal bits
on 4 shapes) put vfmadd in the machine code and left the time unchanged (24.3 vs 24.2 us, ABBA), as a load-bound
loop would. A register-blocked micro kernel (B loaded once per k for several rows, k innermost per output, which
keeps the summation order) is what the row needs; the 8x8 rows meet the goal.

Session 51 (mxu64 branch): that register-blocked kernel. sim/mxu_kernel.py `tile_block` is written as LLVM vector
IR through a numba intrinsic (numba compiles with the SLP vectorizer off, so scalar accumulators in numba code
stay scalar: measured, vmulss/vaddss only): an 8-row x 16-column block of float32 partial sums stays in 16 ymm
registers for a whole K tile, each k loads two B vectors once for the 8 rows; fmul/fadd without fast-math flags
(no FMA: a fused multiply-add keeps an overflowing or underflowing bf16 product exact and changes that sum).
Nothing is packed any more (A and B are read in place, zero-padded copies only at ragged edges) and each tile's
sums go straight into the output. 8x16 measured against 4x16, 6x16, 4x32, 2x32 and 16-lane (zmm) variants (it
tied the zmm 8x16 at 64^3 and was best at 128^3). Bits: equal to the old kernel (kept as the oracle in
tests/sim/test_mxu_blocked.py) on ~200 random and edge shapes 1..300 in m, n, k, batches, K tiles 1..256,
non-contiguous and transposed operands, dense inf/NaN/-0.0/subnormal/overflowing values and the DEFAULT, HIGH
and HIGHEST passes (NaN compared as NaN). Thread CPU time, one process, old and new interleaved ABBA, medians
(machine loaded by other helpers, load 7-10 on 2 cores; run 1 so loaded that CPU's own 64x64 mm read 9.0 us,
run 2 steadier at 5.6 us):

    _dot_exact3_serial 64^3     16.4-18.4 -> 9.7-11.4 us (1.6-1.7x; 32^3 2.3-2.6x, 128^3 1.3-1.7x; 3 runs)
    _mm_rounded_serial 64x64    29.8 -> 19.5 us (run 1), 20.8 -> 13.8 us (run 2; rounding both operands included)
    torch.mm 64x64 on tpu       run 1: 40.9 -> 32.9 us (4.55x -> 3.65x CPU, 12 x 300 ops)
                                run 2: 29.4 -> 22.0 us (5.22x -> 3.90x CPU's 5.63 us, 16 x 300 ops)
    exact 1024^3 (parallel)     182 -> 112 ms (11.8 -> 19.1 GF/s; 8 calls each, wall time, 2 threads)

This script afterwards: mm (64, 64) 22.2 us thread time against CPU's 4.89 (4.54x). benchmarks/mxu.py --sizes 1024
(loaded): exact 11.4 GF/s = 0.30x BLAS (goal 0.25x). The 3x goal is not met yet. What is left: the micro kernel is
at the FP-port bound of a separate multiply and add (2 uops per multiply-add); an FMA (1 uop) is exact only where no
product overflows or underflows, so it would need a per-call range check of both operands to select an FMA twin of
`tile_block` (measured with llvm.fma in place of fmul/fadd, ABBA against the old kernel: 64^3 2.1-2.5x vs 1.7x,
128^3 2.2-2.5x vs 1.7-1.9x, i.e. ~20-30% off the kernel; not in); the rest of the row is rounding both operands
(~1.5 us each; a branchless rounding loop, equal on all 2^32 patterns, was only ~12% faster and is not in),
allocation, and the eager dispatch around the kernel (~8 us: 22.0 us row vs 13.8 us `_mm_rounded_serial` in run 2).

Session 52 (mmfma branch): the FMA twin and the 64x64 mm through the native entry. sim/mxu_kernel.py
`tile_block_fma` (llvm.fma.v8f32 in place of fmul/fadd) runs where `fma_exact` holds: no inf/NaN, bf16 values, and
max|a|*max|b| <= FLT_MAX and min nonzero |a| * min nonzero |b| >= 2^-126 (then every product is exact in float32
and fma(a, b, s) == fl(s + fl(a*b)), so the sums are the unfused kernel's bit for bit). The range comes from a
scan after the rounding pass (`_rounded_scan`: rounding now branch-free, equal to round_bf16 on all 2^32 patterns;
the scan is a second loop, ~0.9 us per 64x64 operand: LLVM left the one-loop form with two reductions scalar,
measured slower). `dot_exact` (HIGH/HIGHEST passes, 1024^3) scans its operands the same way. An exact plain mm
above 8x8 (up to the parallel threshold) is now a `writes_out` kernel with the native entry (fast.py
INTO_MAX_MACS, sim/mxu_native.py calls `_mm_into`): the register blocks write the tensor's memory, no numpy views,
numba dispatch, result array or copy. Bits: tests/sim/test_mxu_fma.py (the decision at FLT_MAX and 2^-126, two sums
where a forced FMA differs and is refused, ~100 random shapes x normal/huge/tiny/special values through every
entry point, DEFAULT/HIGH/HIGHEST, eager mm on "tpu" through the native entry), all against the unfused kernel.
Thread CPU time, machine loaded by other helpers (load 7-14 on 2 cores), medians:

    kernel 64x64, one process ABBA       old _mm_rounded_serial 13.7-14.7 -> new _mm_into 11.3-12.0 us
                                          (unfused _dot_exact3_serial 10.4-13.0 vs forced fused 7.8-9.6 us)
    torch.mm 64x64 on tpu, separate      old path (fresh array + copy, old kernel) 20.6-21.4 us (4.16-4.34x CPU)
      processes ABBA, 15 x 300 ops        -> 13.4-14.9 us (2.68-2.91x CPU); more loaded runs 26.6-31.5 -> 17.2-20.5 us
    this script, mm (64, 64) row          19.5-20.4 us against CPU's 7.8-8.6 (2.39-2.50x; CPU's row inflated too)
    exact dot_exact 1024^3, one process   114.5 -> 67.8 ms (18.7 -> 31.7 GF/s, 2 threads, ABBA, equal bits)
    benchmarks/mxu.py --sizes 1024        exact 26.3 GF/s = 0.46x BLAS (Session 51: 11.4 GF/s, 0.30x)

The 3x goal is met on this row. What is left on it: the fused kernel ~8 us, rounding both operands ~2 x 1.3 us and
their range scans ~2 x 0.9 us (a vectorized one-pass scan, e.g. in LLVM IR like `tile_block`, would save most of
the latter), and ~2 us of C++ launch around the kernel (key, output allocation; csrc/, not touched here).

Quiet machine, main after session 52's merges (load ~0.5, three runs of this script): mm (64, 64) 20.1-21.4 us
against CPU's 8.0-8.9 us in the same runs (2.39-2.52x); the 8x8 rows 2.1-2.9x; add (64, 64) 2.1-4.1x."""

from __future__ import annotations

import statistics
import time

import torch

torch.set_num_threads(1)


def _per_op(fn, iters: int = 300, repeats: int = 7) -> tuple[float, float]:
    """(median wall seconds, median thread CPU seconds) per call."""
    for _ in range(20):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(iters):
            fn()
        cpu.append((time.thread_time() - start_cpu) / iters)
        wall.append((time.perf_counter() - start) / iters)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    import torchtpu  # noqa: F401

    rows = []
    sync = torch.tpu.synchronize
    cases = [("add", (64, 64), False), ("mm", (64, 64), False)]
    cases += [(name, (8, 8), synced) for name in ("add", "mm") for synced in (False, True)]
    for name, shape, synced in cases:
        a_cpu, b_cpu = torch.randn(shape), torch.randn(shape)
        a_tpu, b_tpu = a_cpu.to("tpu"), b_cpu.to("tpu")
        op = torch.add if name == "add" else torch.mm
        cpu = _per_op(lambda op=op, a=a_cpu, b=b_cpu: op(a, b))
        if synced:  # torch.tpu.synchronize() after each op (CPU's op alone: it has nothing to wait for)
            tpu = _per_op(lambda op=op, a=a_tpu, b=b_tpu: (op(a, b), sync()))
        else:
            tpu = _per_op(lambda op=op, a=a_tpu, b=b_tpu: op(a, b))
        torch.tpu.synchronize()
        rows.append((name + (" synced" if synced else ""), shape, cpu, tpu))
    print(f"{'op':10} {'shape':10} {'cpu us':>9} {'tpu us':>9} {'tpu/cpu':>8}   {'thread CPU time: cpu us':>23} "
          f"{'tpu us':>9} {'tpu/cpu':>8}")
    for name, shape, (cpu, cpu_t), (tpu, tpu_t) in rows:
        print(f"{name:10} {str(shape):10} {cpu * 1e6:9.2f} {tpu * 1e6:9.2f} {tpu / cpu:8.2f}x   {cpu_t * 1e6:23.2f} "
              f"{tpu_t * 1e6:9.2f} {tpu_t / cpu_t:8.2f}x")


if __name__ == "__main__":
    main()
