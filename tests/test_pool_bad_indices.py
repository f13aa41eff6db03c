"""Max-pool backward and max_unpool with an index outside the plane: CPU's backward kernels write grad_input[i]
unchecked (a negative index corrupts its heap), tpu refuses (IndexError) rather than wrap a negative index into a
plausible gradient; max_unpool refuses as CPU does (RuntimeError, CPU's words). Both signs, every eager mode and
torch.compile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled, exception_chain

import torchtpu  # noqa: F401

A = torch.ops.aten
BAD = {"negative": -1, "too_large": 16}


def _idx(bad: int, d: str, nd: int) -> torch.Tensor:
    return torch.tensor([0, 5, bad, 15], device=d).reshape((1, 1) + (1,) * (nd - 2) + (2, 2))


def _backward_cases(bad: int) -> dict[str, Callable[[str], torch.Tensor]]:
    def g(d: str, nd: int) -> torch.Tensor:
        return torch.ones((1, 1) + (1,) * (nd - 2) + (2, 2), device=d)

    def s(d: str, nd: int) -> torch.Tensor:
        return torch.ones((1, 1) + (1,) * (nd - 2) + (4, 4), device=d)

    k2, k3 = [2, 2], [1, 2, 2]
    return {
        "max_pool2d": lambda d: A.max_pool2d_with_indices_backward(g(d, 2), s(d, 2), k2, k2, [0, 0], [1, 1], False,
                                                                   _idx(bad, d, 2)),
        "max_pool3d": lambda d: A.max_pool3d_with_indices_backward(g(d, 3), s(d, 3), k3, k3, [0, 0, 0], [1, 1, 1],
                                                                   False, _idx(bad, d, 3)),
        "adaptive_max_pool2d": lambda d: A.adaptive_max_pool2d_backward(g(d, 2), s(d, 2), _idx(bad, d, 2)),
        "adaptive_max_pool3d": lambda d: A.adaptive_max_pool3d_backward(g(d, 3), s(d, 3), _idx(bad, d, 3)),
        "fractional_max_pool2d": lambda d: A.fractional_max_pool2d_backward(g(d, 2), s(d, 2), k2, k2,
                                                                            _idx(bad, d, 2)),
        "fractional_max_pool3d": lambda d: A.fractional_max_pool3d_backward(g(d, 3), s(d, 3), k3, k3,
                                                                            _idx(bad, d, 3)),
    }


BACKWARD = [(op, sign) for op in _backward_cases(0) for sign in BAD]


def _unpool(bad: int, nd: int) -> Callable[[str], torch.Tensor]:
    if nd == 2:
        return lambda d: A.max_unpool2d(torch.ones(1, 1, 2, 2, device=d), _idx(bad, d, 2), [4, 4])
    return lambda d: A.max_unpool3d(torch.ones(1, 1, 1, 2, 2, device=d), _idx(bad, d, 3), [1, 4, 4], [1, 2, 2],
                                    [0, 0, 0])


def _assert_backward_refused(fn: Callable[[], object], bad: int) -> None:
    with pytest.raises(Exception) as exc:
        fn()
        torch.tpu.synchronize()
    chain = exception_chain(exc.value)
    assert any(isinstance(e, IndexError) and f"index {bad} is out of bounds for an input plane of size 16" in str(e)
               for e in chain), exc.value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,sign", BACKWARD)
def test_backward_refuses_index_outside_plane(op: str, sign: str, mode: str) -> None:
    case = _backward_cases(BAD[sign])[op]
    with torch.tpu.eager_mode(mode):
        _assert_backward_refused(lambda: case("tpu").cpu(), BAD[sign])


@pytest.mark.parametrize("op,sign", BACKWARD)
def test_backward_refuses_index_outside_plane_compiled(op: str, sign: str) -> None:
    case = _backward_cases(BAD[sign])[op]
    torch._dynamo.reset()
    _assert_backward_refused(lambda: torch.compile(lambda: case("tpu"), backend="tpu")().cpu(), BAD[sign])


@pytest.mark.parametrize("op", list(_backward_cases(0)))
def test_backward_in_plane_matches_cpu(op: str) -> None:
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            torch.testing.assert_close(_backward_cases(3)[op]("tpu").cpu(), _backward_cases(3)[op]("cpu"),
                                       rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("sign", list(BAD))
def test_unpool_refuses_as_cpu(sign: str, nd: int, mode: str) -> None:
    assert_refused_as_cpu(_unpool(BAD[sign], nd), mode)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("sign", list(BAD))
def test_unpool_refuses_as_cpu_compiled(sign: str, nd: int) -> None:
    assert_refused_as_cpu_compiled(_unpool(BAD[sign], nd))


def _fractional2d(grad: list[int], self_shape: list[int], indices: list[int]) -> Callable[[str], torch.Tensor]:
    return lambda d: A.fractional_max_pool2d_backward(
        torch.ones(grad, dtype=torch.float64, device=d), torch.ones(self_shape, dtype=torch.float64, device=d),
        [2, 2], [3, 2], torch.zeros(indices, dtype=torch.int64, device=d))


FRACTIONAL_SIZES = {  # CPU's meta compares grad_output's and indices' whole shape (fuzz seed 5)
    "grad_numel_1": _fractional2d([1, 1, 1], [1, 3, 3], [1]),
    "grad_batch": _fractional2d([2, 3, 2], [1, 3, 3], [2, 3, 2]),
    "grad_planes": _fractional2d([1, 3, 2], [1, 1, 3, 3], [1, 1, 3, 2]),
    "indices": _fractional2d([1, 1, 3, 2], [1, 1, 3, 3], [1, 3, 2]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(FRACTIONAL_SIZES))
def test_fractional2d_backward_sizes_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(FRACTIONAL_SIZES[name], mode)
