"""Runs one call on CPU and on "tpu" in one mode and classifies the pair of outcomes.

Classes (a mismatch is anything but `ok` and `both_raise`):
  ok            both ran; outputs and every tensor argument afterwards equal within tolerance
  both_raise    both raised the same exception class (a launch's ExecutionError stands for the builtin it
                subclasses: IndexExecutionError is CPU's IndexError with the op and line added)
  error_class   both raised, different classes
  cpu_raises    CPU raised (a shape/value check) and tpu ran: a check tpu skips
  tpu_raises    tpu raised where CPU ran
  shape, dtype, device, type   the output's shape / dtype / device / Python type differs
  nan_inf       NaN or inf where the other side has none (or another one)
  value         finite values outside tolerance (and outside the wider-dtype reference's error)
  timeout       the tpu call ran past the per-call limit
  cpu_unsupported  CPU has no kernel for the dtype (NotImplementedError) and tpu ran: not a mismatch
Float outputs get a second chance as in the conformance harness: an element also passes when its error against
the op rerun on CPU in a wider dtype is at most twice CPU's own error plus the tolerance.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from torchtpu.drivers.base import ExecutionError
from torchtpu.fuzz.args import Call, TensorArg
from torchtpu.fuzz.orderless import canonical
from torchtpu.fuzz.overloads import is_random, undefined_values

MODES = ("DEFER_NEVER", "DEFER_AND_FUSE", "LAUNCH_BLOCKING", "compile")
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.complex64: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7),
              torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (2e-3, 1e-3)}
WIDER = {torch.float32: torch.float64, torch.bfloat16: torch.float32, torch.float16: torch.float32,
         torch.complex64: torch.complex128}
TIE_OPS = ("sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode", "max", "min", "msort",
           "argmax", "argmin", "unique", "_unique2", "unique_consecutive", "unique_dim", "cummax", "cummin")
MAX_NUMEL = 1 << 20


class CallTimeout(BaseException):  # noqa: N818 - BaseException so no op's `except Exception` swallows it
    """A call ran past the fuzzer's per-call limit."""


@dataclass
class Outcome:
    error: BaseException | None = None
    leaves: list[Any] | None = None  # flattened outputs, tensors on CPU
    args_after: list[torch.Tensor] | None = None  # tensor arguments after the call, on CPU


@dataclass
class Verdict:
    cls: str
    message: str = ""


def _with_timeout(seconds: float, fn: Callable[[], Any]) -> Any:
    def on_alarm(signum: int, frame: Any) -> None:
        raise CallTimeout(f"call ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _cpu(x: Any) -> Any:
    return x.detach().to("cpu") if isinstance(x, torch.Tensor) else x


def _tensors(args: list[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    flat = tree_flatten((args, kwargs))[0]
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _unwrap(e: BaseException) -> BaseException:
    """The user-level error behind torch.compile's wrappers (TorchRuntimeError, BackendCompilerFailed, ...)."""
    while type(e).__module__.startswith("torch._dynamo"):
        inner = e.__cause__ or e.__context__
        if inner is None:
            break
        e = inner
    inner = getattr(e, "inner_exception", None)
    return inner if isinstance(inner, BaseException) else e


def run_cpu(call: Call, upcast: bool = False) -> Outcome:
    args, kwargs = call.materialize("cpu")
    if upcast:
        def up(x: Any) -> Any:
            return x.to(WIDER[x.dtype]) if isinstance(x, torch.Tensor) and x.dtype in WIDER else x
        args = [[up(y) for y in a] if isinstance(a, list) else up(a) for a in args]
        kwargs = {k: [up(y) for y in v] if isinstance(v, list) else up(v) for k, v in kwargs.items()}
    try:
        out = call.op(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every error class is an outcome
        return Outcome(error=e)
    return Outcome(leaves=[_cpu(x) for x in tree_flatten(out)[0]], args_after=_tensors(args, kwargs))


def run_tpu(call: Call, mode: str, timeout: float) -> Outcome:
    args, kwargs = call.materialize("tpu")

    def eager() -> Outcome:
        with torch.tpu.eager_mode(mode):
            out = call.op(*args, **kwargs)
            leaves = [_cpu(x) for x in tree_flatten(out)[0]]
            after = [_cpu(t) for t in _tensors(args, kwargs)]
        return Outcome(leaves=leaves, args_after=after)

    def compiled() -> Outcome:
        flat, spec = tree_flatten((args, kwargs))
        slots = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]

        def fn(*tensors: torch.Tensor) -> Any:
            full = list(flat)
            for i, t in zip(slots, tensors):
                full[i] = t
            a, k = spec.unflatten(full)
            return call.op(*a, **k)

        torch._dynamo.reset()
        out = torch.compile(fn, backend="tpu")(*[flat[i] for i in slots])
        return Outcome(leaves=[_cpu(x) for x in tree_flatten(out)[0]],
                       args_after=[_cpu(t) for t in _tensors(args, kwargs)])

    try:  # a first compile in a process imports and warms up dynamo: more time
        return _with_timeout(3 * timeout if mode == "compile" else timeout, compiled if mode == "compile" else eager)
    except CallTimeout as e:
        try:
            torch.tpu.synchronize()
        except Exception:  # noqa: BLE001, S110 - a broken region after a timeout is reported by the timeout
            pass
        return Outcome(error=e)
    except Exception as e:  # noqa: BLE001
        return Outcome(error=_unwrap(e) if mode == "compile" else e)


def _elementwise_ok(a: torch.Tensor, e: torch.Tensor, ref: torch.Tensor | None) -> tuple[torch.Tensor, bool]:
    """Per-element pass mask and whether a failing element involves NaN/inf. A complex element with an infinite
    or NaN part also passes where its parts do, compared as two reals (its inf real part must not make its finite
    imaginary part exact)."""
    ok = _close(a, e, ref)
    if e.is_complex() and not bool(ok.all()):
        parts = [torch.view_as_real(t.to(torch.complex128).resolve_conj().resolve_neg()) if t is not None else None
                 for t in (a, e, ref)]
        finite = a.to(torch.complex128).isfinite() & e.to(torch.complex128).isfinite()
        ok |= ~finite & _close(parts[0], parts[1], parts[2], e.dtype).all(-1)
    wide = torch.complex128 if e.is_complex() else torch.float64
    bad = ~ok
    special = bool((bad & (~a.to(wide).isfinite() | ~e.to(wide).isfinite())).any())
    return ok, special


def _close(a: torch.Tensor, e: torch.Tensor, ref: torch.Tensor | None, dtype: torch.dtype | None = None
           ) -> torch.Tensor:
    rtol, atol = TOLERANCES.get(dtype or e.dtype, (1e-5, 1e-5))
    wide = torch.complex128 if e.is_complex() else torch.float64
    a64, e64 = a.to(wide), e.to(wide)
    finite = a64.isfinite() & e64.isfinite()  # an inf passes only by equality (inf - x <= rtol * inf would pass)
    ok = (a64 == e64) | (a64.isnan() & e64.isnan()) | (finite & ((a64 - e64).abs() <= atol + rtol * e64.abs()))
    if ref is not None and not bool(ok.all()):
        r64 = ref.to(wide)
        ok |= (a64 == r64) | (a64.isnan() & r64.isnan())
        ok |= finite & r64.isfinite() & ((a64 - r64).abs() <= 2 * (e64 - r64).abs() + atol + rtol * r64.abs())
    return ok


def _compare_leaf(a: Any, e: Any, ref: Any, metadata_only: bool, where: str) -> Verdict | None:
    if isinstance(e, torch.Tensor):
        if not isinstance(a, torch.Tensor):
            return Verdict("type", f"{where}: tpu gave {type(a).__name__}, cpu a tensor")
        if e.layout != torch.strided and a.layout == torch.strided:  # tpu holds strided tensors only: its values
            dense_ref = ref.to_dense() if isinstance(ref, torch.Tensor) and ref.layout != torch.strided else ref
            return _compare_leaf(a, e.to_dense(), dense_ref, metadata_only, where) or Verdict(
                "type", f"{where}: tpu gave a strided tensor, cpu a {e.layout} one (equal values)")
        if a.shape != e.shape:
            return Verdict("shape", f"{where}: tpu shape {list(a.shape)}, cpu {list(e.shape)}")
        if a.dtype != e.dtype:
            return Verdict("dtype", f"{where}: tpu {a.dtype}, cpu {e.dtype}")
        if metadata_only or e.numel() == 0:
            return None
        if not (e.is_floating_point() or e.is_complex()):
            if torch.equal(a, e):
                return None
            n = int((a != e).sum())
            return Verdict("value", f"{where}: {n} of {e.numel()} elements differ (first tpu "
                                    f"{a[a != e][0].item()!r} cpu {e[a != e][0].item()!r})")
        r = ref if isinstance(ref, torch.Tensor) and ref.shape == e.shape else None
        ok, special = _elementwise_ok(a, e, r)
        if bool(ok.all()):
            return None
        bad = ~ok
        first = (a[bad][0].item(), e[bad][0].item())
        return Verdict("nan_inf" if special else "value",
                       f"{where}: {int(bad.sum())} of {e.numel()} elements differ (first tpu {first[0]!r} "
                       f"cpu {first[1]!r})")
    if isinstance(a, torch.Tensor):
        return Verdict("type", f"{where}: tpu gave a tensor, cpu {type(e).__name__}")
    if isinstance(e, float) and isinstance(a, float | int):
        if a == e or (a != a and e != e) or abs(a - e) <= 1e-5 + 1e-5 * abs(e):
            return None
        return Verdict("nan_inf" if (a != a or e != e or abs(a) == float("inf") or abs(e) == float("inf"))
                       else "value", f"{where}: tpu {a!r} cpu {e!r}")
    if a != e and not (a != a and e != e):
        return Verdict("value", f"{where}: tpu {a!r} cpu {e!r}")
    return None


def classify(call: Call, cpu: Outcome, tpu: Outcome, reference: Callable[[], Outcome] | None = None) -> Verdict:
    if isinstance(tpu.error, CallTimeout):
        return Verdict("timeout", str(tpu.error))
    if cpu.error is not None and tpu.error is not None:
        if type(cpu.error).__name__ == _class_name(tpu.error):
            return Verdict("both_raise")
        return Verdict("error_class", f"cpu {type(cpu.error).__name__}: {_first_line(cpu.error)} | tpu "
                                      f"{type(tpu.error).__name__}: {_first_line(tpu.error)}")
    if cpu.error is not None and _cpu_lacks_kernel(cpu.error):
        return Verdict("cpu_unsupported", f"cpu {type(cpu.error).__name__}: {_first_line(cpu.error)}")
    if cpu.error is not None:
        return Verdict("cpu_raises", f"cpu {type(cpu.error).__name__}: {_first_line(cpu.error)}")
    if tpu.error is not None:
        return Verdict("tpu_raises", f"tpu {type(tpu.error).__name__}: {_first_line(tpu.error)}")
    assert cpu.leaves is not None and tpu.leaves is not None
    assert cpu.args_after is not None and tpu.args_after is not None
    expected = canonical(call, cpu.leaves + cpu.args_after, len(cpu.leaves))
    actual = canonical(call, tpu.leaves + tpu.args_after, len(tpu.leaves))
    if len(cpu.leaves) != len(tpu.leaves) or len(expected) != len(actual):
        return Verdict("type", f"tpu returned {len(tpu.leaves)} values, cpu {len(cpu.leaves)}")
    metadata_only = is_random(call.op) or undefined_values(call.op)
    ref_leaves: list[Any] | None = None
    for i, (a, e) in enumerate(zip(actual, expected)):
        where = f"output {i}" if i < len(cpu.leaves) else f"argument tensor {i - len(cpu.leaves)} after the call"
        verdict = _compare_leaf(a, e, None, metadata_only, where)
        if verdict is not None and verdict.cls in ("value", "nan_inf") and reference is not None:
            if ref_leaves is None:
                ref = reference()
                ref_leaves = ref.leaves + ref.args_after if ref.error is None else []
            r = ref_leaves[i] if i < len(ref_leaves) else None
            verdict = _compare_leaf(a, e, r, metadata_only, where)
        if verdict is not None and verdict.cls == "value" and _ties(call, actual, expected):
            verdict = None
        if verdict is not None:
            return verdict
    return Verdict("ok")


def _ties(call: Call, actual: list[Any], expected: list[Any]) -> bool:
    if call.op._schema.name.split("::")[1].rstrip("_") not in TIE_OPS:
        return False
    from torchtpu.conformance.equivalence import ties_only

    x = next((a for a in call.args if isinstance(a, TensorArg)), None)
    return x is not None and ties_only(x.materialize("cpu"), actual, expected)


def _cpu_lacks_kernel(e: BaseException) -> bool:
    """CPU has no kernel for this dtype or op ("not implemented for 'Short'"): tpu supporting more is no
    mismatch (CUDA too covers dtypes CPU does not)."""
    text = str(e)
    return isinstance(e, NotImplementedError) and ("not implemented for" in text or "Could not run" in text)


def _class_name(e: BaseException) -> str:
    """The class a tpu error stands for: a launch's ExecutionError is the builtin CPU raises (its `builtin`,
    IndexError for IndexExecutionError, ...) with the op's context added; any other error is its own class."""
    return e.builtin.__name__ if isinstance(e, ExecutionError) else type(e).__name__


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""


def too_large(outcome: Outcome) -> bool:
    leaves = (outcome.leaves or []) + (outcome.args_after or [])
    return sum(x.numel() for x in leaves if isinstance(x, torch.Tensor)) > MAX_NUMEL
