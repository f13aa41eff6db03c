"""complex128 through the torch stack on pjrt(cpu) (complex<f64> in StableHLO) against the sim, in subprocesses
(the driver is chosen once per process): element-wise math, a matmul, a reduction, an FFT and a solve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import torch

SCRIPT = textwrap.dedent('''
    import json, torch, torchtpu
    g = torch.Generator().manual_seed(5)
    a, b = (torch.randn(4, 4, dtype=torch.complex128, generator=g).to("tpu") for _ in range(2))
    out = {"driver": torchtpu.stats()["driver"]}
    results = {
        "elementwise": (a * b + 0.5j).exp() / (a.abs() + 1) - a.sqrt() * b.conj_physical(),
        "matmul": a @ b, "sum": (a * b).sum(0), "fft": torch.fft.fft(a), "solve": torch.linalg.solve(a, b),
        "constant": torch.full((2,), 1 / 3 - 2j, dtype=torch.complex128, device="tpu"),
    }
    for name, t in results.items():
        out[name] = [t.dtype == torch.complex128, torch.view_as_real(t.cpu()).flatten().tolist()]
    out["fallbacks"] = torchtpu.fallback_counts()
    print(json.dumps(out))
''')


def _run(env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_complex128_on_pjrt_cpu_matches_the_sim():
    pjrt = _run({"TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"})
    sim = _run({"TORCHTPU_DRIVER": "sim"})
    assert pjrt["driver"] == "pjrt" and sim["driver"] == "sim"
    assert pjrt["fallbacks"] == {} and sim["fallbacks"] == {}
    for name in ("elementwise", "matmul", "sum", "fft", "solve", "constant"):
        (p_ok, p), (s_ok, s) = pjrt[name], sim[name]
        assert p_ok and s_ok, name
        torch.testing.assert_close(torch.tensor(p, dtype=torch.float64), torch.tensor(s, dtype=torch.float64),
                                   rtol=1e-12, atol=1e-12, msg=name)
