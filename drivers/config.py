"""Every `TORCHTPU_*` environment variable: its default, its valid values and its parser, in one table.

`get(name)` reads a variable and parses it, once per distinct raw value (a test or a user may change the
environment between calls); a bad value raises `ConfigError` (a ValueError) naming the variable, the value and
the valid set. `check_all()` parses every variable that is set, so a bad one fails at import rather than at first
use. This module is torch-free so that the drivers can read their own options through it; `torchtpu.config`
re-exports it for the PyTorch layer. `torchtpu.sim` sits below the drivers and cannot import this: the sim driver
hands `torchtpu.sim.mxu` the reader of TORCHTPU_MXU_MODE from here (`mxu.set_mode_source`), so that variable too
is parsed by this table. A default is a callable (`Var.default`), evaluated when the variable is unset.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_DEVICES = 64  # the C++ shim's per-device counter table (torchtpu/csrc/tpu_shim.cpp kMaxDevices)
BOOL_VALUES = "0, 1"
DYNAMIC = "(see meaning)"  # the shown default of a variable whose default is computed (Var.of with a callable)


class ConfigError(ValueError):
    """A TORCHTPU_* variable with a value outside its valid set."""


@dataclass(frozen=True)
class Var:
    name: str
    default: Callable[[], Any]  # the parsed value when the variable is unset or empty
    valid: str | Callable[[], str]  # the valid values, as the error message and docs/install.md list them
    parse: Callable[[str], Any]  # raises ValueError (its message is the reason) for a bad value
    meaning: str
    shown_default: str = ""  # the default as docs/install.md shows it
    after: tuple[str, ...] = ()  # variables whose values the parse reads too (a cached value follows them)

    @classmethod
    def of(cls, name: str, default: str | Callable[[], Any], valid: str | Callable[[], str],
           parse: Callable[[str], Any], meaning: str) -> Var:
        """A variable whose default is a raw value (parsed like a set one) or a callable giving the parsed value."""
        if callable(default):
            return cls(name, default, valid, parse, meaning, DYNAMIC)
        return cls(name, _parsed_once(parse, default), valid, parse, meaning, default)


def _parsed_once(parse: Callable[[str], Any], raw: str) -> Callable[[], Any]:
    box: list[Any] = []

    def default() -> Any:
        if not box:
            box.append(parse(raw))
        return box[0]

    return default


def _choice(*values: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        v = raw.strip().lower()
        if v not in values:
            raise ValueError("not one of the valid values")
        return v

    return parse


def _upper_choice(*values: str) -> Callable[[str], str]:
    lower = _choice(*(v.lower() for v in values))
    return lambda raw: lower(raw).upper()


def _bool(raw: str) -> bool:
    v = raw.strip()
    if v not in ("0", "1"):
        raise ValueError("not 0 or 1")
    return v == "1"


def _auto_bool(raw: str) -> bool | None:
    return None if raw.strip().lower() == "auto" else _bool(raw)


def _int_in(lo: int, hi: int | None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            n = int(raw.strip())
        except ValueError:
            raise ValueError("not an integer") from None
        if n < lo or (hi is not None and n > hi):
            raise ValueError(f"{n} is out of range")
        return n

    return parse


def _buckets(raw: str) -> str | tuple[int, ...]:
    v = raw.strip().lower()
    if v in ("pow2", "none"):
        return v
    try:
        sizes = sorted({int(s) for s in v.split(",")})
    except ValueError:
        raise ValueError("not pow2, none or a list of integers") from None
    if sizes[0] < 1:
        raise ValueError(f"bucket size {sizes[0]} is not positive")
    return tuple(sizes)


def _chip(raw: str) -> str:
    from torchtpu.sim.chips import get_chip

    try:
        return get_chip(raw.strip()).name
    except (KeyError, ValueError):
        raise ValueError("not a known chip") from None


def _driver_name(raw: str) -> str:
    from torchtpu.drivers.registry import names

    v = raw.strip().lower()
    if v not in names():
        raise ValueError("not a registered driver")
    return v


def _driver_names() -> str:
    from torchtpu.drivers.registry import names

    return ", ".join(names())


def _chip_names() -> str:
    from torchtpu.sim.chips import CHIPS

    return ", ".join(CHIPS)


def _mxu_mode(raw: str) -> str:
    from torchtpu.sim.mxu import MODES

    return _choice(*MODES)(raw)


def _cache_dir(raw: str) -> str:
    path = os.path.expanduser(raw.strip())
    if not path:
        raise ValueError("empty")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError("exists and is not a directory")
    return path


def _topology(raw: str) -> tuple[int, ...]:
    """A slice shape such as 2x2, checked against the chip generation of TORCHTPU_CHIP (its chip-table entry)."""
    from torchtpu.sim.topology import check_shape, parse_shape

    shape = parse_shape(raw)
    check_shape(shape, get("TORCHTPU_CHIP"))
    return shape


def _topology_forms() -> str:
    from torchtpu.sim.topology import SHAPE_FORMS

    return SHAPE_FORMS


def _default_cache_dir() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "torchtpu")


VARS: dict[str, Var] = {v.name: v for v in (
    Var.of("TORCHTPU_DRIVER", "auto", _driver_names, _driver_name,
        "which machine runs the programs (auto: pjrt when a TPU is present, else sim)"),
    Var.of("TORCHTPU_PJRT_PLATFORM", "tpu", "tpu, cpu, cuda", _choice("tpu", "cpu", "cuda"),
        "the PJRT platform of the pjrt driver (cpu: JAX's CPU client, real XLA)"),
    Var.of("TORCHTPU_CHIP", "v5e", _chip_names, _chip, "the simulated chip (HBM size, costs)"),
    Var.of("TORCHTPU_PRECISION", "DEFAULT", "DEFAULT, HIGH, HIGHEST", _upper_choice("DEFAULT", "HIGH", "HIGHEST"),
        "global float32 matmul precision (1, 3 or 6 bf16 MXU passes)"),
    Var.of("TORCHTPU_EAGER_MODE", "DEFER_NEVER", "DEFER_NEVER, LAUNCH_BLOCKING, DEFER_AND_FUSE",
        _upper_choice("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"), "eager execution mode"),
    Var.of("TORCHTPU_SHAPE_BUCKETS", "pow2", "pow2, none, or positive sizes like 128,256,512", _buckets,
        "bucket policy for torch.compile(dynamic=True)"),
    Var.of("TORCHTPU_MAX_REGION_OPS", "20000", "an integer >= 1", _int_in(1, None),
        "IR ops after which a DEFER_AND_FUSE region flushes"),
    Var.of("TORCHTPU_FAST_LAUNCH", "1", BOOL_VALUES, _bool,
        "cached eager ops launch from the C++ kernel (0: every op through Python)"),
    Var.of("TORCHTPU_ONE_OP_STREAK", "1", BOOL_VALUES, _bool,
        "DEFER_AND_FUSE launches an op at once while each region has held one op (0: always record)"),
    Var.of("TORCHTPU_CPU_FALLBACK", "1", BOOL_VALUES, _bool,
        "allow (counted) CPU fallback for ops without a lowering (0: an error naming the op)"),
    Var.of("TORCHTPU_MXU_MODE", "auto", "auto, exact, fast", _mxu_mode,
        "sim MXU summation order: systolic order (exact) or BLAS on bf16 splits (fast)"),
    Var.of("TORCHTPU_NUM_DEVICES", "1", f"an integer in 1..{MAX_DEVICES}", _int_in(1, MAX_DEVICES),
        "how many devices the driver exposes (sim: simulated chips; pjrt: at most the platform's)"),
    dataclasses.replace(Var.of("TORCHTPU_TOPOLOGY", lambda: None, _topology_forms, _topology,
        "the simulated slice's ICI torus shape (unset: TORCHTPU_NUM_DEVICES chips of one host)"),
        after=("TORCHTPU_CHIP",)),
    Var.of("TORCHTPU_HOSTS", lambda: None, "an integer >= 1, a multiple of the slice's hosts (unset: one slice)",
        _int_in(1, None), "hosts of the simulated system: slices of TORCHTPU_TOPOLOGY joined by DCN"),
    Var.of("TORCHTPU_PJRT_CHECKS", "1", BOOL_VALUES, _bool,
        "pjrt: check index ranges and integer division on the device (0: XLA's clamping)"),
    Var.of("TORCHTPU_PJRT_DONATE", "auto", f"auto, {BOOL_VALUES}", _auto_bool,
        "pjrt: donate buffers of in-place updates (auto: on except for the cpu platform)"),
    Var.of("TORCHTPU_PJRT_MXU_PASSES", "auto", f"auto, {BOOL_VALUES}", _auto_bool,
        "pjrt: spell f32 matmuls as the MXU's bf16 passes (auto: on except for the tpu platform)"),
    Var.of("TORCHTPU_PJRT_DISTRIBUTED", "auto", f"auto, {BOOL_VALUES}", _auto_bool,
        "pjrt: join JAX's distributed runtime (RANK of WORLD_SIZE, coordinator MASTER_PORT+1) so that tpu_dist "
        "collectives compile as XLA collectives (auto: on when WORLD_SIZE > 1)"),
    Var.of("TORCHTPU_VALIDATE_TRACEBACK", "0", BOOL_VALUES, _bool,
        "python -m torchtpu.validate_models prints each failure's traceback"),
    Var.of("TORCHTPU_VERBOSE_BUILD", "0", BOOL_VALUES, _bool, "show the compiler output of the C++ shim's JIT build"),
    Var.of("TORCHTPU_EXECUTABLE_CACHE", "4096", "an integer >= 1", _int_in(1, None),
        "compiled executables a driver keeps (least recently used dropped first)"),
    Var.of("TORCHTPU_HELION_AUTOTUNE", "helion", "helion, sim", _choice("helion", "sim"),
        "how torchtpu.kernels.helion_op picks an unconfigured Helion kernel's config (sim: ranked by simulated "
        "device time on TORCHTPU_CHIP; helion: Helion's own autotuner)"),
    Var.of("TORCHTPU_VLLM_SIM_KV_BYTES", str(1 << 30), "an integer >= 1", _int_in(1, None),
        "torchtpu.vllm on the simulator: the KV cache's cap in bytes when vLLM is given no kv_cache_memory_bytes "
        "(the simulated HBM is host memory)"),
    Var.of("TORCHTPU_CACHE_DIR", _default_cache_dir, "a directory path (created if missing)", _cache_dir,
        "where the JIT-built C++ shim and the sim's fused element-wise loops (sim_fusion/) are cached"
        " (default $XDG_CACHE_HOME/torchtpu or ~/.cache/torchtpu)"),
)}

_seen: dict[str, tuple[Any, Any]] = {}  # name -> (raw value, parsed value)


def _valid(var: Var) -> str:
    return var.valid() if callable(var.valid) else var.valid


_ENV_KEYS: dict[str, Any] = {}


def _raw(name: str) -> str | None:
    """`os.environ.get(name)` read from the mapping's own store (for an absent key `os.environ.get` raises and
    catches a KeyError: 0.7 us, on every small matmul for TORCHTPU_MXU_MODE)."""
    environ = os.environ
    if type(environ) is not os._Environ:  # replaced by a plain mapping (a test's patch)
        return environ.get(name)
    key = _ENV_KEYS.get(name)
    if key is None:
        key = _ENV_KEYS[name] = environ.encodekey(name)
    raw = environ._data.get(key)
    return None if raw is None else environ.decodevalue(raw)


def reader(name: str) -> Callable[[], Any]:
    """A callable giving `get(name)` for a variable read on every call (the sim's TORCHTPU_MXU_MODE, per small
    matmul): it parses again only when the raw value in os.environ's store is not the object it saw last (it keeps
    that object, so the identity test cannot be fooled by a reused address), ~0.1 us instead of `get`'s ~0.25."""
    var = VARS[name]
    environ = os.environ
    if var.after or var.shown_default == DYNAMIC or type(environ) is not os._Environ:  # (read anew each time)
        return lambda: get(name)
    key, store = environ.encodekey(name), environ._data
    seen: list[tuple[Any, Any]] = [(reader, None)]  # (raw object, value); `reader` itself: nothing seen yet

    def read() -> Any:
        if os.environ is not environ:  # replaced by a test's patch
            return get(name)
        raw = store.get(key)
        last = seen[0]
        if raw is last[0]:
            return last[1]
        value = get(name)
        seen[0] = (raw, value)
        return value

    return read


def parse(name: str, raw: str) -> Any:
    """`raw` parsed as the value of variable `name`; ConfigError naming both and the valid set if it is bad."""
    var = VARS[name]
    try:
        return var.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not valid ({exc}); valid values: {_valid(var)}") from None


def get(name: str) -> Any:
    """The parsed value of `name` from the environment (its default when unset or empty)."""
    raw = _raw(name)
    var = VARS[name]
    key: Any = (raw, *map(_raw, var.after)) if var.after else raw
    seen = _seen.get(name)
    if seen is not None and seen[0] == key:
        return seen[1]
    value = var.default() if raw is None or raw.strip() == "" else parse(name, raw)
    if raw or var.shown_default != DYNAMIC:  # a callable default may follow other variables: evaluated anew
        _seen[name] = (key, value)
    return value


def is_set(name: str) -> bool:
    """Whether `name` is set to a non-empty value (the drivers treat an unset TORCHTPU_NUM_DEVICES as "all")."""
    return bool(os.environ.get(name, "").strip())


def check_all() -> None:
    """Parses every TORCHTPU_* variable in the table that is set; the first bad one raises ConfigError."""
    for name in VARS:
        get(name)


def table() -> list[tuple[str, str, str, str]]:
    """(variable, default, valid values, meaning) rows, as docs/install.md lists them."""
    return [(v.name, v.shown_default, _valid(v), v.meaning) for v in VARS.values()]
