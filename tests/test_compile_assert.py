"""`aten._assert_scalar` in compiled graphs (what `torch._check` on dynamic sizes leaves in the ATen graph, as
torchrec's DLRM does): checked against the call's sizes, its message raised when false, and the graph still
compiled (it used to run op by op with a warning)."""

from __future__ import annotations

import operator
import warnings

import pytest
import torch

import torchtpu
from torchtpu.compile import backend


def _graph() -> torch.fx.GraphModule:
    """x -> x + x, asserting that x has 4 rows (a hand-built graph: Dynamo would guard on the size instead)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    rows = graph.call_function(torch.ops.aten.sym_size.int, (x, 0))
    ok = graph.call_function(operator.eq, (rows, 4))
    graph.call_function(torch.ops.aten._assert_scalar.default, (ok, "x must have 4 rows"))
    graph.output((graph.call_function(torch.ops.aten.add.Tensor, (x, x)),))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_assertion_checked_per_call_and_its_message_raised():
    x = torch.arange(8.0).reshape(4, 2).to("tpu")
    compiled = backend.CompiledGraph(_graph(), [x])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "runs eagerly" fallback
        (out,) = compiled(x)
        assert torch.equal(out.cpu(), (x + x).cpu())
        with pytest.raises(RuntimeError, match="x must have 4 rows"):
            compiled(torch.ones(3, 2).to("tpu"))
        (again,) = compiled(x)  # a failed call leaves the graph compiled
    assert compiled.eager_reason is None and torch.equal(again.cpu(), out.cpu())


def test_torch_check_on_dynamic_sizes_compiles():
    def f(x, y):
        torch._check(x.shape[0] * 2 == y.shape[0], lambda: "sizes disagree")
        return torch.cat([x, x]) * 2 + y

    torch._dynamo.reset()
    backend.reset_compile_stats()
    fn = torch.compile(f, backend="tpu", dynamic=True)
    for n in (3, 5):
        x, y = torch.randn(n), torch.randn(2 * n)
        out = fn(x.to("tpu"), y.to("tpu"))
        assert torch.equal(out.cpu(), f(x.to("tpu"), y.to("tpu")).cpu())
    assert backend.compile_stats()["eager_graphs"] == 0


def test_assertion_on_a_tensor_value_runs_the_graph_eagerly():
    with pytest.raises(backend.UnsupportedNode, match="_assert_scalar on a tensor's value"):
        backend._assert_scalar(backend.Sym(None), "never")


def test_torchrec_dlrm_compiles_without_eager_graphs():
    pytest.importorskip("torchrec")
    import copy

    from test_torchrec import _dlrm, _dlrm_steps

    torch._dynamo.reset()
    backend.reset_compile_stats()
    model = _dlrm()
    eager, compiled = copy.deepcopy(model).to("tpu"), copy.deepcopy(model).to("tpu")
    with warnings.catch_warnings(), torchtpu.precision("HIGHEST"):
        warnings.simplefilter("error", RuntimeWarning)  # a graph run eagerly warns
        got = _dlrm_steps(torch.compile(compiled, backend="tpu"), "tpu")
        want = _dlrm_steps(eager, "tpu")
    assert got == want and backend.compile_stats()["eager_graphs"] == 0
