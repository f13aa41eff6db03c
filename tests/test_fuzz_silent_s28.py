"""Silent wrong results the fuzzer found (seeds 28 and 29), refused or equal to CPU's now, every eager mode and
compiled: the reflection/replication padding backward ops took a grad_output whose leading (batch, channel) sizes
differ from input's (ATen checks only the padded dims and reads it as input's shape: garbage or out of bounds; tpu
gave grad_output's leading sizes: shape [4, 1, 4] for CPU's [5, 1]) and skipped the kernel's dtype dispatch and its
grad/input dtype match where the shapes differ; replication_pad3d_backward's channel check. (Seed 28's CPU crash,
batch norm with running stats of shape [0]: tests/test_fuzz_cpu_crashes.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten


def _pad_bw(name: str, grad: tuple[int, ...], x: tuple[int, ...], pad: list[int], gdt: torch.dtype = torch.float32,
            xdt: torch.dtype = torch.float32) -> Callable[[str], object]:
    def case(d: str) -> object:
        g = torch.arange(torch.Size(grad).numel(), device=d).reshape(grad).to(gdt)
        return getattr(aten, name)(g, torch.zeros(x, dtype=xdt, device=d), pad)
    return case


# CPU refuses these; tpu skipped the check where the shapes differ (or matched: the integer dispatch)
REFUSED = {
    "grad_double_input_float": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1], torch.float64),
    "reflect2d_grad_double": _pad_bw("reflection_pad2d_backward", (2, 3, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0],
                                     torch.float64),
    "grad_bool": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1], torch.bool),
    "int64_matching": _pad_bw("replication_pad1d_backward", (3, 2, 6), (3, 2, 4), [1, 1], torch.int64, torch.int64),
    "grad_float_input_long": _pad_bw("replication_pad2d_backward", (2, 3, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0],
                                     torch.float32, torch.int64),
    "replicate3d_channel": _pad_bw("replication_pad3d_backward", (2, 3, 2, 4, 6), (3, 2, 2, 4, 4),
                                   [1, 1, 0, 0, 0, 0]),
    "replicate3d_channel_unbatched": _pad_bw("replication_pad3d_backward", (3, 2, 4, 6), (2, 2, 4, 4),
                                             [1, 1, 0, 0, 0, 0]),
}

# CPU computes these from memory it reads as the wrong shape (garbage, or past grad_output's end): tpu refuses
UNCHECKED = {
    "seed29_replicate1d": _pad_bw("replication_pad1d_backward", (4, 3, 4), (5, 1), [2, 0]),
    "replicate1d_batch": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1]),
    "reflect1d_batch": _pad_bw("reflection_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1]),
    "reflect2d_rank": _pad_bw("reflection_pad2d_backward", (3, 4, 6), (2, 4, 4), [1, 1, 0, 0]),
    "replicate2d_batch": _pad_bw("replication_pad2d_backward", (2, 2, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0]),
    "replicate3d_batch": _pad_bw("replication_pad3d_backward", (2, 2, 2, 4, 6), (3, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0]),
    "reflect3d_batch": _pad_bw("reflection_pad3d_backward", (2, 3, 2, 4, 6), (3, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", UNCHECKED)
def test_unchecked_grad_refused(case: str, mode: str) -> None:
    UNCHECKED[case]("cpu")  # CPU computes (from the wrong memory)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="grad_output of shape .* tpu refuses it"):
        UNCHECKED[case]("tpu")
        torch.tpu.synchronize()


def test_matching_grad_still_computes() -> None:
    for name, grad, x, pad in (("replication_pad1d_backward", (3, 2, 6), (3, 2, 4), [1, 1]),
                               ("reflection_pad2d_backward", (2, 4, 6), (2, 4, 4), [1, 1, 0, 0]),
                               ("replication_pad3d_backward", (2, 2, 2, 4, 6), (2, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0])):
        case = _pad_bw(name, grad, x, pad)
        assert torch.equal(case("tpu").cpu(), case("cpu"))


def test_compiled() -> None:
    assert_refused_as_cpu_compiled(REFUSED["grad_double_input_float"])
    torch._dynamo.reset()
    with pytest.raises(Exception) as tpu:
        torch.compile(lambda: UNCHECKED["seed29_replicate1d"]("tpu"), backend="tpu")()
        torch.tpu.synchronize()
    assert "tpu refuses it" in str(tpu.value)



def _index_add(d: str) -> list[torch.Tensor]:
    """index_add's alpha as CPU reads it, alpha.to<scalar_t>(): an integer's truncated (fuzz seed 28: int32 by
    alpha -3.522 gave -9 for CPU's -7), a 16-bit float's rounded; every path (1-D, first/middle/last dim, 0-d)."""
    out = []
    for dt in (torch.int32, torch.int8, torch.int64, torch.uint8, torch.float16, torch.bfloat16):
        for shape, dim in (((3,), 0), ((3, 2), 0), ((3, 2), 1), ((2, 3, 2), 1), ((), 0)):
            s = torch.arange(torch.Size(shape).numel(), device=d).reshape(shape).to(dt)
            src_shape = [2 if i == dim else v for i, v in enumerate(shape)]
            src = (torch.arange(torch.Size(src_shape).numel(), device=d).reshape(src_shape) + 3).to(dt)
            idx = torch.tensor([0, 2] if shape and shape[dim] > 2 else [0, 1] if shape else [0], device=d)
            for alpha in (-3.522, 2.7, 2 + 0j) if dt != torch.uint8 else (2.7, 3.99):
                out += [aten.index_add(s, dim, idx, src, alpha=alpha),
                        aten.index_add.out(s, dim, idx, src, alpha=alpha, out=torch.empty_like(s)),
                        s.clone().index_add_(dim, idx, src, alpha=alpha)]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_index_add_alpha_exactly_cpu(mode: str) -> None:
    assert_exactly_cpu(_index_add, mode)


INDEX_ADD_REFUSED = {  # alpha.to<scalar_t>() is checked: CPU refuses what the dtype cannot hold
    "uint8_negative": lambda d: aten.index_add(torch.ones(3, dtype=torch.uint8, device=d), 0,
                                               torch.tensor([0], device=d), torch.ones(1, dtype=torch.uint8, device=d),
                                               alpha=-0.5),
    "int8_300": lambda d: aten.index_add(torch.ones(3, 2, dtype=torch.int8, device=d), 1, torch.tensor([0], device=d),
                                         torch.ones(3, 1, dtype=torch.int8, device=d), alpha=300.0),
    "half_1e20": lambda d: aten.index_add(torch.ones(3, dtype=torch.float16, device=d), 0,
                                          torch.tensor([1], device=d), torch.ones(1, dtype=torch.float16, device=d),
                                          alpha=1e20),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", INDEX_ADD_REFUSED)
def test_index_add_alpha_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(INDEX_ADD_REFUSED[case], mode)


def test_index_add_alpha_compiled() -> None:
    """An integer tensor with a float alpha is refused by PyTorch's own meta under compile (CPU's too); a float16
    one reaches the lowering, whose alpha is rounded to float16 first as CPU's."""
    s, src, idx = torch.arange(3, dtype=torch.float16), torch.tensor([3.0, 4.0], dtype=torch.float16), \
        torch.tensor([0, 2])
    torch._dynamo.reset()
    got = torch.compile(lambda a, b, c: torch.index_add(a, 0, c, b, alpha=2.7), backend="tpu")(
        s.to("tpu"), src.to("tpu"), idx.to("tpu"))
    assert torch.equal(got.cpu(), torch.index_add(s, 0, idx, src, alpha=2.7))
    assert_refused_as_cpu_compiled(INDEX_ADD_REFUSED["half_1e20"])


def _put(values: tuple[int, ...] = (), acc: bool = False, self_shape: tuple[int, ...] = (2, 4),
         indices: int = 1) -> Callable[[str], object]:
    def case(d: str) -> object:
        return aten.index_put(torch.zeros(self_shape, device=d), [None] * indices, torch.ones(values, device=d), acc)
    return case


# index / index_put with no index tensor: tpu indexed everything (fuzz seed 29: _index_put_impl_ of [None] wrote
# every element), CPU refuses
NO_INDEX = {
    "seed29_impl": lambda d: aten._index_put_impl_(torch.zeros(1, 4, dtype=torch.bool, device=d), [None],
                                                   torch.tensor(True, device=d), unsafe=True),
    "index_put_none": _put(),
    "index_put_empty_list": _put(indices=0),
    "index_put_out": lambda d: aten.index_put.out(torch.zeros(2, 4, device=d), [None], torch.ones((), device=d),
                                                  out=torch.zeros(2, 4, device=d)),
    "zero_dim_self": _put(self_shape=(), indices=0),
    "index_empty_list": lambda d: aten.index(torch.zeros(2, 4, device=d), []),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", NO_INDEX)
def test_no_index_tensor_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(NO_INDEX[case], mode)


@pytest.mark.parametrize("mode", MODES)
def test_no_index_tensor_internal_assert(mode: str) -> None:
    """CPU's own internal assert (its words name a build path): the same class, its first words."""
    for case in (_put(acc=True), lambda d: aten.index(torch.zeros(2, 4, device=d), [None])):
        with pytest.raises(RuntimeError, match="ntensor >= 3 INTERNAL ASSERT FAILED"):
            case("cpu")
        with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="ntensor >= 3 INTERNAL ASSERT FAILED"):
            case("tpu")
            torch.tpu.synchronize()


def test_no_index_tensor_still_computes() -> None:
    """A self of no elements, a 0-d mask (a None after the mask's expansion) and a None beside an index compute."""
    for case in (_put(self_shape=(0, 4), values=(4,)),
                 lambda d: torch.zeros(2, device=d).index_put_((torch.tensor(True, device=d),),
                                                               torch.tensor(3.0, device=d)),
                 lambda d: aten.index_put(torch.zeros(2, 4, device=d), [None, torch.tensor([1], device=d)],
                                          torch.ones((), device=d))):
        assert torch.equal(case("tpu").cpu(), case("cpu"))


def test_no_index_tensor_compiled() -> None:
    assert_refused_as_cpu_compiled(NO_INDEX["index_put_none"])


@pytest.mark.parametrize("mode", MODES)
def test_no_index_tensor_words_by_value(mode: str) -> None:
    """index_put_ without an index tensor fails differently by its value and indices on CPU: each as CPU."""
    for values, self_shape, n in (((), (2, 3), 2), ((1,), (2, 3), 1), ((), (4,), 1), ((3,), (2, 3), 1),
                                  ((2, 3), (2, 3), 0), ((3,), (3, 2), 1)):
        with pytest.raises(RuntimeError) as cpu:
            _put(values, self_shape=self_shape, indices=n)("cpu")
        words = str(cpu.value).split(" at ")[0] if "INTERNAL ASSERT" in str(cpu.value) else str(cpu.value)
        with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError) as tpu:
            _put(values, self_shape=self_shape, indices=n)("tpu")
            torch.tpu.synchronize()
        assert words.split("\n")[0] in str(tpu.value)
