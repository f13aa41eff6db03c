"""The user's source line an op comes from ("file:line"): the first frame up the stack whose code is neither
torchtpu's nor torch's. Deferred regions record it per event so a failed flush names the line; the C++ recording
path (record_fast) and the long path (deferred) share this one walk and its caches."""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

PACKAGE_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__))
_PACKAGE_CODE: dict[Any, bool] = {}  # code object -> whether the walk skips its frames (ours, torch's)
_LINES: dict[tuple, str] = {}  # (code object, instruction offset) -> "file:line" (formatting it cost ~0.4 us an op)
_BOUND = 65536  # code objects of ever-new functions (exec, lambdas in a loop) keep both caches bounded


def user_line(depth: int = 1) -> str:
    """The line of the first user frame at or above `depth` frames up from this call (1: its caller); an
    autograd thread's frames may all be ours: "<unknown>"."""
    frame = sys._getframe(depth)
    package = _PACKAGE_CODE
    for _ in range(40):
        if frame is None:
            break
        code = frame.f_code
        ours = package.get(code)
        if ours is None:
            name = code.co_filename
            if len(package) > _BOUND:
                package.clear()
            ours = package[code] = name.startswith(PACKAGE_DIRS) or "<frozen" in name
        if not ours:
            key = (code, frame.f_lasti)  # the instruction: one line, without f_lineno's line-table walk (~0.3 us)
            line = _LINES.get(key)
            if line is None:
                if len(_LINES) > _BOUND:
                    _LINES.clear()
                line = _LINES[key] = f"{code.co_filename}:{frame.f_lineno}"
            return line
        frame = frame.f_back
    return "<unknown>"
