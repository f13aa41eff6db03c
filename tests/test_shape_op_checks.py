"""Argument checks of flip and unfold as ATen makes them (PyTorch's test_shape_ops found them missing): repeated
flip dims, unfold's negative size, dim range and 0-dim results; view_as_complex's layout checks (test_view_ops);
messages as CPU's."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401

BAD = {
    "flip_repeated": (lambda d: torch.ones(2, 2, 2, device=d).flip(0, 1, 1), RuntimeError, "appears multiple times"),
    "flip_repeated_wrapped": (lambda d: torch.ones(2, 2, device=d).flip(0, -2), RuntimeError,
                              "dim 0 appears multiple times"),
    "unfold_size": (lambda d: torch.arange(7.0, device=d).unfold(0, -1, 1), RuntimeError, "size is -1 but must be"),
    "unfold_step": (lambda d: torch.arange(7.0, device=d).unfold(0, 1, -1), RuntimeError, "step is -1 but must be"),
    "unfold_dim": (lambda d: torch.arange(7.0, device=d).unfold(1, 1, 1), IndexError, "Dimension out of range"),
    "unfold_too_big": (lambda d: torch.arange(7.0, device=d).unfold(0, 8, 1), RuntimeError, "maximum size"),
    "unfold_backward_size": (lambda d: torch.ops.aten.unfold_backward(torch.ones(2, 3, device=d), [6], 0, -1, 1),
                             RuntimeError, "size is -1 but must be >= 0"),
    "view_as_complex_0dim": (lambda d: torch.view_as_complex(torch.ones((), device=d)), RuntimeError,
                             "^Input tensor must have one or more dimensions$"),
    "view_as_complex_size": (lambda d: torch.view_as_complex(torch.ones(3, 3, device=d)), RuntimeError,
                             "^Tensor must have a last dimension of size 2$"),
    "view_as_complex_stride": (lambda d: torch.view_as_complex(torch.ones(3, 4, device=d)[:, ::2]), RuntimeError,
                               "^Tensor must have a last dimension with stride 1$"),
    "view_as_complex_offset": (lambda d: torch.view_as_complex(torch.ones(9, device=d)[1:].view(4, 2)),
                               RuntimeError, "^Tensor must have a storage_offset divisible by 2$"),
}
GOOD = {
    "flip_wrapped": lambda d: torch.arange(8.0, device=d).view(2, 2, 2).flip(0, -1),
    "unfold_0dim_size0": lambda d: torch.tensor(0.5, device=d).unfold(0, 0, 1),
    "unfold_0dim_size0_step2": lambda d: torch.tensor(0.5, device=d).unfold(0, 0, 2),
    "unfold_0dim_size1": lambda d: torch.tensor(0.5, device=d).unfold(-1, 1, 1),
    "unfold_negative_dim": lambda d: torch.arange(7.0, device=d).unfold(-1, 3, 2),
    "unfold_2d": lambda d: torch.arange(12.0, device=d).view(3, 4).unfold(1, 2, 1),
    "view_as_complex_transposed": lambda d: torch.view_as_real(
        torch.view_as_complex(torch.arange(12.0, device=d).view(3, 2, 2).transpose(0, 1))),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments_raise_as_on_cpu(name: str) -> None:
    fn, cls, pattern = BAD[name]
    for device in ("cpu", "tpu"):
        with pytest.raises(cls, match=pattern):
            fn(device)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_valid_arguments_match_cpu(name: str) -> None:
    want = GOOD[name]("cpu")
    got = GOOD[name]("tpu")
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want)
