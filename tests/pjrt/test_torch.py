"""The torch stack on pjrt(cpu), in subprocesses (the driver is chosen once per process): storage semantics seen
from torch, and the demo model training to the sim's losses at HIGHEST."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, torch, torchtpu
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch
    out = {"driver": torchtpu.stats()["driver"]}
    x = torch.arange(12.0).reshape(3, 4)
    t = x.to("tpu")
    t[1, 1:3] += 10.0                 # in-place through a view
    x[1, 1:3] += 10.0
    v = t.view(torch.int32)           # the same storage through another dtype
    out["views"] = torch.equal(t.cpu(), x) and torch.equal(v.cpu(), x.view(torch.int32))
    t2 = t.t().contiguous()
    out["transpose"] = torch.equal(t2.cpu(), x.t())
    out["item"] = t.sum().item() == x.sum().item()
    torch.manual_seed(0)
    cfg = GPTConfig()
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    losses = []
    with torchtpu.precision("HIGHEST"):
        for _ in range(STEPS):
            xb, yb = synthetic_batch(cfg, 4, gen)
            loss = model.loss(xb.to("tpu"), yb.to("tpu"))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    out["losses"] = losses
    out["fallbacks"] = torchtpu.fallback_counts()
    print(json.dumps(out))
''')


def _run(env: dict[str, str], steps: int = 3) -> dict:
    full = {**os.environ, **env}
    proc = subprocess.run([sys.executable, "-c", SCRIPT.replace("STEPS", str(steps))], env=full,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_torch_on_pjrt_cpu_matches_the_sim():
    pjrt = _run({"TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"})
    sim = _run({"TORCHTPU_DRIVER": "sim"})
    assert pjrt["driver"] == "pjrt" and sim["driver"] == "sim"
    for key in ("views", "transpose", "item"):
        assert pjrt[key], key
    assert pjrt["fallbacks"] == {}
    for a, b in zip(pjrt["losses"], sim["losses"]):
        assert abs(a - b) <= 1e-5 * abs(b), (pjrt["losses"], sim["losses"])
    assert pjrt["losses"][-1] < pjrt["losses"][0]
