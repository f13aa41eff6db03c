"""The schema-driven fuzzer: random calls of every overload torchtpu registers, compared with CPU PyTorch.

`python -m torchtpu.fuzz --minutes N` for long runs; tests/test_fuzz.py runs a bounded, seeded budget and
fails on a mismatch that `known.py` does not list. docs/fuzz.md has the figures and the findings.
"""

from torchtpu.fuzz.runner import Finding, Report, fuzz_one, run

__all__ = ["Finding", "Report", "fuzz_one", "run"]
