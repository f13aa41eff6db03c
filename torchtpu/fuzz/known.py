"""Known fuzzer mismatches, each with its reason, kept in known.json: groups {class, reason, ops[, mode]}.
A finding listed there is reported but does not fail tests/test_fuzz.py; one that is not is a new finding.
`ops` are fnmatch patterns on the overload's name as `str(op)` prints it (aten.add.Tensor), `class` an outcome
class (outcome.py); an optional `mode` limits the group to one mode. `categorize` names the usual causes;
`python -m torchtpu.fuzz --update-known` adds new findings with the cause it names (review them)."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("known.json")
_cache: list[dict[str, Any]] | None = None


def entries() -> list[dict[str, Any]]:
    global _cache
    if _cache is None:
        _cache = json.loads(PATH.read_text()) if PATH.exists() else []
    return _cache


def reason(op: str, cls: str, mode: str) -> str | None:
    for group in entries():
        if group["class"] == cls and group.get("mode", mode) == mode and any(
                fnmatch.fnmatchcase(op, p) for p in group["ops"]):
            return group["reason"]
    return None


# (class, regex on the finding's message) -> cause; first match wins.
CAUSES: list[tuple[str, str, str]] = [
    ("error_class", r"tpu (ValueError|TypeError|IndexError|KeyError|AssertionError|ExecutionError)",
     "invalid input on both sides, but tpu fails in its lowering or IR shape rule instead of making the op's own "
     "check (message parity)"),
    ("error_class", r"cpu IndexError.*tpu RuntimeError|cpu RuntimeError.*tpu IndexError",
     "both check the input; the exception classes differ (IndexError vs RuntimeError)"),
    ("error_class", r"cpu NotImplementedError", "CPU has no kernel for the dtype; tpu rejects the input otherwise"),
    ("error_class", r"TorchRuntimeError|BackendCompilerFailed|Unsupported",
     "under torch.compile the error surfaces as a dynamo error"),
    ("error_class", r".", "both raise, different exception classes"),
    ("cpu_raises", r"dtype|Found dtype|expected scalar type|result type|can't be cast|not supported for|"
                   r"must be (floating|bool|integer)|Expected.*dtype|only supports|Only supports|type .* not",
     "a dtype check CPU makes and tpu skips (tpu computes with a promoted or cast dtype)"),
    ("cpu_raises", r"out of range|out of bounds|index",
     "an index/range check CPU makes and tpu skips (issue 17 item 2)"),
    ("cpu_raises", r"size|shape|dimension|dim|numel|match|broadcast|same number",
     "a shape check CPU makes and tpu skips"),
    ("cpu_raises", r".", "a value check CPU makes and tpu skips"),
    ("tpu_raises", r"KeyError: torch\.", "dtype table: a dtype tpu cannot represent raises a bare KeyError"),
    ("tpu_raises", r"OverflowError", "a Python scalar out of the tensor dtype's range raises inside the lowering"),
    ("tpu_raises", r"takes \d+ positional argument", "an out= overload calls its lowering with the wrong arguments"),
    ("tpu_raises", r".", "tpu raises where CPU accepts the input"),
    ("nan_inf", r".", "NaN/inf handling differs from CPU"),
    ("value", r".", "wrong values"),
    ("dtype", r".", "result dtype differs from CPU"),
    ("shape", r".", "result shape differs from CPU"),
    ("device", r".", "result on the wrong device"),
    ("type", r".", "result of another Python type or count"),
    ("timeout", r".", "the call ran past the fuzzer's per-call limit"),
]


def categorize(cls: str, message: str) -> str:
    for kind, pattern, cause in CAUSES:
        if kind == cls and re.search(pattern, message):
            return cause
    return "unreviewed"


def add(findings: list[Any]) -> int:
    """Lists each of `findings` not yet listed (for any mode) in the group of the cause `categorize` names;
    returns how many ops were added."""
    groups = entries()
    added = 0
    for f in sorted(findings, key=lambda f: (f.op, f.cls)):
        if reason(f.op, f.cls, f.mode) is not None:
            continue
        cause = categorize(f.cls, f.message)
        group = next((g for g in groups if g["class"] == f.cls and g["reason"] == cause and "mode" not in g), None)
        if group is None:
            group = {"class": f.cls, "reason": cause, "ops": []}
            groups.append(group)
        group["ops"].append(f.op)
        added += 1
    write(groups)
    return added


def write(groups: list[dict[str, Any]]) -> None:
    """known.json with each group's ops wrapped a few to a line (the file stays short and diffable)."""
    out = ["["]
    for i, g in enumerate(sorted(groups, key=lambda g: (g["class"], g["reason"]))):
        head = {k: v for k, v in g.items() if k != "ops"}
        out.append(" " + json.dumps(head)[:-1] + ', "ops": [')
        ops = sorted(set(g["ops"]))
        line = "  "
        for j, op in enumerate(ops):
            item = json.dumps(op) + ("," if j < len(ops) - 1 else "")
            if len(line) + len(item) > 116:
                out.append(line.rstrip())
                line = "  "
            line += item + " "
        out.append(line.rstrip())
        out.append(" ]}" + ("," if i < len(groups) - 1 else ""))
    out.append("]")
    PATH.write_text("\n".join(out) + "\n")
