"""Golden StableHLO text for representative Programs: the printed modules are stable, parse, and compile.

Regenerate after an intended emitter change with `TORCHTPU_UPDATE_GOLDEN=1 pytest tests/pjrt/test_golden.py`
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from pjrt_run import run
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.pjrt.emit import emit_module

GOLDEN = Path(__file__).parent / "golden"


def axpy() -> Program:
    """A deferred region's shape: flat storages in, a scalar input, one storage written in place."""
    b = Builder()
    a, x, s = b.input((6,), "float32"), b.input((6,), "float32"), b.input((), "float32")
    (sb,) = b.emit("broadcast_in_dim", [s], shape=(6,), broadcast_dimensions=())
    (y,) = b.emit("add", [a, b.emit("multiply", [x, sb])[0]])
    return b.finish([y], name="axpy")


def linear_relu(precision: str = "HIGHEST") -> Program:
    b = Builder()
    x, w, bias = b.input((4, 8), "float32"), b.input((3, 8), "float32"), b.input((3,), "float32")
    (h,) = b.emit("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(1,),
                  precision=precision, out_dtype="float32")
    (bb,) = b.emit("broadcast_in_dim", [bias], shape=(4, 3), broadcast_dimensions=(1,))
    (h,) = b.emit("add", [h, bb])
    (zero,) = b.emit("constant", [], value=0.0, shape=(4, 3), dtype="float32")
    (y,) = b.emit("maximum", [h, zero])
    return b.finish([y], name="linear_relu")


def softmax_bf16() -> Program:
    b = Builder()
    x = b.input((2, 5), "bfloat16")
    (m,) = b.emit("reduce", [x], kind="max", dimensions=(1,))
    (mb,) = b.emit("broadcast_in_dim", [m], shape=(2, 5), broadcast_dimensions=(0,))
    (e,) = b.emit("exponential", [b.emit("subtract", [x, mb])[0]])
    (s,) = b.emit("reduce", [e], kind="sum", dimensions=(1,))
    (sb,) = b.emit("broadcast_in_dim", [s], shape=(2, 5), broadcast_dimensions=(0,))
    (y,) = b.emit("divide", [e, sb])
    return b.finish([y], name="softmax")


def topk_gather() -> Program:
    b = Builder()
    x, idx = b.input((3, 4), "float32"), b.input((3, 2), "int64")
    values, order = b.emit("sort", [x], dimension=1, descending=True, stable=True)
    (arg,) = b.emit("argreduce", [x], kind="max", dimension=1)
    (g,) = b.emit("gather_axis", [x, idx], dimension=1)
    (s,) = b.emit("scatter_axis", [x, idx, g], dimension=1, reduce="add")
    return b.finish([values, order, arg, s], name="topk_gather")


def conv_tpu() -> Program:
    b = Builder()
    x, w = b.input((1, 2, 5, 5), "float32"), b.input((3, 2, 3, 3), "float32")
    (y,) = b.emit("convolution", [x, w], window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1),
                  rhs_dilation=(1, 1), feature_group_count=1, precision="HIGH", out_dtype="float32")
    return b.finish([y], name="conv")


def qr() -> Program:
    """QR as its IR lowering (Householder steps in a while_array loop): plain StableHLO a TPU compiles, no LAPACK
    custom call."""
    b = Builder()
    x = b.input((4, 3), "float32")
    q, r = b.emit("qr", [x], full_matrices=False)
    return b.finish([q, r], name="qr")


def checked_index_select() -> Program:
    b = Builder()
    x, idx = b.input((4, 3), "float32"), b.input((2,), "int32")
    (y,) = b.emit("index_select", [x, idx], dimension=0)
    return b.finish([y], name="checked_index_select")


PROGRAMS = {  # name: (program, platform, donation, device-side checks)
    "axpy": (axpy, "cpu", {0: 0}),
    "checked_index_select": (checked_index_select, "cpu", None, True),
    "conv_tpu": (conv_tpu, "tpu", None),
    "qr_householder_tpu": (qr, "tpu", None),
    "linear_relu": (linear_relu, "cpu", None),
    "linear_relu_tpu": (lambda: linear_relu("HIGH"), "tpu", None),
    "softmax_bf16": (softmax_bf16, "cpu", None),
    "topk_gather": (topk_gather, "cpu", None),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_golden_text(name, pjrt):
    make, platform, donate, *checks = PROGRAMS[name]
    text = emit_module(make(), platform=platform, donate=donate, checks=bool(checks))
    path = GOLDEN / f"{name}.mlir"
    if os.environ.get("TORCHTPU_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{path} changed: rerun with TORCHTPU_UPDATE_GOLDEN=1 and review the diff"
    pjrt.client.compile(text)  # parses and compiles (the CPU client accepts the TPU dot algorithm too)


def test_golden_programs_run_like_the_sim(pjrt, sim):
    rng = np.random.default_rng(0)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (3, 8), (3,)))
    np.testing.assert_allclose(run(pjrt, linear_relu(), [x, w, bias])[0], run(sim, linear_relu(), [x, w, bias])[0],
                               rtol=1e-5, atol=1e-5)
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    idx = np.array([[0, 3], [1, 1], [-1, 2]], np.int64)
    for got, want in zip(run(pjrt, topk_gather(), [xs, idx]), run(sim, topk_gather(), [xs, idx])):
        np.testing.assert_allclose(got, want, rtol=1e-6)
