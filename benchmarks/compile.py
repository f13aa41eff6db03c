"""torch.compile(backend="tpu"): three tables, each with ratios to a baseline measured in the same run.

1. steady state on GPT-2 and Llama (2 layers, hidden 128, batch 2 x 64 tokens, vocab 1000; issue #22): no-grad
   forward and training step (forward, backward, AdamW; the compiled side compiles the model and
   `optimizer.step`) on CPU eager, tpu eager (DEFER_NEVER) and tpu compiled, as ratios to CPU eager. The machine
   is shared, so each sample is the *process CPU time* of a batch of back-to-back calls, and the sides run in
   ABBA order (CPU, tpu, tpu, CPU, ...) so drift hits all alike; medians;
2. bounded dynamism: a conv + attention + RMSNorm model trained over 24 sequence lengths, programs compiled with
   `dynamic=False` (one per length and graph) vs `dynamic=True` (one per bucket and graph), outputs checked
   equal to eager at every length;
3. the demo model's training step, DEFER_NEVER vs DEFER_AND_FUSE vs compiled: time to first result, wall time
   per step and simulated device time per step (ratios to DEFER_NEVER).

    python benchmarks/compile.py [--only steady,dynamic,demo] [--repeats 7] [--hidden 128] [--tokens 64]
                                 [--size medium]  (hidden 256, 2 x 256 tokens: the realistic size of issue #22)

Figures (branch `compile`, 2-core machine at load average ~15, process CPU time, ABBA, median of 5):

    model  kind    cpu ms  tpu eager  compiled   eager x  compiled x
    gpt2   fwd       7.09      22.91     21.77     3.23x       3.07x
    gpt2   train    16.75      43.12     51.88     2.58x       3.10x
    llama  fwd       6.11      13.50      7.75     2.21x       1.27x
    llama  train    24.07      52.58     53.76     2.18x       2.23x

Where the compiled side loses (profiles, same sizes): GPT-2's gelu_new computes pow(x, 3.0) with the sim's
`power` kernel (np.power, ~4 ms per (2, 64, 512) call, two per forward: CPU's ATen computes x*x*x); a compiled
AdamW step costs ~13 ms vs eager foreach's ~8 ms, most of it the sim copying each of its ~84 outputs
(parameters and moments, written in place) from a temporary into the output buffer (np.copyto ~11 ms per step);
the compiled backward is 10-50% slower than eager's for the same reason (results copied into fresh outputs).
Bounded dynamism (24 lengths, forward + backward): main 48 programs with dynamic=True; this branch 6.

Branch `compiled2` (load average ~20, so +-20%; `copy path x`: the same compiled models with the sim's direct
output writes off, drivers/sim/direct_outputs.py, measured in the same run; before intermediates were released):

    hidden 128, 2 x 64:   gpt2 fwd 1.29x (copy path 1.26x)  train 1.63x (1.61x)
                          llama fwd 1.40x (1.48x)           train 1.99x (1.96x)
    hidden 256, 2 x 256:  gpt2 fwd 1.40x (1.51x)  train 1.65x (1.51x);  llama fwd 1.29x (1.36x)  train 1.88x (1.93x)

Direct writes are bit-identical and within noise here: the copies were not the cost. What was: a plan kept every
intermediate alive to its end, so each step wrote fresh pages; dropping each after its last read
(straight_line.py) took the GPT-2 hidden-256 compiled forward from 1.83x to 1.16x CPU eager (same process
pair, ABBA). What remains is mostly the MXU emulation: each DEFAULT-precision dot rounds both operands to bf16
before BLAS (128^3: 200 us vs torch's 136 us), 40-50% of a compiled step's execute time.

Branch `speed4` (py-spy --native over 300 GPT-2 hidden-128 training steps, all threads): the rounding is smaller
than that: np.matmul 56 us vs torch.matmul 60 us and both roundings 17 us at 128^3 (one thread, best of 7), ~10%
of a compiled forward. What costs in the training step: the compiled AdamW step is ~40% of the main thread
(per-tensor Python of a 140-input launch; 16% of it was copying each parameter's step count back to the host,
now one synchronization for all: 0.97x of the step in the same run); in the backward (autograd's device
thread) numpy's gather of transposed matmul operands into C order before rounding is 12%. Rounding a strided
operand in its own layout changes BLAS's summation (766 of 4,320 shapes differed), and a fused numba
gather-and-round measured slower than numpy's copy; PyTorch's blocked transpose copies a 4 KiB-strided operand
3-5x faster than numpy, but the training steps did not move (hidden 256: Llama 0.99x, GPT-2 1.03x, same run),
so the copy stays numpy's.

Branch `adamw` (load average 7-14 on 2 cores, so +-10%; ABBA in one process: CPU eager, the compiled launch
path of 5e9f1ad (`old`) and this branch's (`new`), medians of 5; ratios to CPU eager). The compiled AdamW step
alone (hidden 128) went from 2.02x to 1.78x CPU eager's `opt.step` (median of 9, same process): its launch no
longer allocates a device output per step count (pooled per program, compile/launch_layout.py), computes its
input/output layout once per program, and the sim's direct-write decision, which was never cached when an
output was 0-d (the step counts), is cached (drivers/sim/direct_outputs.py):

    size                 gpt2 fwd        gpt2 train      llama fwd       llama train
    hidden 128, 2x64     0.95x -> 0.99x  1.93x -> 1.81x  1.04x -> 1.06x  1.88x -> 1.83x
    hidden 256, 2x256    0.95x -> 0.89x  1.60x -> 1.70x  1.16x -> 1.12x  2.53x -> 2.40x

Forward graphs do not touch the changed paths (their differences are noise). What remains in the AdamW step
(py-spy): the ~23 numpy passes per parameter of the traced capturable algorithm (each big-tensor ufunc a pass
over memory where CPU eager's in-place kernels do ~7), copying 28 step counts back to the host one by one
(ops/copy.py `copy_to_host_many`, ~10% of the step), and the direct-write decision recomputed each training
step because `zero_grad()` hands the step new gradient buffers.

Branch `perfcompile` (session 19; py-spy over 200 GPT-2 hidden-128 compiled training steps, all threads, steady
loop only): forward graph 30%, backward graph 27%, AdamW step 22%, the rest (zero_grad, loss, guards, `.cpu()`)
21%. In the AdamW step: the plan's numpy work ~half (649 steps; only groups over >= 65536 elements fuse,
fusion.MIN_ELEMENTS, so at hidden 128 ~600 ufunc calls on small tensors), the launch key 8% (`_key`: 1.6 us per
input through `Tensor.device`), the direct-write decision 7% (missed on every step: new gradient and fresh
output buffers; ~0.1 ms of it per-buffer `__array_interface__`), copying 94 small outputs 5%. Llama at hidden
256 x 2x256: blas_matmul 36%, operand rounding 24% (`_as_f32`'s C-order copy 12%, `round_bf16` 11%). The key now
reads `is_cpu`/`ndim` (140 inputs: 225 -> 35 us per launch, ~1% of the step, below this table's noise; ABBA in
one process, old key vs new, median of 7, load average ~6):

    hidden 128, 2x64   gpt2 fwd 1.18x -> 1.20x  train 1.74x -> 1.49x;  llama fwd 1.33x -> 1.27x  train 1.84x -> 1.90x

Tried and dropped: the decision as numpy array operations over all byte ranges (140 inputs x 112 outputs:
150 -> 120 us, but 5 -> 25 us for the small plans of eager ops); rounding a copied operand in place (numba's
loop over aliased source and destination: 30-60% slower than into a new array).

Branch `perfcompile2` (session 20): operand rounding of fast-mode DEFAULT dots vectorized (sim/mxu_round.py, same
bits); old vs new in one process (ABBA, load average 7-12): hidden 128 gpt2 fwd 1.36x -> 1.10x, train 1.64x ->
1.65x, llama fwd 1.35x -> 1.28x, train 2.03x -> 1.77x; hidden 256 x 2x256 llama train 2.21x -> 2.05x (details in
docs/compile_numerics.md). Transposed operands' numpy gather into C order (~2 ms of a ~21 ms GPT-2 hidden-128
training step) remains; a tiled numba gather-and-round was slower below ~256 x 1024.

Branch `perfcompile3` (session 21; py-spy --native over a GPT-2 hidden-128 compiled training loop, all threads,
idle waits left out): backward graph's plan 36% (its DEFAULT dots 27%: sgemm 13%, operand rounding 10%, of
which the C-order gather of transposed operands 7%), forward plan 18%, AdamW plan 10% and its launch 8%,
Dynamo guards / AOT wrappers / `.cpu()` / loss 10%, forward and backward launches outside the plans 18%. Tried
and dropped (no gain): fusing the AdamW step's element-wise ops across parameters. Grouping fusable steps by
interval (each may run anywhere between its last rigid producer and its first rigid reader) instead of at their
earliest point, fusing groups of >= 16 ops in >= 2 independent chains at any size, reading broadcast scalars as
one element and writing fused results straight into the output buffers took the plan from 649 steps to 66 and
kept it bit-identical, but the compiled `opt.step` alone stayed at 1.67x -> 1.73x CPU eager (in one process,
ABBA, median of 15; 1.62x with only the small groups fused) and the training step at 1.62x -> 1.63x. The
generated numba loops are scalar (a loop over 12-18 arrays gets no vectorized version: too many possible
aliases), 15-25 ns per element for AdamW's 14 ops against numpy's SIMD ufuncs, which cancels the ~540 saved
calls on 0-d arrays. What the AdamW launch spends instead is per-tensor Python: `runtime.buffer` (a cached
view, but its key reads data_ptr/shape/stride per tensor: 224 per launch) ~1.8 ms per step under cProfile
(which inflates such calls), the direct-write decision, `host_outputs` and the step-count copies.

Session 23 (branch `compiled`, 374582c, load average 5-12; steady table at the start: hidden 128 gpt2 fwd 1.04x
train 1.55x, llama fwd 1.19x train 1.72x). Where a GPT-2 hidden-128 compiled training step goes (~25 ms; each
launch timed inside SimDriver.execute, thread CPU time; each plan replayed step by step from its inputs):
the five launches ~16 ms (forward graph 4.1 ms, its dots 2.1; backward graph 7.1 ms, its 14 dots 5.4; AdamW
3.5 ms, 649 steps: multiply 1.3, divide 0.9, add 0.8; the two loss graphs 0.5 each); inside them the
direct-write decision 0.2-0.4 ms and the result copies under 0.4 ms per graph; the other ~9 ms outside the
sim (Dynamo/AOT wrappers, autograd, launch Python; `model.train()` and `zero_grad` as on the CPU side). Per
dot, sim vs torch.mm on one thread: (128, 512) @ (512, 128) 203 vs 182 us; with a transposed operand of a
2 KiB row pitch (the backward's) 340 vs 190 us, of which numpy's C-order gather of that operand is ~150 us
(4 KiB cache aliasing: 41 us untransposed). Tried and dropped: that gather through PyTorch's blocked copy
(42 us in a hot-cache micro-benchmark, same bits) measured 240-470 us inside the training step (autograd's
device thread), and the steps got slower in one ABBA run (CPU eager, old, new; median of 7): hidden 128
gpt2 train 1.76x -> 1.89x, llama 1.64x -> 1.80x; hidden 256 x 2x256 gpt2 train 1.47x -> 1.59x, llama 1.97x ->
2.01x (forwards within noise: 0.96-1.06 new/old).

Session 24 (branch `compiled`, load average 3-9). Handing BLAS a transposed operand without the copy changes
bits: this OpenBLAS (0.3.31, Haswell kernels on this AMD EPYC) sums differently for a transposed flag on 44 of
309 random shapes (e.g. (72, 128) @ (128, 72)), so the C-order gather stays. It is now blocked where it aliased
(sim/mxu_round.py `_gather`: columns >= 1 KiB apart, 16 per block; a (512, 128) operand of a 2 KiB pitch 274 ->
52 us alone). All operand gathers of a compiled hidden-128 training step (thread CPU time inside `_gather`, ABBA
in one process, 18 steps per side): GPT-2 1.48 -> 1.19 ms, Llama 1.95 -> 1.38 ms; torch's copy_ gained nothing
in-step (1.66 vs 1.63 ms), blocks of 8 or 32 columns or a 512-byte threshold less. The steps themselves moved
within noise (ABBA, median of 9, ratios to CPU eager, old gather -> new): gpt2 fwd 1.07x -> 1.12x, train 1.68x
-> 1.70x; llama fwd 1.35x -> 1.25x, train 1.70x -> 1.67x: the gathers are ~2 ms of a ~20 ms step.

Session 52 (branch `comp22`, 2-core machine at load average 10-15 all session, so +-20% per figure). Steady
table at the start (--repeats 3, ratios to CPU eager): hidden 128 gpt2 fwd 1.10x train 1.59x, llama fwd 1.48x
train 1.78x; hidden 256 x 2x256 gpt2 fwd 1.76x train 1.80x, llama fwd 2.14x train 1.86x. Profiles (py-spy over
the steady loop; each plan replayed step by step, thread CPU time): at hidden 128 the compiled AdamW step is
~18% of a GPT-2 training step, 15% of it copying the fused groups' results (parameters and moments over
65536 elements, fusion.py) into the outputs after the launch (3.6 MB per step); the forward copied its fused
saved activations too. At hidden 256 the GPT-2 forward's sdpa decomposition rebuilt the causal mask per layer
and launch (iota, (256, 256) int64 differences, compares, `and`, select: ~5 ms of ~94 ms replayed), because
its int64 intermediates were over the folding limit. Now (1) a fused group writes each result that is one
program output straight into the output buffer (drivers/sim/fusion.py, direct_outputs.py: an operand may
share the output's memory only exactly, element i at the same address in both, as a parameter updated in
place; a shifted overlap or a later reader takes the copy path), and (2) constant chains fold through
intermediates of up to 16 MiB and the plan keeps only the folded values its steps read (<= 1 MiB together) or
output (<= 64 KiB each), else folds as before (drivers/sim/driver.py, folding.py). Old vs new in alternating
processes (old, new, new, old; inside each, CPU eager and compiled ABBA, median of 3): hidden 256 gpt2 fwd
1.50x / 1.37x -> 1.13x / 1.32x, train 2.07x / 2.04x -> 1.97x / 1.86x; hidden 128 in one process (the fused
writes toggled, median of 7): gpt2 fwd 1.23x -> 1.16x, train 1.94x -> 1.88x, llama fwd 1.42x -> 1.51x, train
1.65x -> 1.71x (noise). The steady table after (--repeats 3, another load): hidden 128 gpt2 fwd 1.50x train
1.82x, llama fwd 1.33x train 1.79x; hidden 256 gpt2 fwd 1.92x train 2.10x, llama fwd 1.84x train 2.17x: at
this load one run's spread is larger than the changes, so these tables do not rank old and new; the ABBA pairs
above do. Goal not met (<= 1.0x GPT-2/Llama, <= 1.5x zoo; the zoo was not measured). What is left: the MXU
products (blas_matmul ~45% of a hidden-256 GPT-2 forward; numpy's OpenBLAS within 15% of torch's sgemm per
shape), the sdpa decomposition's per-launch softmax and fully-masked-row guard over (2, 4, 256, 256)
(compare, convert to int64, compare, reduce, select: ~7 ms per forward where CPU eager runs flash attention),
and the AdamW step's per-parameter numpy passes.


Quiet machine, main after session 52's merges (load ~0.5, --repeats 3), compiled x CPU eager: hidden 128: gpt2
fwd 2.40x, train 2.46x, llama fwd 1.64x, train 1.81x; medium: gpt2 fwd 1.85x, train 1.80x, llama fwd 1.73x,
train 1.90x (goal 2, <= 1.0x, not met).

Session 53 (branch `comp23`, 2-core machine at load average 7-10 all session, so +-10-15% per figure).
Regression check, 8d707a8 (before session 52's merges) vs main 3655bb9 in alternating processes (old, new,
new, old; CPU eager and compiled ABBA inside each, median of 5), hidden 128 gpt2 fwd: 1.61x / 1.43x (old) vs
1.46x / 1.44x (main): no regression between the two; the quiet run's 2.40x was not reproduced at this load.
sdpa's math path calls `aten._safe_softmax`, which upstream's decomposition turned into softmax + eq(-inf) +
all + where over the (B, H, L, S) scores; it is now lowered in graphs (ops/safe_softmax.py, graph role only):
a row is fully masked exactly when its maximum is -inf, so the guard is a compare and two selects on the
(B, H, L, 1) maximum and sum the softmax computes anyway; bit-identical to eager DEFER_NEVER
(tests/test_compile_safe_softmax.py). A compiled `_safe_softmax(x) * 2` over (2, 4, 256, 256): 16 -> 12 plan
steps but 6.37 -> 6.34 ms (64 x 64: 756 -> 735 us; ABBA in one process, median of 15): the guard's bool ops
were cheap; the softmax itself is what costs (two numpy row reductions ~0.8 ms each, the element-wise steps ~2
ms, the launch and its output ~2 ms; CPU's torch.softmax of that input 0.62 ms, one thread). Old (upstream
decomposition) vs new in one process (CPU eager, old, new ABBA, median of 5 at hidden 256, 7 at hidden 128):

    size                 gpt2 fwd        gpt2 train      llama fwd       llama train
    hidden 128, 2x64     1.34x -> 1.39x  1.90x -> 1.96x  1.33x -> 1.48x  1.69x -> 1.71x
    hidden 256, 2x256    1.33x -> 1.23x  1.82x -> 1.81x  1.52x -> 1.52x  1.76x -> 1.70x

Only GPT-2's medium forward moved beyond this load's noise. Goal not met. What is left: the softmax's row
reductions (numpy's `maximum.reduce` over 256-element rows: 363 us for (2, 4, 256, 256) vs torch.amax's 133)
and exp (405 us), and in the training step (py-spy, 40 s of GPT-2 hidden-128 compiled training steps, both
threads, idle left out): the sim launches 59% (MXU dots 27%: blas_matmul 15%, operand rounding 6%, gather 6%;
the plans' numpy ufuncs 15% and fused groups 6% self time), the AdamW step 19% (its launch included);
outside Python, the autograd device thread 13% and the main thread blocked in `backward` 9%; gelu_new's
`power` is down to under 1%.

Session perf24 (branch `perf24`, load average 6-8 on 2 cores). Where a GPT-2 hidden-128 compiled training step
goes (~26 ms process CPU; thread CPU time inside each launch): the sim launches 18.5 ms (backward graph 8.2,
forward 5.0, AdamW 4.4, the two loss graphs 1.4), the launch Python around them ~2.9 ms, the rest (Dynamo, AOT,
autograd, zero_grad, loss) ~5 ms. Inside the dots: BLAS 4.0 ms, operand rounding 1.7, C-order gathers 1.6.
(1) The AdamW graph's per-parameter chains were split into several fused groups and loose numpy passes at every
0-d bias correction (each small step counted as a fusion barrier; `1 - beta**step` is float `power`): small pure
steps now float, and a one-element broadcast is read once by the loop (drivers/sim/fusion.py), so each
parameter shape's chain is one loop. The AdamW launch alone (thread CPU time, median of 15 steps, processes
old, new, new, old): GPT-2 5.36 / 5.10 -> 4.38 / 4.32 ms, Llama 7.23 / 5.35 -> 4.45 / 5.10 ms. Fusing down to
16384 elements (fusion.MIN_ELEMENTS) on top measured 4.37 / 3.77 and 4.52 / 4.79: kept at 65536. (2) index_add
(the embedding backward) runs one compiled loop instead of np.add.at, same bits (drivers/sim/index_add_rows.py):
(1000, 128) += 128 rows 126 -> 11 us alone, the backward's two 0.46 -> 0.29 ms replayed. Whole steps, compiled
x CPU eager in alternating processes (old, new, new, old; ABBA inside, median of 5; at this load each figure
is +-15%, so these do not rank old and new, the launch times above do):

    hidden 128, 2x64   gpt2 fwd 1.32x / 1.29x -> 1.38x / 1.38x   train 1.74x / 1.84x -> 1.99x / 1.71x
                       llama fwd 1.36x / 1.29x -> 1.29x / 1.30x  train 1.79x / 1.65x -> 1.52x / 1.63x

The steady table after (this branch, --repeats 5, load average ~7): hidden 128 gpt2 fwd 1.62x train 1.81x,
llama fwd 1.23x train 1.49x.

Tried and dropped: per-thread scratch buffers for the rounded operands and gathers (no fresh pages per dot):
rounding stayed 1.7-1.8 ms per step, it is the cold read of the operand, not page faults. Checked: the compiled
backward is one launch per step (plus the two loss graphs and five `zero_` fills), not many tiny programs. Not
done: the sim's row max/min and exp through torch (drivers/ may not import torch, tests/test_layering.py).
Goal not met.

Session perf25 (branch `perf25`, load average 2-8). The medium size (hidden 256, 2 x 256 tokens) page-faulted:
~16,500 minor faults per compiled GPT-2 training step (27 ms of system time in ~145 ms; 20% of a Llama step's CPU
in the kernel, perf), all inside the sim's launches. The cause: the driver's `mallopt(M_TRIM_THRESHOLD)`
(`_keep_heap`, 1b26185) also froze glibc's mmap threshold at 128 KiB, so every larger numpy temporary
(and CPU eager's tensors in the same process) was a fresh mapping, faulted in and unmapped on each launch. It is
now set to 32 MiB, glibc's dynamic ceiling (drivers/sim/driver.py; tests/test_sim_keep_heap.py): 19,569 -> 283
faults per step. Also: (1) DEFAULT fast dots round their operands into a per-thread scratch (sim/mxu_round.py:
round_operand 30 -> 20 ms per medium GPT-2 step, in one process ABBA before the mmap fix); (2) the C-order gather
of transposed operands copies 32-column blocks from 128 columns at any pitch (medium gathers 10.4 / 13.1 -> 8.8 /
10.8 ms per GPT-2 / Llama step); (3) after direct writes, copied results are guarded only against the outputs the
copies write (a saved activation's reshape was copied defensively, 4.5 MB per GPT-2 hidden-256 forward). All
same bits. Handing BLAS a transposed operand without the copy still changes bits (this OpenBLAS 0.3.31 now
picks SkylakeX kernels: 3 of 150 random shapes differ, small-matrix and gemv paths), and a fused numba
gather-and-round (tiled, three loop orders) measured 1.3-3x slower than numpy's blocked copy + the vectorized
rounding on every benchmark shape, so both stay as they were. Old (780650e's drivers/ and sim/) vs new in
alternating processes (old, new, new, old; CPU eager and compiled ABBA inside, median of 5 at hidden 256, 7 at
128), compiled x CPU eager (compiled ms in brackets):

    hidden 256, 2x256  gpt2 fwd   1.20x / 1.12x (28 / 29)    -> 1.33x / 1.35x (29 / 28)
                       gpt2 train 1.76x / 1.70x (130 / 131)  -> 1.55x / 1.50x (116 / 109)
                       llama fwd  1.50x / 1.46x (34 / 35)    -> 1.43x / 1.44x (35 / 33)
                       llama train 2.03x / 1.85x (178 / 159) -> 1.57x / 1.59x (133 / 133)
    hidden 128, 2x64   gpt2 fwd 1.35x / 1.32x -> 1.36x / 1.46x   train 1.73x / 1.72x -> 1.82x / 1.77x
                       llama fwd 1.37x / 1.35x -> 1.39x / 1.40x  train 1.78x / 1.72x -> 1.83x / 1.74x

(GPT-2's medium forward ratio rose because CPU eager, in the same process, stopped faulting too: 23-26 -> 21 ms.)
Left at medium (perf over a Llama training loop after the fix, both threads): the kernel 21% -> 0.4%; OpenBLAS
40% (sgemm at parity with torch's MKL per shape, 0.9-1.1x, one thread), numpy element-wise and strided copies 26%,
memmove/memset 8.5%, the fused numba loops 15% (memory-bound: an AdamW pair loop over 18 arrays of 256k elements
2 ms in-step vs 0.55 ms hot), Python 6.5%. Goal not met (<= 1.0x). The zoo at the
medium size, compiled (`benchmarks/models.py --compile --size medium --repeats 3`, new only; the full zoo ran past
10 minutes, so four models): bert fwd 1.8x train 1.9x, t5 1.4x / 1.5x, vit 2.1x / 2.1x, mistral 1.5x / 1.9x
(goal <= 1.5x: not met).

Session perf26 (branch `perf26`, load average 5-14 on 2 cores). Where a medium compiled Llama training step goes
(each plan's straight-line run timed step by step, thread CPU time, 3 steps; CPU eager 85 ms in the same
process): the sim launches 143 of ~150 ms; dot_general 82-85 ms (BLAS 53, operand rounding 11, the C-order
gather of transposed operands 11: aten::mm is 45 ms of CPU eager's step, BLAS is at parity); the AdamW graph
10-12 ms (CPU eager's foreach AdamW 10.4 ms: at parity); element-wise steps ~30 ms, none over 1.2 ms (logistic
of (2, 256, 1024) 1.1 ms x 4, exp/subtract/select over the (512, 1000) logits); outside the steps ~12 ms, most
of it the training forward copying 44 MB of results into its outputs (saved activations: 15 MB ufunc results
returned through a reshape, 10 MB dot results through a reshape, 9.4 MB weight transposes). Changes, same bits
(old and new equal byte for byte on compiled and DEFER_NEVER training steps of both models at hidden 128):
(1) a fast DEFAULT dot's transposed operand rounds in its own memory order and goes to BLAS transposed when a
per-shape probe of random bf16 operands gives the C-order product's bits (sim/mxu_layout.py; products under
2^21 multiply-adds keep the gather, and so would any shape this OpenBLAS sums differently); (2) a ufunc step
whose result reaches an output only through a reshape writes into the output viewed at its shape
(drivers/sim/direct_outputs.py `IntoView`). (1) alone, in one process (CPU eager, gather, no gather, ABBA,
median of 5): llama train 1.59x -> 1.50x, fwd 1.38x -> 1.28x; gpt2 train 1.55x -> 1.45x, fwd 1.29x -> 1.30x
(GPT-2's Conv1D weights are not transposed in the forward). Both, processes base, new, new, base (ABBA inside,
median of 5; compiled ms in brackets):

    hidden 256, 2x256  llama train 1.60x / 1.56x (132 / 140) -> 1.56x / 1.50x (130 / 128)
                       llama fwd   1.40x / 1.51x             -> 1.42x / 1.35x
                       gpt2 train  1.46x / 1.51x (117 / 115) -> 1.47x / 1.47x (109 / 110)
                       gpt2 fwd    1.31x / 1.38x             -> 1.26x / 1.27x

Goal not met (<= 1.0x): BLAS alone is ~0.6x of CPU eager's whole step, the operand rounding another ~0.15x.
The zoo's worst at medium size: vit has 2 x 17 tokens, so its (34, 1024) @ (1024, 256) products round a weight
as large as the product's work (rounding 3.2 of 10 ms of dots) and its AdamW graph is 10.6 of a 28 ms step (CPU
eager's whole step 14 ms); bert's exact GELU costs ~10 ms of a 122 ms step (CPU 67 ms): erf is numba's
scalar libm erff at ~3-9 ns per element (four (2, 256, 1024) passes per step) against CPU's vectorized gelu.
Not done: a vectorized erf with the same bits would have to follow glibc's erff (2.36 here) step by step.

Session 27 (helpers p27a-c; quiet machine, load ~1-2), all same bits: (1) a fast dot writes its program output
from BLAS itself (also through a reshape), a reshaped direct write needs only a view of the output (a compiled
forward's transposed attention outputs had sent every output of the launch down the copy path), writes follow
chains of reshapes and transposes, and a compiled forward returns the weight transposes it saves for backward as
views of the weights where the graph says they are views (bytes copied per medium Llama step 72.9 -> 22.7 MB,
GPT-2 58.2 -> 16.3 MB); (2) a fused group's independent chains run as one loop each and a result written over an
operand is stored through that operand's argument, so the loops vectorize (a compiled 4.2M-parameter AdamW step
1.45x -> 0.45x CPU eager's foreach); (3) dots of one plan that read the same value round it once per run (Llama
train's operand rounding 19.1 -> 16.4 ms per step). Processes main (a955abe), new, new, main (ABBA inside, median
of 5), compiled x CPU eager at hidden 256, 2x256 (compiled ms in brackets):

    llama train 1.42x / 1.50x (165 / 176) -> 1.22x / 1.30x (144 / 155)
    llama fwd   1.47x / 1.33x             -> 1.43x / 1.41x (noise: compiled 42 / 43 -> 43 / 40 ms)
    gpt2 train  1.45x / 1.42x (144 / 149) -> 1.31x / 1.35x (127 / 128)
    gpt2 fwd    1.43x / 1.27x             -> 1.34x / 1.32x

Zoo at medium size (`benchmarks/models.py --compile --size medium --repeats 5`, processes main, new, new, main),
compiled x CPU eager, training step: bert 1.9x / 1.7x -> 1.7x / 1.7x, vit 2.1x / 2.2x -> 1.8x / 1.6x, t5 1.5x /
1.4x -> 1.4x / 1.4x, mistral 1.6x / 1.6x -> 1.4x / 1.4x, llama 1.7x / 1.6x -> 1.5x / 1.6x, gpt2 1.6x / 1.5x ->
1.3x / 1.3x; forward unchanged (bert 1.6-1.7x, vit 2.0-2.2x, t5 1.5-1.6x, mistral, llama, gpt2 1.4-1.5x).
Goal not met (<= 1.0x); left: 23 MB a Llama step still copied (an eager zero_ fill, results with several
readers, divide/subtract outputs), operand rounding repeated across the forward and backward programs (the
backward reads the forward's saved copies, other memory), erf as above.

Session 29: the fast MXU product goes through MKL's bf16 x bf16 -> f32 GEMM (sim/mxu_gemm.py; AVX512_BF16, half
the operand bytes, rounding folded into the 16-bit copy). Processes 314bb0a, new, new, 314bb0a (ABBA inside,
median of 5), compiled x CPU eager: hidden 256, 2x256: llama train 1.35x / 1.30x -> 0.98x / 1.03x, fwd 1.41x /
1.38x -> 0.81x / 0.91x; gpt2 train 1.27x / 1.36x -> 1.01x / 0.95x, fwd 1.33x / 1.35x -> 0.85x / 0.89x. Hidden
128, 2x64 (launch-bound, products small): unchanged, llama train 1.49-1.58x, fwd 1.17-1.34x, gpt2 train
1.68-1.79x, fwd 1.32-1.39x. Zoo at medium (`models.py --compile --size medium --repeats 3`, same alternation),
fwd then train, old -> new: bert 1.6-1.7x -> 1.1x, 1.5-1.6x -> 1.2x; vit 1.8-1.9x -> 1.4-1.5x, 1.5-1.6x ->
1.4-1.5x; t5 1.5-1.6x -> 1.1x, 1.3-1.4x -> 1.0-1.1x; mistral 1.4x -> 0.9x, 1.5-1.6x -> 1.0x; llama 1.5-1.6x ->
0.9x, 1.4x -> 1.0-1.1x; gpt2 1.3x -> 0.8x, 1.3x -> 1.0x."""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

torch.set_num_threads(1)
_BATCH = 3  # back-to-back calls per sample


def _hf(arch: str, hidden: int, vocab: int):
    import transformers

    if arch == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=2, n_head=4, n_positions=512,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        cls = transformers.GPT2LMHeadModel
    else:
        cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=4 * hidden,
                                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                       max_position_embeddings=512)
        cls = transformers.LlamaForCausalLM
    torch.manual_seed(0)
    return cls(cfg).eval()


def _fns(model, ids, device: str, compiled: bool, backend="tpu"):
    import copy

    model = copy.deepcopy(model).to(device)
    ids = ids.to(device)
    run = torch.compile(model, backend=backend) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step = torch.compile(opt.step, backend=backend) if compiled else opt.step

    def forward():
        with torch.no_grad():
            run(ids).logits.cpu()

    def train():
        model.train()
        opt.zero_grad()
        loss = run(ids, labels=ids).loss
        loss.backward()
        step()
        loss.detach().cpu()

    return forward, train


def medium_step(arch: str, kind: str, device: str = "tpu"):
    """One step function of the medium `arch` ("llama" or "gpt2": hidden 256, 2 x 256 tokens, vocab 1000), `kind`
    "fwd" or "train", on `device` (compiled on the tpu): what the per-step profiling benchmarks run."""
    model = _hf(arch, 256, 1000)
    ids = torch.randint(0, 1000, (2, 256), generator=torch.Generator().manual_seed(0))
    return _fns(model, ids, device, device == "tpu")[0 if kind == "fwd" else 1]


def _own_backend():
    """The "tpu" backend as a new object (see `toggled`)."""
    tpu = torch._dynamo.lookup_backend("tpu")
    return lambda gm, example_inputs: tpu(gm, example_inputs)


def toggled(repeats: int, wrap, names: tuple[str, str] = ("old", "new")) -> None:
    """Medium compiled Llama and GPT-2 steps (forward, training) with a change off and on, against CPU eager, ABBA
    in one process: `wrap(fn, on)` runs `fn` with the change on or off. Each side compiles its own graphs (a flag
    read when a plan is built needs the sim driver's executable cache swapped per side too:
    benchmarks/fusion_flags.py). Prints process CPU ms per call (medians), ratios to CPU eager and new/old."""
    import torchtpu

    old, new = names
    print(f"steady state, process CPU ms per call (ABBA, median of {repeats}), hidden 256, 2 x 256 tokens; ratios "
          "to CPU eager")
    for arch in ("llama", "gpt2"):
        torch._dynamo.reset()
        model = _hf(arch, 256, 1000)
        ids = torch.randint(0, 1000, (2, 256), generator=torch.Generator().manual_seed(0))
        # each side a backend object of its own: Dynamo keeps compiled graphs on the code object per backend, so
        # two deep copies of one model compiled with backend="tpu" would share the graphs (and plans) the first built
        cpu, off, on = (_fns(model, ids, "cpu", False), _fns(model, ids, "tpu", True, _own_backend()),
                        _fns(model, ids, "tpu", True, _own_backend()))
        with torchtpu.eager_mode("DEFER_NEVER"):
            for k, kind in enumerate(("fwd", "train")):
                fns = {"cpu": cpu[k], old: wrap(off[k], False), new: wrap(on[k], True)}
                for fn in fns.values():  # warm-up: compiles
                    fn()
                    fn()
                t = _abba(fns, repeats)
                print(f"{arch:6} {kind:5} cpu {t['cpu'] * 1e3:7.2f}  {old} {t[old] * 1e3:7.2f} "
                      f"({t[old] / t['cpu']:.3f}x)  {new} {t[new] * 1e3:7.2f} ({t[new] / t['cpu']:.3f}x)  "
                      f"{new}/{old} {t[new] / t[old]:.3f}", flush=True)


def _abba(fns: dict, repeats: int) -> dict[str, float]:
    """Median process CPU seconds per call of each function, sides in ABBA order."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            torch.set_num_threads(1)
            gc.collect()
            fns[name]()
            gc.disable()
            try:
                start = time.process_time()
                for _ in range(_BATCH):
                    fns[name]()
                times[name].append((time.process_time() - start) / _BATCH)
            finally:
                gc.enable()
    return {n: statistics.median(t) for n, t in times.items()}


def _without_direct_writes(fn):
    """`fn` with the sim's direct output writes off (drivers/sim/direct_outputs.py): the copy path, for
    comparison in the same run."""
    from torchtpu.drivers.sim import direct_outputs

    def run():
        direct_outputs.ENABLED = False
        try:
            fn()
        finally:
            direct_outputs.ENABLED = True

    return run


def steady(repeats: int, hidden: int, tokens: int) -> None:
    import torchtpu

    print(f"steady state, process CPU ms per call (ABBA, median of {repeats}), hidden {hidden}, 2 x {tokens} "
          "tokens, vocab 1000; ratios to CPU eager")
    print(f"{'model':6} {'kind':6} {'cpu':>8} {'tpu eager':>10} {'compiled':>9} {'eager x':>8} {'compiled x':>11} "
          f"{'copy path x':>12}")
    for arch in ("gpt2", "llama"):
        torch._dynamo.reset()
        model = _hf(arch, hidden, 1000)
        ids = torch.randint(0, 1000, (2, tokens), generator=torch.Generator().manual_seed(0))
        sides = {"cpu": _fns(model, ids, "cpu", False), "tpu eager": _fns(model, ids, "tpu", False),
                 "compiled": _fns(model, ids, "tpu", True)}
        copying = _fns(model, ids, "tpu", True)  # the same, results copied into outputs (direct writes off)
        sides["copy path"] = tuple(_without_direct_writes(f) for f in copying)
        with torchtpu.eager_mode("DEFER_NEVER"):
            for k, kind in enumerate(("fwd", "train")):
                fns = {name: pair[k] for name, pair in sides.items()}
                for fn in fns.values():  # warm-up: compiles
                    fn()
                    fn()
                t = _abba(fns, repeats)
                print(f"{arch:6} {kind:6} {t['cpu'] * 1e3:8.2f} {t['tpu eager'] * 1e3:10.2f} "
                      f"{t['compiled'] * 1e3:9.2f} {t['tpu eager'] / t['cpu']:7.2f}x "
                      f"{t['compiled'] / t['cpu']:10.2f}x {t['copy path'] / t['cpu']:11.2f}x")


def dynamic() -> None:
    from torch import nn

    import torchtpu

    class ConvAttention(nn.Module):
        def __init__(self, d: int = 16) -> None:
            super().__init__()
            self.conv = nn.Conv1d(d, d, 3, padding=1)
            self.qkv = nn.Linear(d, 3 * d)
            self.norm = nn.RMSNorm(d)
            self.out = nn.Linear(d, 8)

        def forward(self, x):
            b, t, d = x.shape
            h = self.conv(x.transpose(1, 2)).transpose(1, 2)
            q, k, v = self.qkv(h).view(b, t, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
            a = nn.functional.scaled_dot_product_attention(q, k, v)
            return self.out(self.norm(h + a.transpose(1, 2).reshape(b, t, d)))

    print("\nbounded dynamism: conv + attention + RMSNorm, training over 24 lengths (5..28), programs compiled")
    torch._dynamo.config.recompile_limit = 64  # dynamic=False: one Dynamo compile per length, none run eagerly
    for dyn in (False, True):
        torch._dynamo.reset()
        torchtpu.reset_stats()
        torch.manual_seed(0)
        model = ConvAttention().to("tpu")
        f = torch.compile(model, backend="tpu", dynamic=dyn)
        equal = True
        start = time.perf_counter()
        for n in range(5, 29):
            x = torch.randn(3, n, 16).to("tpu")
            out = f(x)
            out.square().mean().backward()
            equal &= torch.equal(out.detach().cpu(), model(x).detach().cpu())
        s = torchtpu.stats()["compile"]
        print(f"dynamic={dyn!s:5}  programs {s['programs']:3}  exact-shape fallbacks {s['exact_shape_fallbacks']:2}  "
              f"guard failures {s['recompiles']:3}  outputs equal to eager: {equal}  "
              f"{time.perf_counter() - start:.1f} s wall for the 24 steps")


def _demo_run(kind: str, steps: int = 8) -> dict[str, float]:
    import torchtpu
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    torch._dynamo.reset()
    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)

    def step(x, y):
        loss = model.loss(x, y)
        loss.backward()
        return loss

    fn = torch.compile(step, backend="tpu") if kind.startswith("compiled") else step
    mode = "DEFER_AND_FUSE" if kind.endswith("DEFER_AND_FUSE") else "DEFER_NEVER"
    walls, device = [], []
    with torchtpu.eager_mode(mode):
        start = time.perf_counter()
        for i in range(steps):
            x, y = synthetic_batch(cfg, 8, gen)
            torchtpu.reset_stats()
            t0 = time.perf_counter()
            opt.zero_grad()
            fn(x.to("tpu"), y.to("tpu")).item()
            opt.step()
            torch.tpu.synchronize()
            walls.append(time.perf_counter() - t0)
            device.append(torchtpu.stats()["device_seconds"])
            if i == 0:
                first = time.perf_counter() - start
    return {"first": first, "wall": statistics.median(walls[2:]), "device": statistics.median(device[2:])}


def demo() -> None:
    kinds = ("DEFER_NEVER", "DEFER_AND_FUSE", "compiled", "compiled+DEFER_AND_FUSE")
    results = {kind: _demo_run(kind) for kind in kinds}
    base = results["DEFER_NEVER"]
    print(f"\ndemo model training step\n{'mode':24} {'first result s':>15} {'step wall s':>12} "
          f"{'device us/step':>15} {'device vs eager':>16}")
    for kind, r in results.items():
        print(f"{kind:24} {r['first']:15.3f} {r['wall']:12.4f} {r['device'] * 1e6:15.2f} "
              f"{base['device'] / r['device']:15.2f}x")


def main() -> None:
    import torchtpu  # noqa: F401

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="steady,dynamic,demo")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--size", choices=("small", "medium"), default=None,
                        help="small: hidden 128, 2 x 64 tokens; medium: hidden 256, 2 x 256 (overrides both)")
    args = parser.parse_args()
    if args.size is not None:
        args.hidden, args.tokens = {"small": (128, 64), "medium": (256, 256)}[args.size]
    parts = args.only.split(",")
    if "steady" in parts:
        steady(args.repeats, args.hidden, args.tokens)
    if "dynamic" in parts:
        dynamic()
    if "demo" in parts:
        demo()


if __name__ == "__main__":
    main()
