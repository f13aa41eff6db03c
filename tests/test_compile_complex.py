"""Complex tensors under torch.compile(backend="tpu"): the complex<->real views lower into the graph, and a
graph that runs op by op still runs when a decomposition left a complex NaN/inf constant in it."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import torchtpu
from torchtpu.compile import backend as tpu_backend
from torchtpu.compile.literals import spell_complex_literals

NAN = float("nan")


def _same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(torch.view_as_real(actual.cpu()), torch.view_as_real(expected), rtol=0, atol=0,
                               equal_nan=True)


def test_complex_logaddexp_with_nan_compiles_into_one_program(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    a = torch.tensor([complex(NAN, 1.0), 1 + 2j, 0.5 - 1j], dtype=torch.complex64)
    b = torch.tensor([1 + 1j, complex(0, math.inf), 2 + 0.25j], dtype=torch.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback warns
        out = torch.compile(torch.logaddexp, backend="tpu")(a.to(tpu), b.to(tpu))
    _same(out, torch.logaddexp(a.to(tpu), b.to(tpu)).cpu())  # the sim's eager result, bit for bit
    torch.testing.assert_close(torch.view_as_real(out.cpu()), torch.view_as_real(torch.logaddexp(a, b)),
                               equal_nan=True)
    stats = torchtpu.stats()["compile"]
    assert stats["eager_graphs"] == 0 and stats["programs"] == 1


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_view_as_real_and_view_as_complex_in_a_graph(tpu, dtype):
    torch._dynamo.reset()
    torchtpu.reset_stats()

    def fn(z: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.view_as_real(z * 2) + 1, torch.view_as_complex(r * 3) * z

    z = torch.randn(3, 4, dtype=dtype)
    r = torch.randn(3, 4, 2, dtype=torch.float64 if dtype == torch.complex128 else torch.float32)
    out = torch.compile(fn, backend="tpu", fullgraph=True)(z.to(tpu), r.to(tpu))
    expected = [t.cpu() for t in fn(z.to(tpu), r.to(tpu))]  # the sim's eager results, bit for bit
    torch.testing.assert_close(out[0].cpu(), expected[0], rtol=0, atol=0)
    _same(out[1], expected[1])
    torch.testing.assert_close(out[1].cpu(), fn(z, r)[1])
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0


def _host_only(x: torch.Tensor) -> torch.Tensor:  # no lowering: the graph holding it runs op by op
    return x * 1


@pytest.mark.parametrize("constant", [complex(NAN, NAN), complex(1.0, math.inf), complex(-math.inf, NAN)])
def test_eager_fallback_graph_with_a_nonfinite_complex_constant(tpu, constant):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    fill = graph.call_function(torch.ops.aten.scalar_tensor.default, (constant,),
                               {"dtype": torch.complex64, "device": torch.device(tpu)})
    kept = graph.call_function(_host_only, (x,))
    nan = graph.call_function(torch.ops.aten.isnan.default, (x,))
    graph.output((graph.call_function(torch.ops.aten.where.self, (nan, fill, kept)),))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    host = torch.tensor([complex(NAN, 0.0), 1 + 2j], dtype=torch.complex64)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        (out,) = tpu_backend.CompiledGraph(gm, [host.to(tpu)])(host.to(tpu))
    _same(out, torch.where(host.isnan(), torch.tensor(constant, dtype=torch.complex64), host))


def test_spell_complex_literals_leaves_finite_constants():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.ops.aten.add.Tensor, (x, 1 + 2j)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    code = gm.code
    spell_complex_literals(gm)
    assert gm.code == code
