"""Errors and values PyTorch's test_binary_ufuncs.py / test_unary_ufuncs.py found differing on tpu: each call raises
CPU's exception class and message, or gives CPU's values, in every eager mode (DEFER_NEVER, LAUNCH_BLOCKING,
DEFER_AND_FUSE)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _complex(d: str) -> torch.Tensor:
    return torch.tensor([1 + 2j, 3 - 1j], device=d)


def _ints(d: str) -> torch.Tensor:
    return torch.tensor([1, 2, 3], device=d)


REFUSED: dict[str, Callable[[str], Any]] = {
    "maximum_complex": lambda d: torch.maximum(_complex(d), _complex(d)),
    "minimum_complex": lambda d: torch.minimum(_complex(d), _complex(d)),
    "fmax_complex": lambda d: torch.fmax(_complex(d), _complex(d)),
    "fmin_complex": lambda d: torch.fmin(_complex(d), _complex(d)),
    "maximum_float_complex": lambda d: torch.maximum(_complex(d).real, _complex(d)),
}


def _outcome(fn: Callable[[str], Any], device: str) -> tuple[type, str] | torch.Tensor:
    try:
        return fn(device).cpu()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return type(e), str(e).splitlines()[0]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_as_cpu_in_every_mode(tpu, name):
    fn = REFUSED[name]
    want = _outcome(fn, "cpu")
    assert isinstance(want, tuple), f"CPU gave a value for {name}"
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = _outcome(lambda d: fn(d).cpu(), "tpu")
        assert got == want, mode
