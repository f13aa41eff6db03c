"""complex32 through the torch stack on pjrt(cpu) (XLA has no complex32: held as ui32 words, converted through
complex<f32>) against CPU torch, bit for bit, in a subprocess (the driver is chosen once per process): a host round
trip, arithmetic, abs, a constant fill, conversions and movement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, warnings, torch, torchtpu
    warnings.simplefilter("ignore")
    g = torch.Generator().manual_seed(5)
    a, b = (torch.view_as_complex(torch.randn(4, 6, 2, generator=g) * 4).to(torch.complex32) for _ in range(2))
    torch.view_as_real(a).view(-1)[3] = float("inf")
    torch.view_as_real(b).view(-1)[7] = float("nan")
    calls = {
        "round_trip": lambda a, b: a, "mul": lambda a, b: a * b + 0.1j, "abs": lambda a, b: a.abs(),
        "fill": lambda a, b: a.clone().fill_(1 / 3 - 2j), "to64": lambda a, b: a.to(torch.complex64),
        "from64": lambda a, b: (a.to(torch.complex64) * 1.001).to(torch.complex32),
        "move": lambda a, b: torch.cat([a[:, 1:], b.t().contiguous()[:4]], 1).roll(1, 0),
        "where": lambda a, b: torch.where(a.real > 0, a, b),
    }
    out = {"driver": torchtpu.stats()["driver"]}
    for name, fn in calls.items():
        want, got = fn(a, b), fn(a.to("tpu"), b.to("tpu")).cpu()
        parts = lambda t: torch.view_as_real(t) if t.is_complex() else t
        ints = lambda p: p.view(torch.int16 if p.element_size() == 2 else torch.int32)
        bits = lambda t: torch.where(parts(t).isnan(), -1, ints(parts(t))).tolist()  # NaNs alike
        out[name] = [str(got.dtype), str(want.dtype), bits(got), bits(want)]
    out["fallbacks"] = torchtpu.fallback_counts()
    print(json.dumps(out))
''')


def test_complex32_on_pjrt_cpu_is_cpus_bits():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("driver") == "pjrt" and out.pop("fallbacks") == {}
    for name, (got_dtype, want_dtype, got, want) in out.items():
        assert got_dtype == want_dtype and got == want, name
