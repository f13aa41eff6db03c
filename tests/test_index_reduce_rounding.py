"""index_reduce's prod and mean of float16/bfloat16 round every step to the dtype, in index order, as CPU's
index_reduce_func_impl does (tpu combined in float32 and rounded once, as scatter_reduce: PyTorch's test_torch
test_index_reduce_reduce_{mean,prod}_{float16,bfloat16} failed by an ulp). scatter_reduce keeps CPU's float32
combine; both are checked bit for bit against CPU in every eager mode and compiled."""

import pytest
import torch
from refusal_cases import MODES, results_in_every_mode

HALF = [torch.float16, torch.bfloat16]


def _inputs(dtype: torch.dtype, dim: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    size = [3, 4, 5]
    self = (torch.randn(size, generator=g) * 3).to(dtype)
    size[dim] = 23  # many sources per target row: several roundings meet at each element
    source = (torch.randn(size, generator=g) * 2).to(dtype)
    index = torch.randint(0, 3, (23,), generator=g)
    return self, index, source


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("reduce", ["prod", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_reduce_rounds_each_step_as_cpu(tpu, dtype, reduce, include_self, dim):
    self, index, source = _inputs(dtype, dim, seed=dim + 7 * include_self)

    def fn(s: torch.Tensor, i: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return s.index_reduce(dim, i, src, reduce, include_self=include_self)

    cpu = fn(self, index, source)
    once = fn(self.float(), index, source.float()).to(dtype)
    assert not torch.equal(cpu, once), "the inputs must tell rounding each step from rounding once"
    for where, got in results_in_every_mode(fn, self, index, source).items():
        assert torch.equal(got, cpu), (where, got, cpu)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("mode", MODES)
def test_index_reduce_in_place_of_a_vector_as_cpu(tpu, dtype, mode):
    g = torch.Generator().manual_seed(3)
    source = (torch.rand(40, generator=g) + 0.55).to(dtype)
    vec, index = (torch.randn(4, generator=g) * 3).to(dtype), torch.randint(0, 4, (40,), generator=g)
    want = [vec.clone().index_reduce_(0, index, source, reduce, include_self=False) for reduce in ("prod", "mean")]
    with torch.tpu.eager_mode(mode):
        got = [vec.to("tpu").index_reduce_(0, index.to("tpu"), source.to("tpu"), reduce, include_self=False)
               for reduce in ("prod", "mean")]
        got = [t.cpu() for t in got]
    for g_, w in zip(got, want, strict=True):
        torch.testing.assert_close(g_, w, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("reduce", ["prod", "sum", "mean"])
def test_scatter_reduce_keeps_cpus_float32_combine(tpu, dtype, reduce):
    self, index, source = _inputs(dtype, 0, seed=11)
    full = index.remainder(3)[:, None, None].expand(source.shape)

    def fn(s: torch.Tensor, i: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return s.scatter_reduce(0, i, src, reduce)

    cpu = fn(self, full, source)
    for where, got in results_in_every_mode(fn, self, full, source).items():
        assert torch.equal(got, cpu), (where, got, cpu)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [1, -1, 0])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_of_a_0_dim_self_takes_cpus_index_rule(tpu, mode, value, include_self):
    """A 0-dim self is the 1-element vector ATen walks: only index 0 is valid (-1 too raises IndexError, where the
    scatter_reduce path it took raised a RuntimeError naming scatter_reduce, and allowed -1)."""
    def case(d: str) -> torch.Tensor:
        return torch.tensor(2.5, device=d).index_reduce(0, torch.tensor(value, device=d), torch.tensor(3.0, device=d),
                                                        "prod", include_self=include_self)

    if value == 0:
        with torch.tpu.eager_mode(mode):
            got = case("tpu").cpu()
        assert torch.equal(got, case("cpu"))
        return
    with pytest.raises(IndexError):
        case("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(IndexError, match="index out of range in self"):
        case("tpu")
        torch.tpu.synchronize()
