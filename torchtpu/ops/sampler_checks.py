"""ATen's parameter checks of the in-place random samplers (exponential_, cauchy_, log_normal_, geometric_,
bernoulli_), and bernoulli's check of a tensor p made when the program runs.

The samplers' lowerings (ops/factory.py, ops/sampling.py) take their parameters static, so a check made while
tracing runs for every value a call can bring. Words as ATen's (aten/src/ATen/native/DistributionTemplates.h);
a parameter prints as C++'s `<<` prints a double (`format(v, "g")`: 0, -0.5, nan, inf).
"""
from __future__ import annotations

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym

# ATen's bernoulli_distribution constructor (TransformationHelper.h, TORCH_CHECK_IF_NOT_ON_CUDA): its words
_BERNOULLI_P = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
                "If so, please report an enhancement request to PyTorch.)")


def _g(value: float) -> str:
    return format(float(value), "g")


def check_exponential(lambd: float) -> None:
    """exponential_: lambda > 0 (NaN and non-positive refused; inf allowed, it gives 0)."""
    if not float(lambd) > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")


def check_cauchy(sigma: float) -> None:
    """cauchy_: sigma > 0."""
    if not float(sigma) > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")


def check_log_normal(std: float) -> None:
    """log_normal_: std > 0."""
    if not float(std) > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")


def check_bernoulli(p: float) -> None:
    """bernoulli_ with a float p: 0 <= p <= 1 (NaN refused)."""
    if not 0.0 <= float(p) <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")


def check_geometric(p: float) -> None:
    """geometric_: 0 < p < 1."""
    if not 0.0 < float(p) < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")


def checked_bernoulli_probs(prob: Sym) -> Sym:
    """`prob` (float32, already expanded to self's shape) unchanged, checked when the program runs as CPU's
    bernoulli kernel checks each p it reads (bernoulli.default/.out, bernoulli_.Tensor): 0 <= p <= 1, NaN refused
    (RuntimeError in CPU's words). An empty self reads no p: nothing is checked."""
    if prob.numel() == 0:
        return prob
    inside = P.convert(P.compare("GE", prob, 0.0), torch.int64) * P.convert(P.compare("LE", prob, 1.0), torch.int64)
    outside = P.reduce(1 - inside, "sum", tuple(range(len(prob.shape))))
    P.check_index(P.reshape(outside, (1,)), 1, _BERNOULLI_P, error="RuntimeError")
    return prob
