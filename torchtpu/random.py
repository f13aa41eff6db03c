"""The device RNG: a counter-based (Philox) generator per device, seeded by `torch.manual_seed`.

The state is (seed, offset). Each random op receives the current state as a tiny int64[2] program input and
advances the offset by the numbers it draws, so replays are reproducible and a cached program never bakes a
seed in.
"""

from __future__ import annotations

import random as _pyrandom
import threading

import torch

_DEFAULT_SEED = 67280421310721
_lock = threading.Lock()
_states: dict[int, list[int]] = {}
_initial: dict[int, int] = {}


def _state(device: int) -> list[int]:
    if device not in _states:
        _states[device] = [_DEFAULT_SEED, 0]
        _initial[device] = _DEFAULT_SEED
    return _states[device]


def manual_seed(seed: int, device: int | None = None) -> None:
    device = torch.tpu.current_device() if device is None else device
    seed = int(seed) & (2**63 - 1)
    with _lock:
        _states[device] = [seed, 0]
        _initial[device] = seed


def manual_seed_all(seed: int) -> None:
    for device in range(torch.tpu.device_count()):
        manual_seed(seed, device)


def seed() -> None:
    manual_seed(_pyrandom.getrandbits(63))


def seed_all() -> None:
    manual_seed_all(_pyrandom.getrandbits(63))


def initial_seed(device: int | None = None) -> int:
    device = torch.tpu.current_device() if device is None else device
    _state(device)
    return _initial[device]


def get_rng_state(device: int | str | torch.device = "tpu") -> torch.Tensor:
    index = _index(device)
    s = _state(index)
    return torch.tensor(s, dtype=torch.int64).view(torch.uint8).clone()


def set_rng_state(new_state: torch.Tensor, device: int | str | torch.device = "tpu") -> None:
    if new_state.dtype != torch.uint8 or new_state.numel() != 16:
        raise ValueError(f"a tpu RNG state is a uint8 tensor of 16 bytes, got {new_state.dtype}[{new_state.numel()}]")
    seed_, offset = new_state.clone().view(torch.int64).tolist()
    _states[_index(device)] = [seed_, offset]


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(torch.tpu.device_count())]


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    for i, s in enumerate(states):
        set_rng_state(s, i)


def _index(device: int | str | torch.device) -> int:
    if isinstance(device, int):
        return device
    d = torch.device(device)
    return d.index if d.index is not None else torch.tpu.current_device()


def next_state(device: int, count: int) -> torch.Tensor:
    """The state tensor for an op drawing `count` numbers on `device`, advancing the device's offset."""
    with _lock:
        s = _state(device)
        current = list(s)
        s[1] += max(int(count), 1)
    return torch.tensor(current, dtype=torch.int64).to(torch.device("tpu", device))
