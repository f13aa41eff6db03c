"""The advisor's HTML report: owns `write_html` and `plots` (matplotlib, PNGs embedded): the step's device time
by op kind and by bound, a roofline of the step's executables against the chip, and MXU utilisation along
the simulated timeline; then the ranked findings."""

from __future__ import annotations

import base64
import html
import io
import os
from typing import Any

__all__ = ["plots", "write_html"]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def plots(advice: Any) -> dict[str, bytes]:
    """name -> PNG bytes: breakdown (by op kind and by bound), roofline, mxu_timeline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from torchtpu.profiler import resim

    launches = advice.window.launches
    chip = resim.cost_model(None).chip
    by_kind: dict[str, float] = {}
    by_bound: dict[str, float] = {}
    for la in launches:
        kind = la.record.name.split("::")[-1].split(".")[1 if la.record.name.startswith("aten.") else 0] \
            if la.record.name.startswith(("aten.", "aten::")) else la.record.name
        by_kind[kind] = by_kind.get(kind, 0.0) + la.seconds
        by_bound[la.record.bound] = by_bound.get(la.record.bound, 0.0) + la.seconds
    out = {}
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    top = sorted(by_kind.items(), key=lambda kv: -kv[1])[:15]
    a.barh([k for k, _ in top][::-1], [v * 1e6 for _, v in top][::-1], color="#4a7ab5")
    a.set_xlabel("simulated device time (us)")
    a.set_title("step by op kind")
    b.bar(list(by_bound), [v * 1e6 for v in by_bound.values()], color="#c2703d")
    b.set_ylabel("simulated device time (us)")
    b.set_title("step by bound")
    out["breakdown"] = _png(fig)

    fig, ax = plt.subplots(figsize=(6, 4.5))
    peak, bw = float(chip.bf16_flops), float(chip.hbm_bw)
    xs = [0.1, peak / bw, 1e5]
    ax.loglog(xs, [min(peak, x * bw) for x in xs], "k-", label=f"{chip.name} roof")
    pts = [(la.record.flops / la.record.hbm_bytes, la.record.flops / la.seconds, la.record.bound)
           for la in launches if la.record.flops > 0 and la.record.hbm_bytes > 0 and la.seconds > 0]
    for bound, color in (("mxu", "#2a9d8f"), ("vpu", "#e9c46a"), ("hbm", "#e76f51"), ("launch", "#8d99ae")):
        sel = [(x, y) for x, y, bd in pts if bd == bound]
        if sel:
            ax.scatter([x for x, _ in sel], [y for _, y in sel], s=14, color=color, label=bound)
    ax.set_xlabel("arithmetic intensity (FLOP / HBM byte)")
    ax.set_ylabel("achieved FLOP/s (simulated)")
    ax.set_title("roofline of the step's executables")
    ax.legend(fontsize=8)
    out["roofline"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 3))
    if launches:
        t0 = advice.window.sim_start[0]
        ax.step([(la.record.start - t0) * 1e6 for la in launches], [la.info["mxu_utilisation"] for la in launches],
                where="post", color="#2a9d8f")
    ax.set_xlabel("simulated time in the step (us)")
    ax.set_ylabel("MXU utilisation")
    ax.set_ylim(0, 1)
    ax.set_title("MXU utilisation over the timeline")
    out["mxu_timeline"] = _png(fig)
    return out


def _time(seconds: float, unit: str) -> str:
    return f"{seconds * 1e3:.1f} ms host compile" if unit == "compile" else f"{seconds * 1e6:.2f}"


def write_html(advice: Any, path: str, png_dir: str | None = None, prefix: str = "") -> str:
    """Writes the report to `path` (PNG plots embedded; also saved as `png_dir`/`prefix`NAME.png if png_dir is
    given); returns path."""
    images = plots(advice)
    if png_dir:
        os.makedirs(png_dir, exist_ok=True)
        for name, data in images.items():
            with open(os.path.join(png_dir, f"{prefix}{name}.png"), "wb") as f:
                f.write(data)
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{html.escape(f.kind)}</td><td>{html.escape(f.title)}</td>"
        f"<td><code>{html.escape(f.where)}</code></td><td>{html.escape(f.evidence)}</td>"
        f"<td>{_time(f.before_s, f.unit)}</td><td>{_time(f.after_s, f.unit)}</td><td>{f.gain:.1%}</td></tr>"
        for i, f in enumerate(advice.findings))
    figures = "".join(f'<h2>{name}</h2><img src="data:image/png;base64,{base64.b64encode(data).decode()}">'
                      for name, data in images.items())
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>torchtpu advise</title><style>"
           "body{font-family:sans-serif;margin:2em} td,th{border:1px solid #ccc;padding:4px;vertical-align:top}"
           "table{border-collapse:collapse}</style></head><body>"
           f"<h1>torchtpu advise: {html.escape(advice.chip)}</h1><p>simulated step "
           f"{advice.step_s * 1e6:.2f} us, {len(advice.window.launches)} launches "
           f"({'training' if advice.train else 'inference'} step)</p>"
           "<table><tr><th>#</th><th>kind</th><th>finding</th><th>where</th><th>evidence</th>"
           "<th>before (us)</th><th>after (us)</th><th>saved</th></tr>" + rows + "</table>" + figures +
           "</body></html>")
    with open(path, "w") as f:
        f.write(doc)
    return path
