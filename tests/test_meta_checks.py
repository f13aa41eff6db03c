"""ATen's argument checks run through the op's meta function when a new signature is traced
(torchtpu/execution/meta_checks.py): calls CPU refuses by shape, rank, dtype or a static argument raise CPU's
class and words in every eager mode (each computed a result before: a silent wrong result), valid calls still
equal CPU's, a refused call leaves nothing cached, and a cached signature is not checked again."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401
from torchtpu.execution import meta_checks

aten = torch.ops.aten
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _t(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (torch.rand(shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 4).to(dtype)


# name -> (call, inputs): each call CPU refuses (found by the schema fuzzer, seed 2); tpu computed them all. Where
# torch's Python meta registration stands in for ATen's C++ meta step its words may differ from CPU's (as
# torch.compile's fake tensors raise them on every device): those names are in OTHER_WORDS.
REFUSED: dict[str, tuple[Callable[..., object], tuple]] = {
    "upsample_nearest2d rank": (lambda x: aten.upsample_nearest2d(x, [3, 3]), (_t((3, 2, 2)),)),
    "upsample_nearest2d zero size": (lambda x: aten.upsample_nearest2d(x, [0, 1]), (_t((1, 3, 5, 5)),)),
    "upsample_nearest1d_backward sizes": (
        lambda g: aten.upsample_nearest1d_backward(g, [4], [2, 3, 3], 0.0), (_t((5, 4, 4)),)),
    "max_pool3d_with_indices padding": (
        lambda x: aten.max_pool3d_with_indices(x, [2, 3, 2], [], [1, 3, 1], [1, 3, 2], True),
        (_t((1, 1, 1, 5)),)),
    "max_unpool3d rank": (
        lambda x, i: aten.max_unpool3d(x, i, [1, 2, 1], [1, 3, 1], [0, 2, 2]),
        (_t((2, 2)), torch.zeros(2, 2, dtype=torch.int64))),
    "flip.out dim": (lambda x, o: aten.flip.out(x, [-2], out=o), (_t(()), _t((5, 2)))),
    "hardtanh unsigned negative limit": (lambda x: aten.hardtanh(x, -4), (_t((3,), torch.uint8),)),
    "as_strided_scatter.out size": (
        lambda x, s, o: aten.as_strided_scatter.out(x, s, [1], [1], out=o),
        (_t((), torch.int32), _t((), torch.int32), _t((0,), torch.int32))),
    "linalg_solve_triangular square": (
        lambda a, b: aten.linalg_solve_triangular(a, b, upper=False), (_t((2, 3, 5)), _t((2, 3, 5)))),
    "_pdist_forward contiguous": (lambda x: aten._pdist_forward(x, 2.0), (_t((2, 3)).t(),)),
}


OTHER_WORDS = {"upsample_nearest2d zero size", "hardtanh unsigned negative limit"}


def _outcome(call: Callable[..., object], inputs: tuple) -> tuple[str, object]:
    try:
        result = call(*inputs)
        return "ok", [r.cpu() for r in result] if isinstance(result, tuple | list) else result.cpu()
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


def _on_tpu(x: torch.Tensor) -> torch.Tensor:
    moved = x.to("tpu")
    return moved if x.is_contiguous() else moved.t().contiguous().t()  # same strides (a transposed view)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_cpu(mode: str, name: str) -> None:
    call, inputs = REFUSED[name]
    want = _outcome(call, inputs)
    assert want[0] != "ok", want
    with torch.tpu.eager_mode(mode):
        got = _outcome(call, tuple(_on_tpu(x) for x in inputs))
    assert got[0] == want[0], got
    if name in OTHER_WORDS:
        assert got[1].lower()[:20] == want[1].lower()[:20], got
    else:
        assert got[1] == want[1]


VALID: dict[str, tuple[Callable[..., object], tuple]] = {
    "upsample_nearest2d": (lambda x: aten.upsample_nearest2d(x, [4, 6]), (_t((1, 2, 2, 3)),)),
    "replication_pad2d": (lambda x: aten.replication_pad2d(x, [1, 0, 2, 1]), (_t((2, 3, 4)),)),
    "flip.out": (lambda x, o: aten.flip.out(x, [-1], out=o), (_t((3, 4)), _t((3, 4)))),
    "hardtanh unsigned": (lambda x: aten.hardtanh(x, 1, 3), (_t((5,), torch.uint8),)),
    "linalg_solve_triangular": (
        lambda a, b: aten.linalg_solve_triangular(a + 4 * torch.eye(3, dtype=a.dtype, device=a.device), b,
                                                  upper=False), (_t((2, 3, 3)), _t((2, 3, 5)))),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(VALID))
def test_valid_calls_still_equal_cpu(mode: str, name: str) -> None:
    call, inputs = VALID[name]
    want = _outcome(call, inputs)
    assert want[0] == "ok", want
    torch.tpu.set_precision("HIGHEST")
    try:
        with torch.tpu.eager_mode(mode):
            got = _outcome(call, tuple(x.to("tpu") for x in inputs))
    finally:
        torch.tpu.set_precision("DEFAULT")
    assert got[0] == "ok", got
    torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-5)


def test_refusal_leaves_state_and_caches_intact() -> None:
    x = torch.arange(12.0).reshape(1, 1, 3, 4).to("tpu")
    before = x.clone()
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        aten.upsample_nearest2d(x, [0, 2])
    torch.testing.assert_close(x.cpu(), before.cpu())
    for _ in range(2):  # the refused signature was not cached: it is refused again, every time
        with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
            aten.upsample_nearest2d(x, [0, 2])
    torch.testing.assert_close(aten.upsample_nearest2d(x, [3, 8]).cpu(),
                               aten.upsample_nearest2d(x.cpu(), [3, 8]))


def test_checked_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = meta_checks.refusal

    def counting(*args: object, **kwargs: object) -> BaseException | None:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(meta_checks, "refusal", counting)
    x = torch.rand(2, 3, 4, 5).to("tpu")
    for _ in range(3):
        aten.replication_pad2d(x, [1, 2, 0, 3])
    assert len(calls) == 1
    aten.replication_pad2d(torch.rand(2, 3, 4, 6).to("tpu"), [1, 2, 0, 3])  # a new signature: checked
    assert len(calls) == 2


def test_meta_failures_that_are_not_checks_are_dropped() -> None:
    def no_meta(_args: tuple, _kwargs: dict) -> None:
        raise NotImplementedError("Could not run 'aten::foo' with arguments from the 'Meta' backend")

    def value_read(_args: tuple, _kwargs: dict) -> None:
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def own_slip(_args: tuple, _kwargs: dict) -> None:
        raise ValueError("not enough values to unpack")

    def check(_args: tuple, _kwargs: dict) -> None:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 2)")

    assert meta_checks.refusal(no_meta, (), {}) is None
    assert meta_checks.refusal(value_read, (), {}) is None
    assert meta_checks.refusal(own_slip, (), {}) is None
    assert isinstance(meta_checks.refusal(check, (), {}), IndexError)


@pytest.mark.parametrize("mode", MODES)
def test_meta_index_slip_fails_closed(mode: str) -> None:
    """upsample_linear1d.out of a 1-d input: CPU refuses the rank; torch's Python meta kernel indexes a size the
    input lacks (IndexError) and the lowering computed a result. A refusal in another class beats a result."""
    x, out = _t((5,)), _t((5,))
    with pytest.raises(RuntimeError, match="input_size equals to 3"):
        aten.upsample_linear1d.out(x, [1], False, None, out=out)
    with torch.tpu.eager_mode(mode), pytest.raises((RuntimeError, IndexError)):
        aten.upsample_linear1d.out(x.to("tpu"), [1], False, None, out=out.to("tpu"))
