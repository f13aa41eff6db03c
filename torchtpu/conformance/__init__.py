"""OpInfo conformance: PyTorch's own `op_db` samples run on CPU and on "tpu", compared, per entry and dtype.

`python -m torchtpu.conformance` runs every entry of `torch.testing._internal.common_methods_invocations.op_db`
(variants included) for float32, bfloat16, int64 and bool where the op supports the dtype on CPU, and classifies
each (entry, dtype) as

- native:   every sample matched CPU (outputs and, for differentiable ops, gradients) with zero CPU fallback;
- fallback: every sample matched, but some ATen op ran through the counted CPU fallback;
- fail:     a sample mismatched or raised on tpu (the first error is recorded);
- skip:     explicitly skipped, with the reason (`skips.py`); nothing is skipped silently.

It writes a JSON summary and the markdown table `docs/op-coverage.md`. The test suite runs a bounded sample.
"""

from __future__ import annotations

from torchtpu.conformance.harness import DTYPES, Result, entry_name, load_op_db, run_entry, run_many

__all__ = ["DTYPES", "Result", "entry_name", "load_op_db", "run_entry", "run_many"]
