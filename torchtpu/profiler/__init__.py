"""torchtpu.profiler: where the time and memory go on the simulated chips.

* `record()`: a profiling window over every simulated chip (`trace.py`); torch.profiler with
  `ProfilerActivity.PrivateUse1` opens the same window (`torch_profiler.py`);
* memory history, snapshots and summaries for `torch.tpu` (`memory.py`);
* `explain(fn, *inputs)` (`explain.py`) and `advise(model, inputs, chip=...)` (`advise.py`), also
  `torchtpu.explain` / `torchtpu.advise`; re-simulation (`resim.py`), the HTML report (`report.py`) and the
  advisor's validation (`validate.py`).
"""

from __future__ import annotations

import types

from torchtpu.profiler.trace import Window, record

__all__ = ["Window", "install", "record"]


def install(device_module: types.ModuleType) -> None:
    """Registration's hook: memory API on torch.tpu, the OOM note, and torch.profiler's tpu device track."""
    from torchtpu.profiler import memory, torch_profiler

    memory.attach(device_module)
    torch_profiler.install()
