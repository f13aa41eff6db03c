"""Host-side events for traces and reports: owns the event log (compiles, recompiles with Dynamo's reason,
flushes of deferred regions with what flushed them, CPU fallbacks) and the executable -> source-op table.

Hooks in the execution code are one line each and cost one module-attribute test when nothing records
(`if events.ACTIVE: ...`). Times are `time.perf_counter_ns()`, the clock torch.profiler's events use.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

ACTIVE = False  # read by the hooks; True while at least one recorder is open
_depth = 0
_lock = threading.Lock()
_log: list[HostEvent] = []

# id(program) -> (program, source): the framework ops a compiled executable came from. The program is held so
# its id cannot be reused while the entry lives; bounded, oldest dropped.
_SOURCES: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
MAX_SOURCES = 20_000

_STDLIB = sysconfig.get_paths()["stdlib"]
_TORCH_MARKERS = (os.sep + "torch" + os.sep, os.sep + "torchtpu" + os.sep, "<frozen", os.sep + "contextlib.py")
# torchtpu's own folders (in a source checkout torchtpu.drivers / .sim / .perfmodel live beside torchtpu/)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN = tuple(os.path.join(os.path.dirname(_PACKAGE), d) + os.sep for d in ("drivers", "sim", "perfmodel")) + \
    (_PACKAGE + os.sep,)


@dataclass
class HostEvent:
    """One host-side happening: kind is compile | recompile | flush | fallback | graph_break."""

    kind: str
    name: str
    start_ns: int
    end_ns: int
    reason: str = ""
    where: str = ""  # the user's source line (file:line)
    args: dict[str, Any] = field(default_factory=dict)


def start() -> None:
    """Opens one recorder (nested recorders share the log)."""
    global ACTIVE, _depth
    with _lock:
        if _depth == 0:
            _log.clear()
            _install_dynamo_callbacks()
            from torchtpu.execution import one_op_streak

            one_op_streak.reset()  # every op is recorded (and its flush logged) while a profiler records
        _depth += 1
        ACTIVE = True


def stop() -> list[HostEvent]:
    """Closes one recorder; returns a copy of the log so far."""
    global ACTIVE, _depth
    with _lock:
        if _depth == 0:
            raise RuntimeError("torchtpu.profiler.events.stop() without a matching start()")
        _depth -= 1
        ACTIVE = _depth > 0
        return list(_log)


def log() -> list[HostEvent]:
    return list(_log)


def note(kind: str, name: str, reason: str = "", start_ns: int | None = None, end_ns: int | None = None,
         where: str | None = None, **args: Any) -> HostEvent:
    now = time.perf_counter_ns()
    event = HostEvent(kind, name, now if start_ns is None else start_ns, now if end_ns is None else end_ns,
                      reason, user_line() if where is None else where, args)
    with _lock:
        _log.append(event)
    return event


_USER_CODE: dict[Any, bool] = {}  # code object -> whether its file is the user's (outside torch, torchtpu, stdlib)


def _is_user(code: Any) -> bool:
    known = _USER_CODE.get(code)
    if known is None:
        filename = code.co_filename
        known = not any(m in filename for m in _TORCH_MARKERS) and not filename.startswith(_OWN) \
            and not _stdlib(filename)
        if len(_USER_CODE) > 65536:
            _USER_CODE.clear()
        _USER_CODE[code] = known
    return known


def user_frames(limit: int = 16) -> list[tuple[str, int, str]]:
    """The Python stack outside torch, torchtpu and the standard library, innermost first: (file, line, name)."""
    frames: list[tuple[str, int, str]] = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        if _is_user(code):
            frames.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return frames


def _stdlib(filename: str) -> bool:
    return filename.startswith(_STDLIB) and "site-packages" not in filename


def user_line() -> str:
    """The innermost user frame as "file:line" ("" when there is none); one dict lookup per frame walked."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        known = _USER_CODE.get(code)
        if known or (known is None and _is_user(code)):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


# ----------------------------------------------------------------- executable sources
def name_program(program: Any, source: Any) -> None:
    """Notes what `program` (a compiled executable's Program) was made from: a list of op names, a list of
    (op, user line) pairs, or an FX GraphModule (read lazily)."""
    with _lock:
        _SOURCES[id(program)] = (program, source)
        _SOURCES.move_to_end(id(program))
        while len(_SOURCES) > MAX_SOURCES:
            _SOURCES.popitem(last=False)


def source_ops(program: Any) -> list[tuple[str, str]]:
    """(ATen op, user line) pairs of a launched Program; an eager op's program is named after its op."""
    if program is None:
        return []
    entry = _SOURCES.get(id(program))
    if entry is None or entry[0] is not program:
        return [(str(getattr(program, "name", "?")), "")]
    source = entry[1]
    if hasattr(source, "graph"):  # an FX GraphModule: its call nodes and their user stack
        ops = []
        for node in source.graph.nodes:
            if node.op == "call_function":
                ops.append((str(node.target), _stack_line(node.meta.get("stack_trace"))))
        return ops
    return [(s, "") if isinstance(s, str) else (str(s[0]), str(s[1])) for s in source]


def _stack_line(stack: str | None) -> str:
    if not stack:
        return ""
    last = ""
    for line in stack.splitlines():
        line = line.strip()
        if line.startswith("File "):
            parts = line.split('"')
            if len(parts) >= 3:
                number = parts[2].split(",")[1].strip().replace("line ", "") if "," in parts[2] else ""
                last = f"{parts[1]}:{number}"
    return last


# ----------------------------------------------------------------- hooks (called only while ACTIVE)
_FLUSH_CALLERS = {
    "synchronize": "torch.tpu.synchronize()", "local_scalar_dense": "a value was read (.item())",
    "copy_to_host": "a copy to the host (.cpu() / .numpy() / printing)", "_copy_from": "a device/host copy",
    "record": "the region reached TORCHTPU_MAX_REGION_OPS or changed device",
    "set_eager_mode": "an eager-mode change", "_launch": "a compiled graph outside DEFER_AND_FUSE",
}


def on_flush(region: Any, exe: Any) -> None:
    """deferred.flush: one flush event with the reason (which caller asked for the values) and the region's ops."""
    reason = ""
    frame = sys._getframe(2)
    depth = 0
    while frame is not None and depth < 12:
        name = frame.f_code.co_name
        if name in _FLUSH_CALLERS and "torchtpu" in frame.f_code.co_filename:
            reason = _FLUSH_CALLERS[name]
            break
        if "torchtpu" not in frame.f_code.co_filename:
            reason = f"{name}() needed a value"
            break
        frame, depth = frame.f_back, depth + 1
    ops = [e.origin for e in region.events]
    name_program(exe.program, ops)
    note("flush", "flush deferred region", reason or "flush", ops=len(ops), program=exe.program.name)


def on_fallback(op_name: str) -> None:
    note("fallback", f"CPU fallback {op_name}", f"no lowering for {op_name}")


_dynamo_installed = False
_compile_starts: dict[Any, int] = {}
_known_failures: dict[Any, int] = {}


def _install_dynamo_callbacks() -> None:
    """Dynamo's public compile callbacks: one compile event per frame compile; a compile that follows a guard
    failure is a recompile, with Dynamo's reason and the function's source line."""
    global _dynamo_installed
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:  # pragma: no cover - older torch
        return
    # torch._dynamo.reset() clears the handler's lists, so registration is checked every time
    if _on_compile_start not in callback_handler.start_callbacks:
        callback_handler.register_start_callback(_on_compile_start)
    if _on_compile_end not in callback_handler.end_callbacks:
        callback_handler.register_end_callback(_on_compile_end)
    _dynamo_installed = True
    _snapshot_failures()


def _failures() -> dict[Any, list]:
    from torch._dynamo.utils import guard_failures

    return guard_failures


def _snapshot_failures() -> None:
    _known_failures.clear()
    _known_failures.update({code: len(r) for code, r in _failures().items()})


def _on_compile_start(args: Any = None) -> None:
    if ACTIVE:
        _compile_starts[threading.get_ident()] = time.perf_counter_ns()


def _on_compile_end(args: Any = None) -> None:
    if not ACTIVE:
        return
    begin = _compile_starts.pop(threading.get_ident(), time.perf_counter_ns())
    compile_id = str(getattr(args, "compile_id", "") or "")
    new = []
    for code, reasons in _failures().items():
        seen = _known_failures.get(code, 0)
        for r in reasons[seen:]:
            new.append((code, str(r)))
        _known_failures[code] = len(reasons)
    where = user_line()
    note("compile", f"dynamo compile {compile_id}".strip(), "", start_ns=begin, where=where)
    for code, reason in new:
        line = f"{code.co_filename}:{code.co_firstlineno}"
        note("recompile", f"recompile {code.co_name}", reason, start_ns=begin, where=line, function=code.co_name,
             call_site=where)
