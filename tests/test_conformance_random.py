"""The conformance harness's distribution test for random entries whose per-call means are discrete
(multi_head_attention_forward's OpInfo samples: saturated softmax rows, dropout keeps or drops whole rows)."""

import torch

from torchtpu.conformance import harness


def _draws(atoms, counts):
    return torch.cat([torch.full((c,), a, dtype=torch.float64) for a, c in zip(atoms, counts)])


# Sample 5's per-call means (float32, 400 calls on CPU): 8 dropout patterns of 3 one-hot rows, 6 distinct sums.
ATOMS = [-301.4318, -257.2229, -170.7967, -126.5878, -40.1616, 4.0473]
CPU_COUNTS = [48, 52, 104, 100, 50, 46]
TPU_COUNTS = [52, 47, 100, 103, 49, 49]


def test_rounding_offset_atoms_pass():
    cpu = _draws(ATOMS, CPU_COUNTS)
    tpu = _draws([a + 1e-4 * (1 if i % 2 else -1) for i, a in enumerate(ATOMS)], TPU_COUNTS)  # 1 ulp-ish apart
    critical = 2.5 * (2 / 400) ** 0.5
    assert harness._ks_statistic(tpu.float(), cpu.float()) > critical  # the plain statistic counts whole atoms
    assert harness._random_statistic(tpu.float(), cpu.float(), 1e-4) < critical


def test_wrong_values_still_fail():
    cpu = _draws(ATOMS, CPU_COUNTS)
    critical = 2.5 * (2 / 400) ** 0.5
    for wrong in ([a * 0.5 for a in ATOMS], [a + 5.0 for a in ATOMS]):  # missing 1/(1-p) scale; an offset
        assert harness._random_statistic(_draws(wrong, TPU_COUNTS).float(), cpu.float(), 1e-4) > critical
    skewed = _draws(ATOMS, [100, 100, 50, 50, 50, 50])  # wrong keep probability: frequencies differ
    assert harness._random_statistic(skewed.float(), cpu.float(), 1e-4) > critical


def test_continuous_draws_use_plain_ks():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2000, generator=gen), torch.randn(2000, generator=gen)
    assert harness._random_statistic(a, b, 2e-2) == harness._ks_statistic(a, b)
    assert harness._random_statistic(a + 0.5, b, 2e-2) > 0.15


def test_shifted_statistic_is_ks_at_zero_tolerance():
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(300, generator=gen), torch.randn(500, generator=gen) + 0.2
    assert abs(harness._ks_statistic_shifted(a, b, 0.0) - harness._ks_statistic(a, b)) < 1e-12
