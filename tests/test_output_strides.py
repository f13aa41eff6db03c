"""Fresh outputs laid out as CPU lays them out (issue 17; execution/out_layout.py): elementwise ops, cat, pooling,
batch norm and convolution on channels_last or permuted inputs give CPU's strides, with CPU's values, in every
eager mode (bit-identical across modes) and from the C++ launch cache (a contiguous call and a channels_last call
of one shape each get their own layout, in either order); in-place and out= targets keep their own strides."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchtpu
from torchtpu.execution import fast_launch

pytestmark = pytest.mark.usefixtures("launch_cache_live")

MODES = ("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE")
_gen = torch.Generator().manual_seed(0)
_BASE = torch.randn(2, 3, 4, 5, generator=_gen)
_OTHER = torch.randn(2, 3, 4, 5, generator=_gen)
_WEIGHT = torch.randn(4, 3, 3, 3, generator=_gen)


def _layouts() -> dict[str, torch.Tensor]:
    return {
        "contiguous": _BASE.clone(),
        "channels_last": _BASE.contiguous(memory_format=torch.channels_last),
        "permuted": _BASE.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),  # dense, neither format
        "transposed": _BASE.transpose(2, 3).contiguous().transpose(2, 3),
    }


# op families: (name, function of one input tensor and the matching `other` on the same device)
OPS = {
    "neg": lambda x, o: -x,
    "exp": lambda x, o: torch.exp(x),
    "add": lambda x, o: x + o,
    "add_self": lambda x, o: x + x,
    "mul_scalar": lambda x, o: x * 2.5,
    "where": lambda x, o: torch.where(x > 0, x, o),
    "relu": lambda x, o: F.relu(x),
    "to_double": lambda x, o: x.double(),
    "cat0": lambda x, o: torch.cat([x, x]),
    "cat1": lambda x, o: torch.cat([x, x], 1),
    "max_pool": lambda x, o: F.max_pool2d(x, 2),
    "avg_pool": lambda x, o: F.avg_pool2d(x, 2),
    "batch_norm": lambda x, o: F.batch_norm(x, None, None, training=True),
    "batch_norm_stats": lambda x, o: F.batch_norm(x, torch.zeros(3, device=x.device), torch.ones(3, device=x.device),
                                                  training=True),
    "conv": lambda x, o: F.conv2d(x, _WEIGHT.to(x.device), padding=1),
    "empty_like": lambda x, o: torch.empty_like(x).fill_(1.0),
    "zeros_like": lambda x, o: torch.zeros_like(x),
    "clone": lambda x, o: x.clone(),
    "contiguous_cl": lambda x, o: x.contiguous(memory_format=torch.channels_last),
    "to_cl": lambda x, o: x.to(memory_format=torch.channels_last),
}


def _other_for(x: torch.Tensor) -> torch.Tensor:
    return _OTHER.to(x.device)


def _check(name: str, label: str, cpu: torch.Tensor, tpu: torch.Tensor) -> None:
    assert tpu.shape == cpu.shape and tpu.dtype == cpu.dtype, (name, label)
    assert tpu.stride() == cpu.stride(), (name, label, cpu.stride(), tpu.stride())
    tol = 3e-2 if name == "conv" else 1e-5  # the MXU's bf16 products at the DEFAULT precision
    torch.testing.assert_close(tpu.cpu(), cpu, rtol=tol, atol=tol, msg=f"{name} {label}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_strides_and_values_match_cpu(tpu, mode: str, name: str) -> None:
    fn = OPS[name]
    results = {}
    with torchtpu.eager_mode(mode):
        for _ in range(2):  # the second round is served by the C++ launch cache where the op is behind it
            for label, x in _layouts().items():
                cpu = fn(x, _other_for(x))
                y = fn(x.to(tpu), _other_for(x.to(tpu)))
                _check(name, label, cpu, y)
                results[label] = y.cpu()
    if mode != "DEFER_NEVER" and name != "empty_like":  # every mode bit-identical to DEFER_NEVER
        with torchtpu.eager_mode("DEFER_NEVER"):
            for label, x in _layouts().items():
                y = fn(x.to(tpu), _other_for(x.to(tpu))).cpu()
                assert _bits(y).equal(_bits(results[label])), (name, label)


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]) if t.is_floating_point() else t


@pytest.mark.parametrize("mode", ("DEFER_NEVER", "DEFER_AND_FUSE"))
@pytest.mark.parametrize("first", ("contiguous", "channels_last"))
def test_cache_hit_after_miss_allocates_each_calls_layout(tpu, mode: str, first: str) -> None:
    """One op, one shape: the C++ key holds non-default strides, so neither call is served the other's layout."""
    layouts = _layouts()
    order = [first, "channels_last" if first == "contiguous" else "contiguous"]
    with torchtpu.eager_mode(mode):
        for _ in range(3):
            for label in order:
                x = layouts[label]
                before = fast_launch.counters()["hits"]
                y = torch.sub(x.to(tpu), 1.5)
                _check("sub", label, x - 1.5, y)
                hits = fast_launch.counters()["hits"] - before
        assert hits == 1  # the last call was a cache hit, with its own layout


def test_large_channels_last_elementwise_values(tpu) -> None:
    """Large enough for the sim's direct writes into the output buffers (drivers/sim/direct_outputs.py)."""
    x = torch.randn(8, 64, 32, 32, generator=_gen).contiguous(memory_format=torch.channels_last)
    o = torch.randn(8, 64, 32, 32, generator=_gen)
    for mode in MODES:
        with torchtpu.eager_mode(mode):
            for _ in range(2):
                y = torch.add(x.to(tpu), o.to(tpu), alpha=2.0)
                z = torch.mul(y, y)
                assert y.stride() == (x + o).stride() == z.stride()
                assert y.cpu().equal(torch.add(x, o, alpha=2.0)) and z.cpu().equal(y.cpu() * y.cpu())


@pytest.mark.parametrize("mode", MODES)
def test_in_place_and_out_keep_their_targets(tpu, mode: str) -> None:
    cl = _layouts()["channels_last"]
    with torchtpu.eager_mode(mode):
        for _ in range(2):
            a = _BASE.to(tpu)  # contiguous target, channels_last operand
            a.add_(cl.to(tpu))
            assert a.stride() == _BASE.stride() and a.cpu().equal(_BASE + cl)
            b = cl.to(tpu)  # channels_last target, contiguous operand
            b.mul_(_OTHER.to(tpu))
            assert b.stride() == cl.stride() and b.cpu().equal(cl * _OTHER)
            out = torch.empty(2, 3, 4, 5, device=tpu)  # contiguous out=, channels_last operands
            torch.add(cl.to(tpu), cl.to(tpu), out=out)
            assert out.stride() == _BASE.stride() and out.cpu().equal(cl + cl)


@pytest.mark.parametrize("weight_format", ("contiguous", "channels_last"))
def test_backward_through_channels_last(tpu, weight_format: str) -> None:
    """conv -> batch norm -> relu -> max pool on a channels_last input: each gradient laid out as CPU's."""
    cl = _layouts()["channels_last"]
    fmt = torch.channels_last if weight_format == "channels_last" else torch.contiguous_format
    grads = []
    for device in ("cpu", tpu):
        x = cl.to(device).clone().requires_grad_()
        w = _WEIGHT.to(device).clone(memory_format=fmt).requires_grad_()
        y = F.conv2d(x * 2.0, w, padding=1)
        y = F.batch_norm(y, None, None, training=True)
        F.max_pool2d(torch.relu(y), 2).sum().backward()
        grads.append((y, x.grad, w.grad))
    for name, c, t in zip(("y", "x.grad", "w.grad"), *grads):
        assert t.stride() == c.stride(), (name, c.stride(), t.stride())
        torch.testing.assert_close(t.detach().cpu(), c.detach(), rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("mode", ("DEFER_NEVER", "DEFER_AND_FUSE"))
def test_compiled_matches_cpu_strides(tpu, mode: str) -> None:
    """Under torch.compile the graph's fake (meta) outputs decide: the launch allocates them so."""
    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.relu(x) * 2.0, torch.cat([x, x], 1), F.max_pool2d(x, 2), x + 1.0

    compiled = torch.compile(f, backend="tpu")
    with torchtpu.eager_mode(mode):
        for _ in range(2):
            for label, x in _layouts().items():
                cpu = f(x)
                got = compiled(x.to(tpu))
                for c, t in zip(cpu, got):
                    _check("compiled", label, c, t)


@pytest.mark.parametrize("mode", MODES)
def test_resized_out_takes_the_inputs_layout(tpu, mode: str) -> None:
    """An empty out= tensor resized by a TensorIterator op takes its inputs' permutation, as on CPU (PyTorch's
    test_strides_propagation); a correctly sized one keeps its own strides (test above)."""
    x = torch.randn(2, 3, 4, generator=_gen).permute(2, 0, 1)
    y = torch.randn(3, generator=_gen)
    with torchtpu.eager_mode(mode):
        for a, b in ((x, x), (x, y), (y, x)):
            want = torch.add(a, b, out=torch.empty(0))
            got = torch.add(a.to(tpu), b.to(tpu), out=torch.empty(0, device=tpu))
            _check("add.out", "resized", want, got)
