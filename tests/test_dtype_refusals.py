"""Ops whose CPU kernel has no implementation for a dtype (bitwise ops on float, clamp on complex) raise CPU's
error class on "tpu" too, with the dtype named, instead of failing inside the driver or computing a result."""

from __future__ import annotations

import pytest
import torch

_F, _I8, _C = torch.ones(3), torch.ones(3, dtype=torch.int8), torch.ones(3, dtype=torch.complex64)
_CALLS = {
    "and float tensors": lambda d: torch.bitwise_and(_F.to(d), _I8.to(d)),
    "and int, float scalar": lambda d: torch.bitwise_and(_I8.to(d), 2.5),
    "or float tensors": lambda d: torch.bitwise_or(_F.to(d), _F.to(d)),
    "xor bool, float scalar": lambda d: torch.bitwise_xor(_I8.to(d) > 0, 1.5),
    "and int tensors": lambda d: torch.bitwise_and(_I8.to(d), _I8.to(d) * 3),
    "not float": lambda d: torch.bitwise_not(_F.to(d)),
    "not int": lambda d: torch.bitwise_not(_I8.to(d)),
    "clamp float, complex bound": lambda d: torch.clamp(_F.to(d), 1j),
    "clamp float, real complex bound": lambda d: torch.clamp(_F.to(d), 1 + 0j),
    "clamp float, complex max": lambda d: torch.clamp(_F.to(d), None, 1j),
    "clamp_min float, complex": lambda d: torch.clamp_min(_F.to(d), 1 + 0j),
    "clamp_max_ float, complex": lambda d: _F.to(d).clone().clamp_max_(2j),
    "clamp int, complex": lambda d: torch.clamp(_I8.to(d), 1j),
    "clamp complex tensor": lambda d: torch.clamp(_C.to(d), 1),
}


def _outcome(call, device: str):  # noqa: ANN001, ANN202
    try:
        return None, call(device).cpu()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e), str(e)


@pytest.mark.parametrize("name", list(_CALLS))
def test_refused_as_cpu(name: str):
    cpu_cls, cpu = _outcome(_CALLS[name], "cpu")
    tpu_cls, tpu = _outcome(_CALLS[name], "tpu")
    assert tpu_cls is cpu_cls, f"cpu {cpu_cls}: {cpu}; tpu {tpu_cls}: {tpu}"
    if cpu_cls is None:
        torch.testing.assert_close(tpu, cpu, rtol=0, atol=0)
    elif cpu_cls is NotImplementedError and "not implemented for" in cpu:
        assert cpu.split("not implemented for")[1] in tpu  # the same dtype named
    else:
        assert tpu == cpu
