"""Runs conformance tasks in worker processes, so that a crash (a segfault in native code) costs one entry, not
the sweep: a worker streams one JSON line per started and finished task; when it dies, the task it had started
is recorded as a failure and a new worker resumes after it. `--jobs N` runs N workers side by side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchtpu.conformance.harness import Result

Task = tuple[int, str]  # (index in op_db, dtype name)


def _worker_cmd(task_file: str, options: dict[str, Any]) -> list[str]:
    return [sys.executable, "-m", "torchtpu.conformance.workers", task_file, json.dumps(options)]


def run_isolated(tasks: Sequence[Task], names: dict[int, str], options: dict[str, Any], jobs: int = 1,
                 progress: bool = True, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    from tqdm import tqdm

    results: dict[Task, Result] = {}
    lock = threading.Lock()
    bar = tqdm(total=len(tasks), disable=not progress, unit="entry", dynamic_ncols=True)

    def drive(todo: list[Task]) -> None:
        while todo:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(todo, f)
                task_file = f.name
            started: Task | None = None
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            proc = subprocess.Popen(_worker_cmd(task_file, options), stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, env=env)
            assert proc.stdout is not None
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                msg = json.loads(line)
                if "start" in msg:
                    started = tuple(msg["start"])
                    with lock:
                        bar.set_description(f"{names[started[0]][:28]:28s} {started[1]:8s}")
                    continue
                r = Result(**msg["result"])
                task = tuple(msg["task"])
                with lock:
                    results[task] = r
                    bar.update(1)
                    if on_result is not None:
                        on_result(r)
                started = None
            code = proc.wait()
            os.unlink(task_file)
            done = {t for t in todo if t in results}
            if started is not None and started not in results:
                with lock:
                    results[started] = Result(names[started[0]], started[1], "fail",
                                              f"the process crashed (exit code {code}) while running this entry")
                    bar.update(1)
                done.add(started)
            elif code != 0 and not [t for t in todo if t not in done]:
                break
            remaining = [t for t in todo if t not in done]
            if remaining == todo:  # died before starting anything: do not loop forever
                for t in todo:
                    results[t] = Result(names[t[0]], t[1], "fail", f"worker failed to start (exit code {code})")
                break
            todo = remaining

    shares = [list(tasks[i::jobs]) for i in range(max(jobs, 1))]
    threads = [threading.Thread(target=drive, args=(share,)) for share in shares if share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    return [results[t] for t in tasks if t in results]


def _main(task_file: str, options_json: str) -> None:
    import torch  # noqa: F401  (autoloads torchtpu)

    from torchtpu.conformance import harness

    options = json.loads(options_json)
    todo = [tuple(t) for t in json.loads(Path(task_file).read_text())]
    ops = harness.load_op_db()
    for index, dtype_name in todo:
        print(json.dumps({"start": [index, dtype_name]}), flush=True)
        r = harness.run_entry(ops[index], dtype_name, max_samples=options.get("max_samples"),
                              timeout=options.get("timeout", 300.0), check_grad=options.get("check_grad", True))
        print(json.dumps({"task": [index, dtype_name], "result": r.to_json()}), flush=True)
        harness._clear_caches()


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
