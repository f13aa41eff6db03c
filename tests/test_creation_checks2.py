"""Tensor-creation ops as CPU makes them, in every eager mode: torch.normal's tensor forms (result dtype and shape,
a tensor std's checks, complex noise in both parts, out=), normal_ on complex and integer tensors, arange's out=
into a non-contiguous tensor (kept in its shape and strides) and its refused dtypes; random_ on the dtypes the
device stores as bytes only refused as torchtpu.dtypes refuses them, and torch.complex of float16 parts
(complex32) as CPU."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _host(v: object) -> object:
    if isinstance(v, torch.Tensor):
        return v.cpu()
    if isinstance(v, list | tuple):
        return type(v)(_host(x) for x in v)
    return v


def _outcome(fn: Callable[[str], object], device: str) -> tuple[str, str]:
    try:
        return "ok", repr(_host(fn(device)))
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


def _same_as_cpu(mode: str, fn: Callable[[str], object]) -> None:
    want = _outcome(fn, "cpu")
    with torch.tpu.eager_mode(mode):
        got = _outcome(fn, "tpu")
    assert got == want


def _meta(t: torch.Tensor) -> tuple:
    """What a random result must share with CPU's: dtype, shape, strides."""
    return t.dtype, tuple(t.shape), t.stride()


def _normal_calls() -> list[Callable[[str], object]]:
    z = lambda d, *s, dt=torch.float32: torch.zeros(*s, dtype=dt, device=d)  # noqa: E731
    o = lambda d, *s, dt=torch.float32: torch.ones(*s, dtype=dt, device=d)  # noqa: E731
    return [
        lambda d: _meta(torch.normal(z(d, 4, 3, dt=torch.float16), o(d, 4, 3))),  # mean's dtype, not promoted
        lambda d: _meta(torch.normal(z(d, 4, 1, dt=torch.float64), o(d, 3))),  # broadcast
        lambda d: _meta(torch.normal(z(d, 4, 3, dt=torch.bfloat16), 2.0)),
        lambda d: _meta(torch.normal(2.0, o(d, 5, dt=torch.float64))),  # std's dtype
        lambda d: _meta(torch.normal(z(d, 4, 3, dt=torch.complex64), o(d, 4, 3))),
        lambda d: _meta(torch.normal(z(d, 3), o(d, 4))),  # infer_size's error
        lambda d: torch.normal(0.0, -o(d, 3)),
        lambda d: torch.normal(z(d, 3), -o(d, 3)),
        lambda d: torch.normal(z(d, 3), torch.tensor([1.0, -1e-30, 2.0], device=d)),
        lambda d: torch.normal(0.0, o(d, 3, dt=torch.complex64)),
        lambda d: torch.normal(z(d, 3, dt=torch.complex64), o(d, 3, dt=torch.complex64)),
        lambda d: torch.normal(z(d, 3), -1.0),
        lambda d: torch.normal(z(d, 3, dt=torch.int64), 1.0),
        lambda d: torch.empty(3, dtype=torch.int32, device=d).normal_(),
        lambda d: torch.normal(torch.tensor([1.5, -2.0], device=d), 0.0),  # std 0: the mean exactly
        lambda d: torch.normal(3.0, z(d, 2, dt=torch.float64)),
        lambda d: torch.normal(torch.tensor([1.5, -2.0], device=d), z(d, 2)),
        lambda d: _meta(torch.normal(z(d, 0, 2), z(d, 0, 1))),
        lambda d: _meta(torch.normal(z(d, 3), 1.0, out=torch.empty(3, device=d))),
        lambda d: _meta(torch.normal(z(d, 2, 3), o(d, 3), out=torch.empty(0, device=d))),
        lambda d: _meta(torch.normal(1.0, o(d, 2, 3), out=torch.empty(0, dtype=torch.float64, device=d))),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_normal_tensor_forms_as_cpu(mode: str) -> None:
    for fn in _normal_calls():
        _same_as_cpu(mode, fn)


@pytest.mark.parametrize("mode", MODES)
def test_normal_complex_draws_both_parts(mode: str) -> None:
    """CPU draws a complex tensor's real view, each part with std / sqrt(2) (the imaginary part was the mean's)."""
    torch.manual_seed(0)
    with torch.tpu.eager_mode(mode):
        mean = torch.full((200, 200), 1 + 2j, dtype=torch.complex64, device="tpu")
        for r in (torch.normal(mean, 2.0), torch.normal(mean, torch.full((200, 200), 2.0, device="tpu")),
                  torch.empty(200, 200, dtype=torch.complex128, device="tpu").normal_(1.0, 2.0)):
            r = r.cpu()
            assert abs(r.real.std().item() - 2 ** 0.5) < 0.05 and abs(r.imag.std().item() - 2 ** 0.5) < 0.05
            assert abs(r.real.mean().item() - 1) < 0.05 and abs(r.imag.mean().item() - (1 if r.dtype ==
                                                                                     torch.complex128 else 2)) < 0.05


@pytest.mark.parametrize("mode", MODES)
def test_normal_values_scaled_and_shifted(mode: str) -> None:
    torch.manual_seed(0)
    with torch.tpu.eager_mode(mode):
        mean = torch.zeros(100, 100, device="tpu")
        mean[50:] = 1
        std = torch.empty(100, 100, device="tpu")
        std[:, :50], std[:, 50:] = 4, 1
        r = torch.normal(mean, std).cpu()
    assert abs(r[:50].mean().item()) < 0.2 and abs(r[50:].mean().item() - 1) < 0.2
    assert abs(r[:, :50].std().item() - 4) < 0.3 and abs(r[:, 50:].std().item() - 1) < 0.2


def _arange_calls() -> list[Callable[[str], object]]:
    def narrow(d: str) -> object:
        x = torch.zeros(2, 3, device=d)
        torch.arange(0, 4, out=x.narrow(1, 1, 2))
        return x

    def permuted(d: str) -> object:
        res = torch.zeros(3, 3, 40, dtype=torch.int64, device=d).permute(2, 0, 1)
        r = torch.arange(0, 40 * 9, out=res)
        return r.shape, r.stride(), r is res, res.contiguous()

    def resized(d: str) -> object:
        out = torch.zeros(2, 2, device=d)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            torch.arange(1.0, 2.5, 0.5, out=out)
        return out, out.stride(), [str(m.message).split(" (Triggered internally")[0] for m in w]

    return [
        narrow, permuted, resized,
        lambda d: torch.arange(5, out=torch.empty(5, dtype=torch.float16, device=d)),
        lambda d: torch.arange(3, out=torch.empty(0, dtype=torch.int32, device=d)),
        lambda d: torch.arange(3, out=torch.empty(3, dtype=torch.bool, device=d)),
        lambda d: torch.arange(3, out=torch.empty(3, dtype=torch.complex64, device=d)),
        lambda d: torch.arange(3, dtype=torch.bool, device=d),
        lambda d: torch.arange(0.0, 3.0, dtype=torch.complex64, device=d),
        lambda d: torch.arange(0, 3, out=torch.empty(1, device=d).expand(3)),
        # the bounds' checks, in ATen's order and words
        lambda d: torch.arange(-5, float("nan"), device=d),
        lambda d: torch.arange(0, float("-inf"), -1, device=d),
        lambda d: torch.arange(float("inf"), device=d),
        lambda d: torch.arange(float("nan"), 10, device=d),
        lambda d: torch.arange(0, 1, float("nan"), device=d),
        lambda d: torch.arange(0, 1, float("inf"), device=d),
        lambda d: torch.arange(0, -1, 0.5, device=d),
        lambda d: torch.arange(0, 1, 0, device=d),
        lambda d: torch.arange(1.175494351e-38, 3.402823466e+38, device=d),
        lambda d: torch.arange(1.5, -2.5, -0.5, device=d),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_arange_out_as_cpu(mode: str) -> None:
    for fn in _arange_calls():
        _same_as_cpu(mode, fn)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_random_storage_only_dtypes_refused(mode: str, dtype: torch.dtype) -> None:
    """random_ on a dtype the device stores as bytes only: torchtpu.dtypes' refusal (dtype, op, supported set),
    not random_from_to_impl's internal message."""
    with torch.tpu.eager_mode(mode):
        t = torch.zeros(4, dtype=dtype).to("tpu")
        for call, op in ((lambda: t.random_(0, 10), "aten::random_.from"), (lambda: t.random_(7), "aten::random_.to")):
            with pytest.raises(NotImplementedError, match="is not supported on the tpu device") as info:
                call()
            assert op in str(info.value) and str(dtype) in str(info.value) and "float32" in str(info.value)
        assert t.cpu().tolist() == [0, 0, 0, 0]


def test_compiled_normal_and_arange() -> None:
    """Compiled graphs: normal's tensor forms keep mean's dtype and shape; arange as eager."""
    torch._dynamo.reset()

    def f(mean: torch.Tensor, std: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.normal(mean, std), torch.arange(0, mean.shape[0], 2)

    mean = torch.zeros(6, 3, device="tpu")
    std = torch.zeros(6, 3, device="tpu")
    r, a = torch.compile(f, backend="tpu")(mean, std)
    assert _meta(r) == _meta(torch.normal(mean.cpu(), std.cpu()))
    assert torch.equal(r.cpu(), mean.cpu())
    assert torch.equal(a.cpu(), torch.arange(0, 6, 2))


@pytest.mark.parametrize("mode", MODES)
def test_complex32_results_as_cpu(mode: str) -> None:
    """torch.complex of float16 parts makes complex32 (CPU's ComplexHalf, held since issue 17: exact parts).
    torch.polar of float16 parts is refused by CPU's and CUDA's kernels themselves: CPU's words."""
    half = torch.tensor([1.5, -0.0], dtype=torch.float16)
    with torch.tpu.eager_mode(mode):
        got = torch.complex(half.to("tpu"), -half.to("tpu")).cpu()
        assert got.dtype == torch.complex32
        assert torch.equal(torch.view_as_real(got), torch.view_as_real(torch.complex(half, -half)))
        with pytest.raises(NotImplementedError) as cpu:
            torch.polar(half, half)
        with pytest.raises(NotImplementedError, match="^" + str(cpu.value) + "$"):
            torch.polar(half.to("tpu"), half.to("tpu"))
