"""The C++ launch cache's wider reach: generic floats keyed by class (their values fill the scalar inputs),
factories keyed by their device argument, out= variants, device-to-device copies and optional-tensor index
lists. Each case checks that repeated calls are served from the cache and that every served call equals CPU
PyTorch (so a stale value or a wrong output buffer shows)."""

from __future__ import annotations

import pytest
import torch

from torchtpu.execution import fast_launch

pytestmark = [pytest.mark.sim_only("the cache serves drivers whose memory is host memory (the sim)"),
              pytest.mark.usefixtures("launch_cache_live")]


def _counts() -> tuple[int, int]:
    c = fast_launch.counters()
    return c["hits"], c["misses"]


def _served(fn, calls: int = 4) -> int:
    """Hits among `calls` calls of `fn` after one warm-up call."""
    fn(0)
    hits, _ = _counts()
    for i in range(1, calls + 1):
        fn(i)
    return _counts()[0] - hits


def test_new_generic_floats_launch_from_the_cache_with_their_own_values(tpu):
    a = torch.randn(5, 3)
    ta = a.to(tpu)

    def step(i: int) -> None:  # Adam's bias corrections: a new float every step
        alpha = 0.1 + 0.037 * i
        torch.testing.assert_close(torch.div(ta, alpha).cpu(), torch.div(a, alpha), rtol=0, atol=0)

    assert _served(step) == 4


def test_foreach_scalar_lists_of_new_values_are_served(tpu):
    xs = [torch.randn(4), torch.randn(2, 3)]
    txs = [x.to(tpu) for x in xs]

    def step(i: int) -> None:
        scalars = [0.9 ** (i + 1), 1.0 - 0.999 ** (i + 1)]
        ref = [x.clone() for x in xs]
        torch._foreach_div_(ref, scalars)
        got = [x.clone() for x in txs]
        torch._foreach_div_(got, scalars)
        for g, r in zip(got, ref):
            assert torch.equal(g.cpu(), r)

    assert _served(step) >= 4  # the clones are served too


def test_bfloat16_generic_floats_round_as_the_python_path(tpu):
    x = torch.randn(8).to(torch.bfloat16)
    tx = x.to(tpu)

    def step(i: int) -> None:
        value = 0.3 + 0.011 * i
        torch.testing.assert_close((tx * value).cpu(), x * value)  # a stale value is off by >= 3%

    assert _served(step) == 4


def test_an_omitted_default_float_stays_a_constant(tpu):
    x = torch.randn(10)
    tx = x.to(tpu)
    for slope in (None, 0.2, 0.3, None, 0.2):  # leaky_relu's default slope 0.01 is itself a generic float
        kwargs = {} if slope is None else {"negative_slope": slope}
        got = torch.nn.functional.leaky_relu(tx, **kwargs).cpu()
        assert torch.equal(got, torch.nn.functional.leaky_relu(x, **kwargs)), slope


def test_factories_are_keyed_by_their_device(tpu):
    def step(i: int) -> None:
        got = torch.arange(0, 12, 3, device="tpu").cpu()
        assert torch.equal(got, torch.arange(0, 12, 3))
        full = torch.full((2, 3), 1.5, device=tpu).cpu()
        assert torch.equal(full, torch.full((2, 3), 1.5))

    assert _served(step) >= 8
    other = torch.arange(0, 12, 4, device=tpu).cpu()  # another value is another entry
    assert torch.equal(other, torch.arange(0, 12, 4))


def test_out_variants_write_their_out_tensors(tpu):
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    ta, tb = a.to(tpu), b.to(tpu)
    out = torch.empty(3, 4, device=tpu)

    def step(i: int) -> None:
        result = torch.mul(ta, tb + i, out=out)
        assert result is out and torch.equal(out.cpu(), a * (b + i))

    assert _served(step) >= 4
    cond = a > 0
    tcond = cond.to(tpu)
    for _ in range(3):  # where.self_out with a 0-d host scalar
        got = torch.where(tcond, ta, torch.tensor(0.0), out=torch.empty(3, 4, device=tpu))
        assert torch.equal(got.cpu(), torch.where(cond, a, torch.tensor(0.0)))


def test_resized_out_tensors_are_not_served_stale(tpu):
    a = torch.randn(3, 4)
    ta = a.to(tpu)
    for _ in range(3):  # each call resizes an empty out: never a stored launch for the empty shape
        out = torch.empty(0, device=tpu)
        torch.neg(ta, out=out)
        assert out.shape == (3, 4) and torch.equal(out.cpu(), -a)
    wrong = torch.empty(3, 4, dtype=torch.int32, device=tpu)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.neg(ta, out=wrong)


def test_device_copies_are_served_into_strided_destinations(tpu):
    src = torch.randn(4, 6)
    tsrc = src.to(tpu)

    def step(i: int) -> None:
        dst = torch.zeros(6, 4, device=tpu).t()  # a transposed destination
        dst.copy_(tsrc + i)
        assert torch.equal(dst.cpu(), src + i)
        halves = torch.empty(4, 6, dtype=torch.float16, device=tpu)
        halves.copy_(tsrc)
        assert torch.equal(halves.cpu(), src.half())

    assert _served(step) >= 8


def test_index_lists_with_none_are_served_and_masks_are_not(tpu):
    x = torch.randn(2, 5, 3)
    tx = x.to(tpu)

    def step(i: int) -> None:
        idx = torch.tensor([i % 3, 1])
        assert torch.equal(tx[:, :, idx.to(tpu)].cpu(), x[:, :, idx])

    assert _served(step) >= 4
    for seed in range(3):  # a boolean mask turns into data-dependent indices: never a stored launch
        mask = torch.rand(2, 5, generator=torch.Generator().manual_seed(seed)) > 0.5
        assert torch.equal(tx[mask.to(tpu)].cpu(), x[mask])


def test_host_scalars_beyond_int64_are_keyed_by_their_bytes(tpu):
    big = torch.tensor(2**64 - 2, dtype=torch.uint64)  # a 0-d host tensor that int64 cannot hold
    for _ in range(3):
        there = big.to(tpu)
        back = torch.empty((), dtype=torch.uint64)  # an uninitialized 0-d destination
        back.copy_(there)
        assert back.item() == 2**64 - 2
