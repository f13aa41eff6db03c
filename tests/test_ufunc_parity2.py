"""Errors and values PyTorch's test_binary_ufuncs.py / test_unary_ufuncs.py found differing on tpu: each call raises
CPU's exception class and message, or gives CPU's values, in every eager mode (DEFER_NEVER, LAUNCH_BLOCKING,
DEFER_AND_FUSE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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




REFUSED.update({  # the FFT kernels' input dtype checks
    "fft_c2c_bfloat16": lambda d: torch._fft_c2c(torch.ones(4, dtype=torch.bfloat16, device=d), [0], 0, True),
    "fft_c2c_int": lambda d: torch._fft_c2c(torch.ones(4, dtype=torch.int32, device=d), [0], 0, True),
    "fft_c2c_float": lambda d: torch._fft_c2c(torch.ones(4, device=d), [0], 1, False),
    "fft_c2r_float": lambda d: torch._fft_c2r(torch.ones(4, device=d), [0], 0, 6),
    "fft_r2c_complex": lambda d: torch._fft_r2c(_complex(d), [0], 0, True),
    "fft_r2c_int": lambda d: torch._fft_r2c(_ints(d), [0], 0, False),
})

REFUSED.update({  # ATen's alpha_check of add/sub, on the common dtype
    "add_int_float_alpha": lambda d: torch.add(_ints(d), _ints(d), alpha=1.5),
    "add_int_float_alpha_one": lambda d: torch.add(_ints(d), _ints(d), alpha=1.0),
    "add_int_scalar_float_alpha": lambda d: torch.add(_ints(d), 2, alpha=0.5),
    "add_int_bool_alpha": lambda d: torch.add(_ints(d), _ints(d), alpha=True),
    "add_int_complex_alpha": lambda d: torch.add(_ints(d), _ints(d), alpha=1j),
    "add_float_complex_alpha": lambda d: torch.add(_ints(d).float(), _ints(d), alpha=2j),
    "add_in_place_float_alpha": lambda d: _ints(d).add_(_ints(d), alpha=2.5),
    "sub_int_float_alpha": lambda d: torch.sub(_ints(d), _ints(d), alpha=1.5),
    "sub_float_bool_alpha": lambda d: torch.sub(_ints(d).double(), _ints(d), alpha=False),
    "rsub_int_float_alpha": lambda d: torch.rsub(_ints(d), _ints(d), alpha=1.5),
})


def _spectrum(d: str) -> torch.Tensor:
    return torch.tensor([1 + 2j, 3 - 1j, -0.5j, 4.0], device=d)

# ATen's norm_from_int: any normalization other than 0 and 1 divides by n
VALUES: dict[str, Callable[[str], torch.Tensor]] = {
    "fft_c2c_norm5_forward": lambda d: torch._fft_c2c(_spectrum(d), [0], 5, True),
    "fft_c2c_norm5_backward": lambda d: torch._fft_c2c(_spectrum(d), [0], 5, False),
    "fft_c2c_norm_negative": lambda d: torch._fft_c2c(_spectrum(d), [0], -1, True),
    "fft_r2c_norm7": lambda d: torch._fft_r2c(_spectrum(d).real, [0], 7, True),
    "fft_c2r_norm3": lambda d: torch._fft_c2r(_spectrum(d), [0], 3, 6),
    "add_bool_bool_alpha": lambda d: torch.add(_ints(d) > 1, _ints(d) > 2, alpha=True),
    "add_bool_int_alpha": lambda d: torch.add(_ints(d) > 1, _ints(d) > 2, alpha=2),
    "add_int_int_alpha": lambda d: torch.add(_ints(d), _ints(d), alpha=-3),
    "add_float_float_alpha": lambda d: torch.add(_ints(d).float(), _ints(d), alpha=0.25),
    "add_complex_complex_alpha": lambda d: torch.add(_spectrum(d), _ints(d).float().sum(), alpha=1 - 2j),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_as_cpu_in_every_mode(tpu, name):
    fn = REFUSED[name]
    want = _outcome(fn, "cpu")
    assert isinstance(want, tuple), f"CPU gave a value for {name}"
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = _outcome(lambda d: fn(d).cpu(), "tpu")
        assert got == want, mode


def _int_pair(d: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    info = torch.iinfo(dtype)
    a = torch.tensor([info.min, -7, 7, -7, 7, 5, 0, info.max], dtype=dtype, device=d)
    return a, torch.tensor([-1, 2, -2, -2, 3, 5, 3, -1], dtype=dtype, device=d)


VALUES.update({
    f"fmod_{str(dt)[6:]}_{form}": (lambda d, dt=dt, form=form: torch.fmod(
        _int_pair(d, dt)[0], {"tensor": _int_pair(d, dt)[1], "scalar": -3, "zero_dim": torch.tensor(3)}[form]))
    for dt in (torch.int8, torch.int16, torch.int32, torch.int64) for form in ("tensor", "scalar", "zero_dim")
})


@pytest.mark.parametrize("op", ["fmod", "remainder"])
@pytest.mark.parametrize("divisor", ["scalar", "tensor"])
def test_integer_division_by_zero_raises_in_every_mode(tpu, op, divisor):
    """CPU: RuntimeError "ZeroDivisionError"; the device raises a RuntimeError that is also a ZeroDivisionError
    (drivers/base.py's ZeroDivisionExecutionError), its message naming the op; fmod gave 0 before. The message's
    words differ from CPU's and between the modes (a deferred region says where the op was issued)."""
    fn = getattr(torch, op)

    def call(d: str) -> torch.Tensor:
        return fn(torch.tensor([1, -2, 3], device=d), 0 if divisor == "scalar" else torch.tensor([2, 0, 1], device=d))

    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        call("cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            with pytest.raises(RuntimeError, match="by zero") as raised:
                call("tpu").cpu()
        assert isinstance(raised.value, ZeroDivisionError), mode


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_cpu_in_every_mode(tpu, name):
    fn = VALUES[name]
    want = fn("cpu")
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = fn("tpu").cpu()
    assert got["DEFER_NEVER"].dtype == want.dtype
    torch.testing.assert_close(got["DEFER_NEVER"], want, rtol=1e-6, atol=1e-6)
    for mode in MODES[1:]:
        assert torch.equal(got[mode], got["DEFER_NEVER"]), mode


def test_compiled_matches_cpu(tpu):
    def fn(a: torch.Tensor, b: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.fmod(a, b), torch.fmod(a, -3), torch.add(a, b, alpha=-2), torch._fft_c2c(z, [0], 5, True)

    a, b = _int_pair("cpu", torch.int32)
    got = torch.compile(fn, backend="tpu")(a.to("tpu"), b.to("tpu"), _spectrum("tpu"))
    for g, w in zip(got, fn(a, b, _spectrum("cpu"))):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-6, atol=1e-6)
