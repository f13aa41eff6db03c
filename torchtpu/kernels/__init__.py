"""Custom kernels on "tpu": JAX functions and Pallas kernels (`jax_op`), Helion kernels (`helion_op`).

A kernel is a torch operator (op.py) that runs on both drivers (run.py), priced on the simulated chip from what
it does (cost.py); docs/kernels.md tells how to write, test, time and autotune one. jax and helion are optional:
`pip install 'torchtpu[kernels]'` / `'torchtpu[helion]'`.
"""

from __future__ import annotations

from typing import Any

from torchtpu.kernels.cost import VmemOversubscribed
from torchtpu.kernels.deps import MissingDependency
from torchtpu.kernels.op import JaxOp, jax_op
from torchtpu.kernels.run import KernelError, interpret_params

__all__ = ["JaxOp", "KernelError", "MissingDependency", "VmemOversubscribed", "helion_op", "interpret_params",
           "jax_op", "simulated_cost"]


def helion_op(kernel: Any, name: str | None = None, **kwargs: Any) -> JaxOp:
    """A Helion kernel (`@helion.kernel`, Pallas backend) as a torch operator on "tpu" (helion_ops.py)."""
    from torchtpu.kernels.helion_ops import helion_op as make

    return make(kernel, name, **kwargs)


def simulated_cost(op: JaxOp, *args: Any, chip: str | None = None) -> Any:
    """The CostRecord `op` would be charged for these arguments on `chip` (default: the active chip)."""
    from torchtpu.kernels.timing import simulated_cost as cost

    return cost(op, *args, chip=chip)
