"""Runs OpInfo entries on CPU and on "tpu" and compares them: one `Result` per (entry, dtype).

Per sample: the CPU sample is copied to tpu (tensors keep their aliasing and `requires_grad`, `device=` arguments
are redirected), the op runs on both, outputs are compared with `torch.testing.assert_close`, and for
differentiable ops the gradients of a fixed random cotangent are compared too. Fallbacks are counted around the
tpu side only. Random ops are compared by distribution (a two-sample Kolmogorov-Smirnov test over repeated
draws), ops with undefined output values (`empty*`) by shape and dtype only.
"""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import gc
import math
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from torchtpu.conformance import skips
from torchtpu.conformance.equivalence import (  # noqa: F401 - part of the harness's API (tests use them)
    GRAD_TOLERANCES,
    TOLERANCES,
    _ks_statistic,
    _ks_statistic_shifted,
    _random_statistic,
    _tol,
    compare,
    same_decomposition,
    ties_only,
)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int64": torch.int64, "bool": torch.bool}

PRECISION = {"float32": "HIGHEST", "bfloat16": "DEFAULT", "int64": "HIGHEST", "bool": "HIGHEST"}


@dataclass
class Result:
    name: str
    dtype: str
    status: str  # native | fallback | fail | skip
    reason: str = ""
    fallback_ops: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    grad_samples: int = 0
    reference_samples: int = 0  # samples that matched the wider-dtype reference (not CPU within tolerance)
    tie_samples: int = 0  # samples whose index outputs picked other, equal elements than CPU (grads not compared)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def entry_name(op: Any) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def load_op_db() -> list[Any]:
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def select(ops: Sequence[Any], patterns: Iterable[str] | None = None, every: int = 1) -> list[Any]:
    """Entries whose full name matches any of `patterns` (fnmatch), then every `every`-th of them."""
    chosen = list(ops)
    if patterns:
        pats = list(patterns)
        chosen = [o for o in chosen if any(fnmatch.fnmatchcase(entry_name(o), p) for p in pats)]
    return chosen[::max(every, 1)]


# --- moving samples to tpu --------------------------------------------------------------------------------------

class _ToTpu:
    """Copies CPU tensors to tpu once each (aliasing preserved), redirecting `device` arguments."""

    def __init__(self) -> None:
        self.memo: dict[int, torch.Tensor] = {}

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        key = id(t)
        if key not in self.memo:
            moved = t.detach().to("tpu")
            if t.requires_grad:
                moved.requires_grad_(True)
            self.memo[key] = moved
        return self.memo[key]

    def __call__(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, torch.device) and x.type == "cpu":
            return torch.device("tpu")
        if isinstance(x, str) and x == "cpu":
            return "tpu"
        return x


def _leaves(x: Any) -> list[torch.Tensor]:
    flat, _ = tree_flatten(x)
    seen: set[int] = set()
    out = []
    for t in flat:
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


_WIDER = {torch.float32: torch.float64, torch.bfloat16: torch.float32}


def _upcast(sample: Any, dtype: torch.dtype) -> tuple[Any, dict[int, torch.Tensor]]:
    """The sample with its `dtype` tensors widened (leaves keep requires_grad), and a `dtype=` keyword equal to
    `dtype` widened too (factories such as logspace compute in it); memo maps id(original) -> wide."""
    wide = _WIDER[dtype]
    memo: dict[int, torch.Tensor] = {}

    def f(t: Any) -> Any:
        if not (isinstance(t, torch.Tensor) and t.dtype == dtype):
            return t
        if id(t) not in memo:
            w = t.detach().to(wide)
            memo[id(t)] = w.requires_grad_(True) if t.requires_grad else w
        return memo[id(t)]

    s = copy.copy(sample)
    s.input, s.args, s.kwargs = tree_map(f, sample.input), tree_map(f, sample.args), tree_map(f, sample.kwargs)
    if s.kwargs.get("dtype") == dtype:
        s.kwargs = {**s.kwargs, "dtype": wide}
    return s, memo


def _within_reference(actual: Sequence[Any], expected: Sequence[Any], reference: Sequence[Any], grad: bool
                      ) -> bool:
    if not len(actual) == len(expected) == len(reference):
        return False
    for a, e, r in zip(actual, expected, reference):
        if not isinstance(e, torch.Tensor):
            continue  # non-tensor leaves and None gradients were compared already
        if not isinstance(r, torch.Tensor) or a is None or a.shape != e.shape or r.shape != e.shape or \
                a.dtype != e.dtype:
            return False
        a_, e_, r_ = a.detach().cpu(), e.detach(), r.detach()
        if not (e.dtype.is_floating_point or e.dtype.is_complex):
            if not torch.equal(a_, e_):
                return False
            continue
        wide = torch.complex128 if e.dtype.is_complex else torch.float64
        a_, e_, r_ = a_.to(wide), e_.to(wide), r_.to(wide)
        rtol, atol = _tol(e.dtype, grad)
        err_a, err_e = (a_ - r_).abs(), (e_ - r_).abs().nan_to_num(0.0, 0.0, 0.0)
        scale = 2 * float(err_e.max()) if err_e.numel() else 0.0
        bound = scale + atol + rtol * r_.abs().nan_to_num(0.0, 0.0, 0.0)
        same = (a_ == e_) | (a_.isnan() & e_.isnan())
        if not bool(((err_a <= bound) | same).all()):
            return False
    return True


def as_accurate_as_cpu(op: Any, sample: Any, actual: Any, expected: Any, dtype: torch.dtype) -> bool:
    """The second chance of a float comparison: the op is rerun on CPU in a wider dtype (float64 for float32,
    float32 for bfloat16) as the reference, and the tpu result passes if each element's error against it is at
    most twice CPU's own largest error on that output plus the tolerance: the error scale of the computation in
    this dtype is what CPU's worst element shows (long sums of large products, bf16 intermediates that CPU rounds
    and the chip keeps in f32), and a tpu element within it is as accurate as CPU."""
    if dtype not in _WIDER:
        return False
    try:
        reference = _call(op, _upcast(sample, dtype)[0])
    except Exception:  # noqa: BLE001 - the op may not take the wider dtype
        return False
    return _within_reference(tree_flatten(actual)[0], tree_flatten(expected)[0], tree_flatten(reference)[0], False)


def grads_as_accurate_as_cpu(op: Any, sample: Any, inputs: Sequence[torch.Tensor], cotangents: Sequence[Any],
                             actual: Sequence[Any], expected: Sequence[Any], dtype: torch.dtype) -> bool:
    """`as_accurate_as_cpu` for gradients: the same cotangents pulled back through the wider-dtype op."""
    if dtype not in _WIDER:
        return False
    try:
        wide_sample, memo = _upcast(sample, dtype)
        process = sample.output_process_fn_grad or (lambda x: x)
        outs = _differentiable_outputs(process(_call(op, wide_sample)))
        wide_inputs = [memo.get(id(t), t) for t in inputs]
        cots = [c.to(o.dtype) for c, o in zip(cotangents, outs)]
        reference = torch.autograd.grad(outs, wide_inputs, cots, allow_unused=True)
    except Exception:  # noqa: BLE001
        return False
    return _within_reference(list(actual), list(expected), list(reference), True)


def _first_tensor(x: Any) -> torch.Tensor | None:
    for t in tree_flatten(x)[0]:
        if isinstance(t, torch.Tensor):
            return t
    return None


# --- running one entry --------------------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _call(op: Any, sample: Any) -> Any:
    return op(sample.input, *sample.args, **sample.kwargs)


def _differentiable_outputs(out: Any) -> list[torch.Tensor]:
    flat, _ = tree_flatten(out)
    return [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad and
            (t.dtype.is_floating_point or t.dtype.is_complex)]


def _check_sample(op: Any, sample: Any, random: bool, nondet: bool, grad: bool, name: str = "",
                  dtype: torch.dtype = torch.float32, stats: Counter | None = None) -> tuple[bool, bool]:
    """Runs one sample on CPU and tpu. Returns (ran, grad_checked); raises AssertionError/Exception on a mismatch."""
    stats = Counter() if stats is None else stats
    if random or (name in skips.RANDOM_IF and skips.RANDOM_IF[name](sample)):
        with _unseeded():
            return _check_random(op, sample, name), False
    torch.manual_seed(0)
    try:
        expected = _call(op, sample)
    except Exception:
        return False, False  # the sample is not valid on CPU either
    tpu_sample, to_tpu = _to_tpu_sample(sample, name, op.is_factory_function)
    torch.manual_seed(0)
    actual = _call(op, tpu_sample)
    try:
        compare(actual, expected, metadata_only=nondet, atol_floor=skips.ATOL.get(name, 0.0))
    except AssertionError:
        if name in skips.UNORDERED_TIES and ties_only(sample.input, actual, expected):
            stats["ties"] += 1
            return True, False  # which of equal elements is picked is unspecified, and so is where grads go
        if name in skips.NON_UNIQUE and same_decomposition(skips.NON_UNIQUE[name], sample.input, actual, expected):
            stats["ties"] += 1
            return True, False  # another valid factorization (signs, phases, bases of repeated values)
        if nondet or not as_accurate_as_cpu(op, sample, actual, expected, dtype):
            raise
        stats["reference"] += 1
    if not grad or nondet:
        return True, False
    process = sample.output_process_fn_grad or (lambda x: x)
    outs_cpu = _differentiable_outputs(process(expected))
    inputs_cpu = _leaves((sample.input, sample.args, sample.kwargs))
    if not outs_cpu or not inputs_cpu:
        return True, False
    gen = torch.Generator().manual_seed(1)
    cots_cpu = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype) for o in outs_cpu]
    try:
        grads_cpu = torch.autograd.grad(outs_cpu, inputs_cpu, cots_cpu, allow_unused=True)
    except Exception:
        return True, False  # no derivative on CPU: nothing to compare
    outs_tpu = _differentiable_outputs(process(actual))
    if len(outs_tpu) != len(outs_cpu):
        raise AssertionError(f"tpu has {len(outs_tpu)} differentiable outputs, cpu {len(outs_cpu)}")
    inputs_tpu = [to_tpu.memo[id(t)] for t in inputs_cpu]
    grads_tpu = torch.autograd.grad(outs_tpu, inputs_tpu, [c.to("tpu") for c in cots_cpu], allow_unused=True)
    grads_tpu = list(grads_tpu)
    grads_cpu = list(grads_cpu)
    for i, (gt, gc_) in enumerate(zip(grads_tpu, grads_cpu)):
        if (gt is None) != (gc_ is None):
            if gc_ is not None and gc_.count_nonzero() == 0 or gt is not None and gt.count_nonzero() == 0:
                grads_tpu[i] = grads_cpu[i] = None  # an unused input: None on one side, zeros on the other
                continue
            raise AssertionError(f"grad[{i}]: tpu {'None' if gt is None else 'tensor'}, cpu "
                                 f"{'None' if gc_ is None else 'tensor'}")
    try:
        for i, (gt, gc_) in enumerate(zip(grads_tpu, grads_cpu)):
            if gc_ is not None:
                compare(gt, gc_, f"grad[{i}]", grad=True, atol_floor=skips.ATOL.get(name, 0.0))
    except AssertionError:
        if name in skips.UNORDERED_TIES and isinstance(sample.input, torch.Tensor) and \
                sample.input.detach().unique().numel() < sample.input.numel():
            stats["ties"] += 1  # equal inputs: which of them receives the gradient is unspecified
            return True, False
        if not grads_as_accurate_as_cpu(op, sample, inputs_cpu, cots_cpu, grads_tpu, grads_cpu, dtype):
            raise
        stats["reference"] += 1
    return True, True


@contextlib.contextmanager
def _unseeded() -> Iterator[None]:
    """OpInfo wraps random ops in `wrapper_set_seed` (seed 42 before every call); draws must differ per call."""
    from torch.testing._internal import common_methods_invocations as cmi

    saved = cmi.wrapper_set_seed
    cmi.wrapper_set_seed = lambda fn, *args, **kwargs: fn(*args, **kwargs)
    try:
        yield
    finally:
        cmi.wrapper_set_seed = saved


def _to_tpu_sample(sample: Any, name: str = "", factory: bool = False) -> tuple[Any, _ToTpu]:
    to_tpu = _ToTpu()
    tpu_sample = copy.copy(sample)
    keep = skips.CPU_ARGS.get(name, ())
    tpu_sample.input = tree_map(to_tpu, sample.input)
    tpu_sample.args = tuple(a if i in keep else tree_map(to_tpu, a) for i, a in enumerate(sample.args))
    tpu_sample.kwargs = tree_map(to_tpu, sample.kwargs)
    has_tensor = any(isinstance(t, torch.Tensor) for t in tree_flatten((sample.input, sample.args))[0])
    if not has_tensor and "device" not in sample.kwargs and factory:
        tpu_sample.kwargs = {**tpu_sample.kwargs, "device": "tpu"}  # a factory called without device=
    return tpu_sample, to_tpu


def _check_random(op: Any, sample: Any, name: str) -> bool:
    torch.manual_seed(0)
    try:
        expected = _call(op, sample)
    except Exception:
        return False
    tpu_sample, _ = _to_tpu_sample(sample, name, op.is_factory_function)
    actual = _call(op, tpu_sample)
    compare(actual, expected, metadata_only=True)
    e0, a0 = _first_tensor(expected), _first_tensor(actual)
    if e0 is None or e0.numel() == 0:
        return True
    draws_cpu, draws_tpu = [e0.detach().flatten().clone()], [a0.detach().cpu().flatten()]
    calls = max(1, min(200, 4000 // e0.numel()))
    for _ in range(calls - 1):
        draws_cpu.append(_first_tensor(_call(op, sample)).detach().flatten().clone())  # in-place ops reuse it
        draws_tpu.append(_first_tensor(_call(op, tpu_sample)).detach().cpu().flatten())
    if name in skips.RANDOM_CORRELATED:  # draws within one call share a mask: compare per-call means
        calls = max(calls, 400)
        while len(draws_cpu) < calls:
            draws_cpu.append(_first_tensor(_call(op, sample)).detach().flatten().clone())
            draws_tpu.append(_first_tensor(_call(op, tpu_sample)).detach().cpu().flatten())
        draws_tpu = [d.double().mean().reshape(1) for d in draws_tpu]
        draws_cpu = [d.double().mean().reshape(1) for d in draws_cpu]
    a, b = torch.cat(draws_tpu), torch.cat(draws_cpu)
    if a.is_complex():
        a, b = torch.view_as_real(a).flatten(), torch.view_as_real(b).flatten()
    n, m = a.numel(), b.numel()
    spread = float(torch.cat([a, b]).double().abs().max()) if n + m else 0.0
    if float(a.double().std() if n > 1 else 0) <= 1e-6 * max(spread, 1.0) and \
            float(b.double().std() if m > 1 else 0) <= 1e-6 * max(spread, 1.0):  # not random here: values
        rtol = 2e-2 if e0.dtype == torch.bfloat16 else 1e-4
        torch.testing.assert_close(a.double().mean(), b.double().mean(), rtol=rtol, atol=1e-5)
        return True
    d = _random_statistic(a.float(), b.float(), 2e-2 if e0.dtype == torch.bfloat16 else 1e-4)
    # alpha ~ 1e-5: draws within one call can be correlated (feature dropout drops whole channels), which widens
    # the statistic's spread beyond the iid bound; wrong means or scales still give statistics several times this.
    critical = 2.5 * math.sqrt((n + m) / (n * m))
    if d > critical:
        raise AssertionError(f"distribution differs from CPU: KS statistic {d:.3f} > {critical:.3f} "
                             f"({n} draws; tpu mean {a.float().mean():.4g}, cpu mean {b.float().mean():.4g})")
    return True


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text[:300]


def run_entry(op: Any, dtype_name: str, max_samples: int | None = None, timeout: float = 300.0,
              check_grad: bool = True) -> Result:
    """Runs every sample of `op` for `dtype_name` on CPU and tpu; see the module docstring."""
    import torchtpu

    name = entry_name(op)
    dtype = DTYPES[dtype_name]
    reason = skips.skip_reason(name, dtype_name)
    if reason:
        return Result(name, dtype_name, "skip", reason)
    random = name in skips.RANDOM
    nondet = bool(op.has_nondeterministic_output) or name in skips.UNDEFINED_VALUES
    grad = (check_grad and op.supports_autograd and (dtype.is_floating_point or dtype.is_complex)
            and dtype in op.supported_backward_dtypes("cpu") and not random)
    start = time.perf_counter()
    torchtpu.reset_fallback_counts()
    result = Result(name, dtype_name, "native")
    stats: Counter = Counter()
    timeout = max(timeout, skips.TIMEOUTS.get(name, 0.0)) if timeout else timeout
    previous = signal.signal(signal.SIGALRM, _alarm) if timeout else None
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with torchtpu.precision(PRECISION[dtype_name]):
            samples = op.sample_inputs("cpu", dtype, requires_grad=grad)
            for i, sample in enumerate(samples):
                if max_samples is not None and result.samples >= max_samples:
                    break
                try:
                    ran, graded = _check_sample(op, sample, random, nondet, grad, name, dtype, stats)
                except _Timeout:
                    raise
                except Exception as exc:  # noqa: BLE001 - recorded as the entry's failure
                    result.status = "fail"
                    result.reason = f"sample {i}: {_short(exc)}"
                    result.samples += 1
                    break
                result.samples += int(ran)
                result.grad_samples += int(graded)
    except _Timeout:
        result.status, result.reason = "fail", f"timeout after {timeout:.0f} s ({result.samples} samples done)"
    except Exception as exc:  # noqa: BLE001 - sample generation itself failed
        result.status, result.reason = "fail", f"harness: {_short(exc)}"
        result.reason += " | " + traceback.format_exc(limit=-1).strip().splitlines()[-1][:100]
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    try:
        torch.tpu.synchronize()
    except Exception:  # noqa: BLE001
        pass
    result.reference_samples = stats["reference"]
    result.tie_samples = stats["ties"]
    result.fallback_ops = torchtpu.fallback_counts()
    torchtpu.reset_fallback_counts()
    if result.status == "native":
        if result.samples == 0:
            result.status, result.reason = "skip", "no sample of this dtype runs on CPU"
        elif result.fallback_ops:
            result.status = "fallback"
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def _clear_caches() -> None:
    try:
        from torchtpu.execution import eager

        cache = getattr(eager, "_cache", None)
        if isinstance(cache, dict) and len(cache) > 20000:
            cache.clear()
    except Exception:  # noqa: BLE001
        pass
    gc.collect()


def tasks_for(ops: Sequence[Any], dtype_names: Sequence[str]) -> list[tuple[Any, str]]:
    """(entry, dtype) pairs where the entry supports the dtype on CPU."""
    out = []
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for d in dtype_names:
            if DTYPES[d] in supported:
                out.append((op, d))
    return out


def run_many(tasks: Sequence[tuple[Any, str]], max_samples: int | None = None, timeout: float = 300.0,
             check_grad: bool = True, progress: bool = True,
             on_result: Callable[[Result], None] | None = None) -> list[Result]:
    from tqdm import tqdm

    results = []
    bar = tqdm(tasks, disable=not progress, unit="entry", dynamic_ncols=True)
    # The per-entry collection frees each entry's cyclic garbage (device memory among it); with the heap that
    # existed before the sweep (op_db's samples, the modules) frozen, it scans only what the sweep made:
    # 1.5 s -> milliseconds per entry.
    gc.collect()
    gc.freeze()
    try:
        for op, dtype_name in bar:
            bar.set_description(f"{entry_name(op)[:28]:28s} {dtype_name:8s}")
            r = run_entry(op, dtype_name, max_samples=max_samples, timeout=timeout, check_grad=check_grad)
            results.append(r)
            if on_result is not None:
                on_result(r)
            _clear_caches()
    finally:
        gc.unfreeze()
    return results
