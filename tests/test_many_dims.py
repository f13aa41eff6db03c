"""Tensors of more than 64 dims on the simulator (whose programs are numpy arrays, at most 64 dims), computed as CPU
where no N-d view is needed (torchtpu/ops/many_dims.py: dims collapsed in order, never another element): factories,
fills, the random fills, copies of collapsible layouts, host copies, the reductions over every element CPU
computes, pointwise ops of contiguous same-shaped tensors; the reductions CPU refuses raise its class and words;
every eager mode and compiled. Ops needing an N-d view stay refused naming the limit
(tests/test_many_dims_refusal.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
ODD = [2] + [1] * 62 + [3, 1, 4]  # 66 dims, 24 elements


def _base(dev: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.arange(24, dtype=dtype).reshape(ODD).to(dev)


PERMUTED = [2] + [1] * 64 + [12]


def _permuted(dev: str) -> torch.Tensor:  # not contiguous, collapsible: (2, 12) with strides (1, 2) in memory
    return torch.arange(24.0).reshape([12] + [1] * 64 + [2]).to(dev).transpose(0, 65)


CALLS: dict[str, Callable[[str], torch.Tensor | tuple]] = {
    "zeros": lambda dev: torch.zeros(ODD, device=dev),
    "ones_int64": lambda dev: torch.ones(ODD, dtype=torch.int64, device=dev),
    "full": lambda dev: torch.full(ODD, -2.5, device=dev),
    "new_full": lambda dev: _base(dev).new_full(ODD, 7),
    "fill_permuted": lambda dev: _permuted(dev).fill_(3.0),
    "zero_": lambda dev: _base(dev).zero_(),
    "fill_tensor": lambda dev: _base(dev).fill_(torch.tensor(5.0, device=dev)),
    "to_and_back": lambda dev: _base(dev),
    "clone_permuted": lambda dev: _permuted(dev).clone(),
    "contiguous": lambda dev: _permuted(dev).contiguous(),
    "copy_expanded": lambda dev: torch.empty(ODD, device=dev).copy_(torch.arange(4.0, device=dev)),
    "copy_cast": lambda dev: torch.empty(PERMUTED, dtype=torch.int32, device=dev).copy_(_permuted(dev)),
    "sum": lambda dev: _base(dev).sum(),
    "sum_empty_dims": lambda dev: _base(dev).sum(dim=[]),
    "sum_float64": lambda dev: _base(dev).sum(dtype=torch.float64),
    "mean": lambda dev: _base(dev).mean(),
    "prod": lambda dev: (torch.arange(24.0) / 8 + 1).reshape(ODD).to(dev).prod(),
    "max": lambda dev: _permuted(dev).max(),
    "amin": lambda dev: _permuted(dev).amin(),
    "argmax_permuted": lambda dev: _permuted(dev).argmax(),
    "aminmax": lambda dev: torch.aminmax(_permuted(dev)),
    "count_nonzero": lambda dev: _base(dev).count_nonzero(),
    "var": lambda dev: _base(dev).var(),
    "std_mean": lambda dev: torch.std_mean(_base(dev)),
    "nansum": lambda dev: _base(dev).nansum(),
    "norm": lambda dev: _base(dev).norm(),
    "add_scalar": lambda dev: _base(dev) + 1,
    "mul_same_shape": lambda dev: _base(dev) * torch.full(ODD, 0.5, device=dev),
    "mul_inplace": lambda dev: _base(dev).mul_(torch.full(ODD, 3.0, device=dev)),
    "where": lambda dev: torch.where(_base(dev) > 5, _base(dev), torch.zeros(ODD, device=dev)),
    "int_mul_0d": lambda dev: torch.ones(ODD, dtype=torch.int64, device=dev) * torch.tensor(3, device=dev),
}


def _host(x: torch.Tensor | tuple) -> list[torch.Tensor]:
    return [t.cpu() for t in (x if isinstance(x, tuple) else (x,))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_computed_as_cpu(mode: str, name: str) -> None:
    """Three calls: the later ones through the one-op caches (nothing of the call of fewer dims stored under the
    call's own key)."""
    expected = _host(CALLS[name]("cpu"))
    for _ in range(3):
        with torch.tpu.eager_mode(mode):
            got = _host(CALLS[name]("tpu"))
        for g, e in zip(got, expected, strict=True):
            assert (g.shape, g.stride(), g.dtype) == (e.shape, e.stride(), e.dtype)
            torch.testing.assert_close(g.reshape(-1), e.reshape(-1), rtol=1e-6, atol=0)  # CPU's all(): 64 dims


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fill", ["rand", "randn", "uniform_", "normal_", "bernoulli_", "random_"])
def test_random_fills_draw_each_element_as_fewer_dims(mode: str, fill: str) -> None:
    """The draws by element index: the same values as the same fill of the 2-d (2, 12) tensor after the same seed."""
    def draw(shape: list[int]) -> torch.Tensor:
        torch.manual_seed(7)
        if fill in ("rand", "randn"):
            return getattr(torch, fill)(shape, device="tpu").cpu()
        return getattr(torch.empty(shape, device="tpu"), fill)().cpu()

    with torch.tpu.eager_mode(mode):
        many, few = draw(ODD), draw([2, 12])
    assert many.shape == torch.Size(ODD) and many.is_contiguous() and many._base is None
    assert torch.equal(many.reshape(2, 12), few)


REDUCTIONS_CPU_REFUSES: dict[str, Callable[[torch.Tensor], object]] = {
    "sum_dim0": lambda t: t.sum(dim=0),
    "mean_last": lambda t: t.mean(dim=-1),
    "argmax_dim": lambda t: t.argmax(dim=0),
    "amax_dim": lambda t: t.amax(dim=(0, 65)),
    "std_dim": lambda t: t.std(dim=0),
    "logsumexp": lambda t: t.logsumexp(dim=0),
    "all": lambda t: t.all(),
    "sum_dim_none": lambda t: t.sum(dim=None),
    "max_dim": lambda t: t.max(dim=0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS_CPU_REFUSES))
def test_reductions_cpu_refuses_raise_its_class_and_words(mode: str, name: str) -> None:
    with pytest.raises(RuntimeError) as cpu:
        REDUCTIONS_CPU_REFUSES[name](_base("cpu"))
    t = _base("tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(type(cpu.value)) as tpu:
        REDUCTIONS_CPU_REFUSES[name](t)
    assert str(tpu.value) == str(cpu.value)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_refused_naming_the_limit_and_op(mode: str) -> None:
    assert (_base("cpu") + torch.ones(4)).dim() == 66  # CPU computes it
    t, other = _base("tpu"), torch.ones(4, device="tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(NotImplementedError,
                                                   match=r"only tensors with up to 64 dims .*\(aten::add.Tensor\)"):
        (t + other).cpu()


COMPILED: dict[str, Callable[[str], torch.Tensor]] = {
    "zeros": lambda dev: torch.zeros(ODD, device=dev),
    "full_int": lambda dev: torch.full(ODD, 3, device=dev),
    "fill_": lambda dev: torch.empty(ODD, device=dev).fill_(1.5),
    "copy_": lambda dev: torch.empty(ODD, dtype=torch.int64, device=dev).copy_(torch.arange(4.0, device=dev)),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_graph_past_the_limit_runs_op_by_op_as_cpu(name: str) -> None:
    """A graph holding such a tensor runs eagerly on tpu (compile/rank_limit.py): the same values as CPU. (A
    reduction of one fails in Dynamo's own fake-tensor pass, for every backend and CPU alike.)"""
    expected = COMPILED[name]("cpu")
    torch._dynamo.reset()
    got = torch.compile(lambda: COMPILED[name]("tpu"), backend="tpu")().cpu()
    assert (got.shape, got.stride(), got.dtype) == (expected.shape, expected.stride(), expected.dtype)
    assert torch.equal(got.reshape(-1), expected.reshape(-1))
