"""Out-of-range indices raise as on CPU (never wrap, never drop a write): each index op checks ATen's rule for
it (negative indices allowed only where ATen allows them) in DEFER_NEVER, at the flush in DEFER_AND_FUSE
(naming the op and the user's line) and when a torch.compile graph runs; on the sim and the pjrt driver. The
error's class is CPU's for the same input (the launch's IndexExecutionError is an IndexError, its ExecutionError a
RuntimeError), in every mode."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401


def _ones(i: torch.Tensor, shape: tuple | None = None) -> torch.Tensor:
    return torch.ones(i.shape if shape is None else shape, device=i.device)


def _x3() -> torch.Tensor:
    return torch.arange(3.0)


# name -> (fn(x, idx), x, bad index values, CPU's error class, message pattern). Each fn is also checked with a
# valid index against CPU, so a check that fires too often fails too.
CASES = {
    "embedding": (lambda w, i: F.embedding(i, w), torch.arange(6.0).reshape(3, 2), [[-1], [3]], IndexError,
                  "out of range"),
    "index_select": (lambda x, i: x.index_select(0, i), _x3(), [[-1], [3]], IndexError, "out of range"),
    "gather": (lambda x, i: x.gather(0, i), _x3(), [[-1], [5]], RuntimeError, "out of bounds for dimension 0"),
    "take": (lambda x, i: x.take(i), _x3(), [[-4], [3]], IndexError, "out of bounds|out of range"),
    "getitem": (lambda x, i: x[i], _x3(), [[-4], [3]], IndexError, "out of bounds for dimension"),
    "getitem_2d": (lambda x, i: x[i.clamp(0, 0), i], torch.arange(9.0).reshape(3, 3), [[5], [-4]], IndexError,
                   "out of bounds for dimension 1 with size 3"),
    "scatter": (lambda x, i: x.scatter(0, i, _ones(i)), _x3(), [[-1], [3]], RuntimeError,
                "out of bounds for dimension 0"),
    "scatter_add": (lambda x, i: x.scatter_add(0, i, _ones(i)), _x3(), [[-1]], RuntimeError,
                    "out of bounds"),
    "index_put": (lambda x, i: x.index_put((i,), _ones(i, ())), _x3(), [[-4], [3]], IndexError,
                  "out of bounds for dimension"),
    "index_put_2d": (lambda x, i: x.index_put((i.clamp(0, 0), i), _ones(i, ())), torch.zeros(3, 3), [[5]],
                     IndexError, "out of bounds for dimension 1 with size 3"),
    "index_add": (lambda x, i: x.index_add(0, i, _ones(i)), _x3(), [[-1], [3]], IndexError,
                  "out of range"),
    "index_fill": (lambda x, i: x.index_fill(0, i, 7.0), _x3(), [[-4], [3]], IndexError, "out of bounds"),
    "index_copy": (lambda x, i: x.index_copy(0, i, _ones(i)), _x3(), [[-1], [3]], IndexError,
                   "out of bounds"),
    "put": (lambda x, i: x.put(i, _ones(i)), _x3(), [[-4], [3]], IndexError, "out of range"),
    "nll_loss": (lambda x, i: F.nll_loss(x, i), torch.randn(1, 3), [[-1], [3]], IndexError,
                 "Target .* is out of bounds"),
    "embedding_bag": (lambda w, i: F.embedding_bag(i, w, torch.zeros(1, dtype=torch.long, device=i.device)),
                      torch.arange(6.0).reshape(3, 2), [[-1], [3]], RuntimeError, "valid range"),
    # CPU's class depends on the kernel it picks: index_select along dim 1 (index_select_out_cpu_dim1_) and
    # index_add along the first or last dim of a 2-D+ tensor with an int64 index and alpha 1 (index_put's path)
    # raise RuntimeError, the others IndexError.
    "index_select_dim1": (lambda x, i: x.index_select(1, i), torch.zeros(3, 4, 2), [[9], [-1]], RuntimeError,
                          "out of range for dimension 1 with size 4"),
    "index_select_dim2": (lambda x, i: x.index_select(2, i), torch.zeros(3, 4, 2), [[9]], IndexError,
                          "out of range for dimension 2"),
    "index_add_2d_dim0": (lambda x, i: x.index_add(0, i, torch.ones(i.numel(), 4, device=i.device)),
                          torch.zeros(3, 4), [[9], [-1]], RuntimeError, "out of bounds for dimension 0 with size 3"),
    "index_add_3d_dim1": (lambda x, i: x.index_add(1, i, torch.ones(3, i.numel(), 2, device=i.device)),
                          torch.zeros(3, 4, 2), [[9]], IndexError, "out of range for dimension 1"),
    "index_add_alpha": (lambda x, i: x.index_add(0, i, torch.ones(i.numel(), 4, device=i.device), alpha=2),
                        torch.zeros(3, 4), [[9]], IndexError, "out of range for dimension 0"),
    "index_add_int32": (lambda x, i: x.index_add(1, i.int(), torch.ones(3, i.numel(), device=i.device)),
                        torch.zeros(3, 4), [[9]], IndexError, "out of range for dimension 1"),
}
GOOD = {"getitem": [-1], "take": [-1], "index_put": [-1], "index_fill": [-1], "put": [-1]}  # ATen allows these


def _on(x: torch.Tensor, device: str) -> torch.Tensor:
    return x.to(device)


def _raises_as_cpu(info: pytest.ExceptionInfo, cls: type) -> None:
    """The error is CPU's class: a launch's ExecutionError subclasses exactly the builtin CPU raises (an
    IndexExecutionError is an IndexError, a plain ExecutionError a RuntimeError and not an IndexError)."""
    from torchtpu.drivers.base import ExecutionError

    err = info.value
    assert isinstance(err, cls), f"{type(err).__name__}, CPU raises {cls.__name__}"
    assert (err.builtin if isinstance(err, ExecutionError) else type(err)) is cls, type(err).__mro__


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_indices_match_cpu(tpu, name):
    fn, x, _, _, _ = CASES[name]
    good = torch.tensor(GOOD.get(name, [0]))
    want = fn(x, good)
    got = fn(_on(x, "tpu"), _on(good, "tpu"))
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_index_raises_like_cpu_in_defer_never(tpu, name):
    fn, x, bads, cls, pattern = CASES[name]
    for bad in bads:
        idx = torch.tensor(bad)
        with pytest.raises(cls):
            fn(x, idx)  # the CPU reference raises the same class
        with pytest.raises(cls, match=pattern) as info:
            fn(_on(x, "tpu"), _on(idx, "tpu")).cpu()
        _raises_as_cpu(info, cls)


@pytest.mark.parametrize("name", ["embedding", "gather", "getitem_2d", "index_put", "nll_loss", "scatter",
                                  "index_add_2d_dim0", "index_add_3d_dim1", "index_select_dim1", "index_fill"])
@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "LAUNCH_BLOCKING"])
def test_bad_index_raises_at_the_flush_naming_op_and_line(tpu, name, mode):
    fn, x, bads, cls, pattern = CASES[name]
    xt, idx = _on(x, "tpu"), _on(torch.tensor(bads[0]), "tpu")
    with torch.tpu.eager_mode(mode):
        with pytest.raises(cls, match=pattern) as info:
            out = fn(xt, idx) * 2  # DEFER_AND_FUSE records it: the bad index is only known on the device
            out.cpu()
    _raises_as_cpu(info, cls)
    if mode == "DEFER_AND_FUSE":
        assert "test_index_checks.py" in str(info.value)
    torch.tpu.synchronize()
    assert (fn(xt, torch.zeros_like(idx)).cpu() == fn(x, torch.zeros_like(idx.cpu()))).all()  # usable after


@pytest.mark.parametrize("name", ["embedding", "gather", "getitem_2d", "index_put", "nll_loss", "index_select",
                                  "index_add_2d_dim0", "index_select_dim1"])
def test_bad_index_raises_under_compile(tpu, name):
    fn, x, bads, cls, pattern = CASES[name]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="tpu")
    xt = _on(x, "tpu")
    good = _on(torch.tensor(GOOD.get(name, [0])), "tpu")
    torch.testing.assert_close(compiled(xt, good).cpu(), fn(x, good.cpu()))
    with pytest.raises(cls, match=pattern) as info:
        compiled(xt, _on(torch.tensor(bads[0]), "tpu")).cpu()
    _raises_as_cpu(info, cls)
    assert "test_index_checks.py" in str(info.value)


def test_bad_in_place_write_leaves_the_target_intact(tpu):
    x = torch.arange(3.0, device="tpu")
    with pytest.raises((IndexError, RuntimeError)):
        x.index_put_((torch.tensor([0, 7], device="tpu"),), torch.tensor(9.0, device="tpu"))
    with pytest.raises((IndexError, RuntimeError)):
        x.scatter_(0, torch.tensor([1, -1], device="tpu"), torch.ones(2, device="tpu"))
    assert x.cpu().tolist() == [0.0, 1.0, 2.0]


def test_nll_loss_ignore_index_is_not_an_error(tpu):
    x = torch.randn(2, 3)
    target = torch.tensor([-100, 2])
    torch.testing.assert_close(F.nll_loss(x.to("tpu"), target.to("tpu")).cpu(), F.nll_loss(x, target))
    with pytest.raises((IndexError, RuntimeError), match="Target -5"):
        F.nll_loss(x.to("tpu"), torch.tensor([-5, 2], device="tpu"), ignore_index=-100).cpu()


def test_uint8_mask_warns_as_cpu(tpu):
    # ATen warns once per uint8 index (PyTorch's test_indexing counts the warnings); the result is the bool mask's.
    import warnings

    for device in ("cpu", tpu):
        v = torch.arange(15.0, device=device).view(5, 3)
        mask = torch.tensor([1, 0, 1, 1, 0], dtype=torch.uint8, device=device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = v[mask]
        said = [str(x.message).split(" (Triggered internally")[0] for x in w if "uint8" in str(x.message)]
        assert said == ["indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."], \
            device
        torch.testing.assert_close(got.cpu(), torch.arange(15.0).view(5, 3)[[0, 2, 3]])


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_no_indices_broadcasts_or_raises_as_cpu(tpu, accumulate):
    # (CPU's message without accumulate is an internal one, "masked_fill_ only supports boolean masks, but got mask
    # with dtype nullptr": only the class is compared there.)
    pattern = r"shape mismatch: value tensor of shape \[1\] cannot be broadcast to indexing result of shape \[\]"
    for device in ("cpu", tpu):
        with pytest.raises(RuntimeError, match=pattern if accumulate or device != "cpu" else None):
            torch.rand([], device=device).index_put([], torch.tensor([1.0], device=device), accumulate)
    x = torch.arange(6.0).view(2, 3)  # CPU fails an internal assert here ("ntensor >= 3"): tpu refuses too (it gave
    for device in ("cpu", tpu):  # NumPy's x[()] = v before; issue 17)
        with pytest.raises(RuntimeError, match="ntensor >= 3"):
            x.to(device).index_put([], torch.tensor([1.0, 2.0, 3.0], device=device), accumulate)


def _t(values: list, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=device)


# name -> fn(device) that CPU refuses: (error class, CPU's words). A mask of the wrong shape gave a result before.
BAD_ADVANCED = {
    "mask_too_short": (lambda d: torch.ones(5, 4, 3, device=d)[_t([True], torch.bool, d)], IndexError,
                       r"The shape of the mask \[1\] at index 0 does not match the shape of the indexed tensor "
                       r"\[5, 4, 3\] at index 0"),
    "mask_too_long": (lambda d: torch.ones(5, 4, 3, device=d)[_t([False] * 6, torch.bool, d)], IndexError,
                      r"mask \[6\] at index 0"),
    "mask_2d_after_slice": (lambda d: torch.ones(5, 4, 3, device=d)[:, torch.zeros(4, 4, dtype=torch.uint8,
                                                                                        device=d)],
                            IndexError, r"mask \[4, 4\] at index 1 does not match .* \[5, 4, 3\] at index 2"),
    "indices_do_not_broadcast": (lambda d: torch.zeros(5, 5, device=d)[[0, 1], [0, 1, 2]], IndexError,
                                 r"shape mismatch: indexing tensors could not be broadcast together with shapes "
                                 r"\[2\], \[3\]"),
    "false_and_a_list": (lambda d: torch.ones(2, 3, 4, device=d)[False, [0, 1], ...], IndexError,
                         r"shapes \[0\], \[2\]"),
    "float_index": (lambda d: _t([1, 2, 3], torch.int64, d)[torch.tensor([], device=d)], IndexError,
                    "tensors used as indices must be long, int, byte or bool tensors"),
    "too_many_indices": (lambda d: torch.ops.aten.index.Tensor(torch.ones(1, device=d), [_t([[0]], torch.int64, d),
                                                                               _t([0, 0], torch.int64, d)]),
                         IndexError, r"too many indices for tensor of dimension 1 \(got 2\)"),
    "too_many_on_0d": (lambda d: torch.ops.aten.index.Tensor(torch.tensor(5.0, device=d), [_t([0], torch.int64, d)]),
                       IndexError, r"too many indices for tensor of dimension 0 \(got 1\)"),
    "mask_then_index_past_the_dims": (lambda d: torch.ops.aten.index_put_(
        torch.zeros(2, 3, 3, device=d),
        [torch.ones(2, 3, 3, dtype=torch.bool, device=d), _t([0, 1, 2], torch.int64, d)], torch.ones(3, device=d)),
        IndexError, r"shapes \[18\], \[18\], \[18\], \[3\]"),
    "value_too_long": (lambda d: torch.arange(4, device=d).__setitem__(torch.arange(4, device=d) > -1,
                                                                     _t([1, 2, 3], torch.int64, d)),
                       RuntimeError, r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to indexing "
                                     r"result of shape \[4\]"),
    "value_prefix": (lambda d: torch.zeros(2, 3, device=d).__setitem__(torch.tensor(True, device=d),
                                                                     torch.zeros(5, 1, 2, 3, device=d)),
                     RuntimeError, r"value tensor of shape \[5, 1, 2, 3\] cannot be broadcast to indexing result "
                                   r"of shape \[1, 2, 3\]"),
}


@pytest.mark.parametrize("name", sorted(BAD_ADVANCED))
def test_bad_advanced_index_raises_cpus_error(tpu, name):
    fn, cls, pattern = BAD_ADVANCED[name]
    for device in ("cpu", tpu):
        with pytest.raises(cls, match=pattern):
            fn(device)


def test_uint8_mask_warns_once_per_user_line_as_cpu(tpu):
    # Under the default filter a C++ TORCH_WARN is shown once per calling line: two lines, two warnings.
    import warnings

    for device in ("cpu", tpu):
        v = torch.tensor([True, False, True], device=device)
        mask = torch.tensor([1, 0, 0], dtype=torch.uint8, device=device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("default")
            for _ in range(2):
                v[mask]
            v[mask]
        assert [x.filename for x in w] == [__file__] * 2, device
