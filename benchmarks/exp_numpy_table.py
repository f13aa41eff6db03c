"""Writes tests/data/exp_numpy246.npz: the running np.exp's float32 bits for hard inputs of exp_numpy.expf.

Hard inputs: the self-check sample (specials, NaN payloads, the overflow/underflow thresholds +-2 ulps), every
input +-3 ulps around the ends of the normal/subnormal result ranges, all inputs whose results are subnormal
at a stride, and 4096 inputs where np.exp is not the correctly rounded float32 exp (seeded, from 2^22 random
finite inputs in the range). Run with the numpy whose exp was ported (exp_numpy.NUMPY_VERSIONS, X86_V4).
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> None:
    spec = importlib.util.spec_from_file_location("exp_numpy", ROOT / "drivers" / "sim" / "exp_numpy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.REASON is None, mod.REASON
    f = lambda v: int(np.float32(v).view(np.uint32))  # noqa: E731
    ends = [f(np.log(np.float64(2.0**-126))), f(-np.log(np.float64(2.0**-126))), f(np.log(np.float64(2.0**-149))),
            f(np.log(np.float64(2.0**-150))), f(np.log(np.float64(2.0**128))), 0xC2AEAC4F, 0xC2AEAC50]
    around = [b + d for b in ends for d in range(-3, 4)]
    subnormal = list(range(0xC2AEAC50, 0xC2CFF1B5, 997))  # x < log(2^-126): subnormal results
    rng = np.random.default_rng(246)
    x = rng.uniform(-104, 89, 1 << 22).astype(np.float32)
    with np.errstate(all="ignore"):
        off = x[np.exp(x) != np.exp(x.astype(np.float64)).astype(np.float32)]
    hard = rng.choice(off, 4096, replace=False).view(np.uint32)
    bits = np.unique(np.concatenate([mod.check_sample().view(np.uint32), np.array(around + subnormal, np.uint32),
                                     hard]))
    with np.errstate(all="ignore"):
        ref = np.exp(bits.view(np.float32)).view(np.uint32)
    out = ROOT / "tests" / "data" / "exp_numpy246.npz"
    np.savez_compressed(out, x=bits, exp=ref)
    print(f"{bits.size} inputs ({off.size} of 2^22 random ones not correctly rounded) -> {out}")


if __name__ == "__main__":
    main()
