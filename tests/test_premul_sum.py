"""`ReduceOp.PREMUL_SUM` on "tpu_dist" (FSDP2's gradient reduce-scatter with a divide factor): 2 ranks, one
simulated chip each, gloo on 127.0.0.1, against a cpu gloo group that premultiplies by hand (tests/premul_workers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_distributed import _run


def test_premul_sum_matches_gloo_on_cpu_premultiplied_bit_for_bit(tmp_path: Path) -> None:
    codes, results = _run("premul_workers:premul", tmp_path)
    assert codes == [0, 0]
    for rank, res in enumerate(results):
        compared = {k: v for k, v in res.items() if isinstance(v, tuple) and len(v) == 2
                    and isinstance(v[0], torch.Tensor)}
        assert len(compared) == 3 * 3 + 3  # per float dtype: all_reduce, reduce_scatter_tensor, its input; then 3
        for name, (got, expected) in compared.items():
            assert got.dtype == expected.dtype and got.shape == expected.shape, f"rank {rank} {name}"
            assert torch.equal(got, expected), f"rank {rank} {name}:\n{got}\n!=\n{expected}"
        assert res["reduce"][0].numel() == (6 if rank == 0 else 0)
        op, seconds, sum_seconds, scale_seconds, values = res["clock"]
        assert op == "all_reduce" and seconds == pytest.approx(sum_seconds + scale_seconds)
        assert scale_seconds > 0 and values == [1.0, 1.0]  # 0.5 + 0.5
        kind, msg, took = res["integer"]
        assert kind == "ValueError" and "floating tensors" in msg and "torch.int64" in msg and took < 5
        kind, msg, took = res["factor dtype"]
        assert kind == "ValueError" and "torch.float64" in msg and "inputs' dtype" in msg and took < 5
        kind, msg, took = res["factor shape"]  # torch refuses it when making the op, before tpu_dist sees it
        assert kind == "RuntimeError" and "tensor_factor.numel() == 1" in msg and took < 5
        assert res["after"] == [3.0, 3.0]
