"""Helion kernels on "tpu": `helion_op` (a `@helion.kernel` as a jax_op) and `sim_autotune` (configurations
ranked by simulated device time on a chip).

Helion's Pallas backend (`HELION_BACKEND=pallas`) exposes each kernel as a JAX function through its public
`Kernel.jax_fn`; `helion_op` wraps that function with `jax_op`, so the kernel runs on both drivers as any JAX
kernel does (the sim: JAX's TPU interpreter on host memory, charged by cost.py; pjrt: the driver's client) and
is one node under torch.compile. Nothing of Helion is patched: configurations are chosen by making one kernel
per configuration with `helion.kernel(fn, config=...)`.

Which configuration runs (`TORCHTPU_HELION_AUTOTUNE`): a kernel given `config=` runs that one. Otherwise
`sim` ranks the default configuration and `candidates` random ones from the kernel's `config_spec`
(seeded) by the simulated time of their traced Pallas code on TORCHTPU_CHIP, nothing executed, once per input
signature; `helion` takes the configuration spec's default (Helion's own autotuner times real launches, which
a simulated device cannot give it).
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from torchtpu.kernels import deps
from torchtpu.kernels.op import JaxOp
from torchtpu.kernels.timing import function_cost


@dataclass
class Tuning:
    """The outcome of `sim_autotune`: every configuration tried with its simulated seconds (None: invalid)."""

    chip: str
    best: Any
    best_seconds: float
    default: Any
    default_seconds: float
    tried: list[tuple[Any, float | None]]

    @property
    def speedup(self) -> float:
        """Simulated time of the default configuration over the best one's."""
        return self.default_seconds / self.best_seconds


def _check_backend() -> None:
    if os.environ.get("HELION_BACKEND", "").lower() != "pallas":
        raise RuntimeError("torchtpu.kernels.helion_op runs Helion's Pallas backend: set HELION_BACKEND=pallas (and "
                           "HELION_PALLAS_INTERPRET=1 off a TPU) before importing helion; HELION_BACKEND="
                           f"{os.environ.get('HELION_BACKEND', '<unset>')!r}")


def _fixed_config(kernel: Any) -> Any:
    configs = list(getattr(kernel, "configs", None) or ())
    return configs[0] if len(configs) == 1 else None


def _with_config(kernel: Any, config: Any) -> Any:
    helion = deps.require("helion")
    return helion.kernel(kernel.fn, config=config, static_shapes=kernel.settings.static_shapes)


def _config_spec(kernel: Any, avals: Sequence[Any]) -> Any:
    examples = tuple(torch.empty(tuple(a.shape), dtype=deps.torch_dtype(a.dtype, "helion"), device="tpu")
                     for a in avals)
    return kernel.bind(examples).config_spec


def sim_autotune(kernel: Any, avals: Sequence[Any], chip: str | None = None, candidates: int = 12,
                 seed: int = 0) -> Tuning:
    """Ranks `kernel`'s default configuration and `candidates` random ones by simulated seconds on `chip`
    (default TORCHTPU_CHIP) for arrays of `avals` (jax.ShapeDtypeStruct); configurations that fail to
    generate or price (an over-subscribed VMEM, say) are kept in `tried` with None."""
    _check_backend()
    from helion.autotuner.config_generation import ConfigGeneration

    if chip is None:
        from torchtpu.drivers import config as tconfig

        chip = tconfig.get("TORCHTPU_CHIP")
    spec = _config_spec(kernel, avals)
    default = spec.default_config()
    generation = ConfigGeneration(spec)
    state = random.getstate()
    random.seed(seed)
    try:
        configs = [default] + [generation.unflatten(generation.random_flat()) for _ in range(candidates)]
    finally:
        random.setstate(state)
    tried: list[tuple[Any, float | None]] = []
    seen = set()
    for cfg in configs:
        if repr(cfg) in seen:
            continue
        seen.add(repr(cfg))
        try:
            seconds = function_cost(_with_config(kernel, cfg).jax_fn, avals, chip, name=kernel.fn.__name__).seconds
        except Exception:  # noqa: BLE001 - a configuration Helion or the cost model refuses is not a candidate
            seconds = None
        tried.append((cfg, seconds))
    valid = [(c, s) for c, s in tried if s is not None]
    if not valid or tried[0][1] is None:
        raise RuntimeError(f"sim_autotune({kernel.fn.__name__}): no configuration could be priced on {chip} "
                           f"(tried {len(tried)})")
    best, best_seconds = min(valid, key=lambda cs: cs[1])
    return Tuning(chip, best, best_seconds, default, tried[0][1], tried)


class _HelionFunction:
    """The JAX function of a Helion kernel, choosing its configuration per input signature (module docstring)."""

    def __init__(self, kernel: Any, candidates: int) -> None:
        self.kernel, self.candidates = kernel, candidates
        self.chosen: dict[tuple, Any] = {}
        self.tunings: dict[tuple, Tuning] = {}
        self.__wrapped__ = kernel.fn  # inspect.signature sees the kernel's own parameters
        self.__name__ = kernel.fn.__name__

    def _kernel_for(self, arrays: Sequence[Any]) -> Any:
        fixed = _fixed_config(self.kernel)
        if fixed is not None:
            return self.kernel
        jax = deps.jax()
        avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays if hasattr(a, "shape")]
        key = tuple((tuple(a.shape), str(a.dtype)) for a in avals)
        chosen = self.chosen.get(key)
        if chosen is None:
            from torchtpu.drivers import config as tconfig

            if tconfig.get("TORCHTPU_HELION_AUTOTUNE") == "sim":
                tuning = self.tunings[key] = sim_autotune(self.kernel, avals, candidates=self.candidates)
                config = tuning.best
            else:
                config = _config_spec(self.kernel, avals).default_config()
            chosen = self.chosen[key] = _with_config(self.kernel, config)
        return chosen

    def __call__(self, *args: Any) -> Any:
        return self._kernel_for(args).jax_fn(*args)


def helion_op(kernel: Any, name: str | None = None, *, static_argnums: Sequence[int] = (), candidates: int = 12,
              differentiable: bool = False) -> JaxOp:
    """`kernel` (a `@helion.kernel`) as the torch operator `name` (default "helion::<function name>") on
    "tpu" tensors; `static_argnums` as jax_op's (the kernel's non-tensor arguments). Helion kernels have no
    backward formula here (differentiable=True asks jax.vjp to differentiate the Pallas code, which JAX refuses
    for most kernels)."""
    deps.require("helion")
    _check_backend()
    if not hasattr(kernel, "jax_fn") or not hasattr(kernel, "fn"):
        raise TypeError(f"helion_op takes a @helion.kernel function; got {type(kernel).__name__}")
    fn = _HelionFunction(kernel, candidates)
    op = JaxOp(name or f"helion::{kernel.fn.__name__}", fn, static_argnums=static_argnums,
               differentiable=differentiable)
    op.helion = fn  # its chosen configurations and sim tunings, per input signature
    return op
