"""Matplotlib figures for the perfmodel: roofline with ops placed on it, MFU vs chip count, step-time breakdown,
precision cost. Each function returns a `matplotlib.figure.Figure` (no pyplot state; save with `save`).
Every figure has axis labels with units, a title and a legend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from torchtpu.perfmodel.ops import OpCost, matmul_cost
from torchtpu.perfmodel.roofline import chip_roofline
from torchtpu.perfmodel.training import StepReport

__all__ = ["plot_cost_per_million", "plot_mfu_vs_chips", "plot_precision_cost", "plot_roofline",
           "plot_step_breakdown", "save"]

_KIND_MARKERS = {"matmul": "o", "attention": "s", "elementwise": "^", "moe_matmul": "D"}


def save(fig: Figure, path: str | Path, dpi: int = 110) -> Path:
    """Write a figure as PNG (creating the folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def plot_roofline(chips: Sequence[str] = ("v5e", "v5p", "v6e", "v7x"),
                  ops: Mapping[str, Iterable[OpCost]] | None = None, dtype: str = "bfloat16",
                  title: str | None = None) -> Figure:
    """HBM rooflines of `chips` (log-log), with ops per chip placed at (intensity, achieved FLOP/s)."""
    fig = Figure(figsize=(8, 5.5))
    ax = fig.add_subplot()
    x = np.logspace(-1, 5, 400)
    colors = {}
    for name in chips:
        r = chip_roofline(name, dtype)
        line, = ax.plot(x, r.attainable(x) / 1e12, lw=2,
                        label=f"{r.chip.display_name}: {r.peak / 1e12:.0f} TFLOP/s, {r.hbm_bw / 1e9:.0f} GB/s "
                              f"(ridge {r.hbm_critical_intensity:.0f} FLOP/B)")
        colors[name] = line.get_color()
        ax.axvline(r.hbm_critical_intensity, color=line.get_color(), ls=":", lw=1)
    seen: set[str] = set()
    offsets = ((4, 4), (4, -11), (-34, 5), (-34, -11), (4, 14), (-34, 15))
    for j, (name, op_list) in enumerate((ops or {}).items()):
        r = chip_roofline(name, dtype)
        placed: dict[tuple[int, int], int] = {}
        for p in r.place(op_list):
            marker = _KIND_MARKERS.get(p.kind, "o")
            y = p.achieved / 1e12
            ax.scatter(p.intensity, y, color=colors.get(name, "k"), marker=marker, s=36, edgecolor="k",
                       linewidths=0.5, zorder=3)
            if j == 0:  # label the first chip's ops only; the others sit at the same intensities
                cell = (round(np.log10(p.intensity) * 4), round(np.log10(y) * 4))
                k = placed.get(cell, 0)
                placed[cell] = k + 1
                ax.annotate(p.name, (p.intensity, y), fontsize=7, xytext=offsets[k % len(offsets)],
                            textcoords="offset points")
            seen.add(p.kind)
    for kind in sorted(seen):
        ax.scatter([], [], marker=_KIND_MARKERS.get(kind, "o"), color="grey", edgecolor="k", label=f"op: {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel(f"attainable {dtype} throughput (TFLOP/s per chip)")
    ax.set_title(title or "TPU rooflines (HBM)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def plot_mfu_vs_chips(predicted: Mapping[str, tuple[Sequence[int], Sequence[float]]],
                      published: Mapping[str, tuple[Sequence[int], Sequence[float]]] | None = None,
                      title: str = "MFU vs chip count") -> Figure:
    """Predicted MFU lines (and published points, same colour) against chip count (log2 axis)."""
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    top = 0.0
    for label, (chips, mfu) in predicted.items():
        top = max(top, *mfu, *(published[label][1] if published and label in published else ()))
        line, = ax.plot(chips, 100 * np.asarray(mfu), marker="o", label=f"{label} (predicted)")
        if published and label in published:
            pc, pm = published[label]
            ax.scatter(pc, 100 * np.asarray(pm), marker="x", s=60, color=line.get_color(),
                       label=f"{label} (published)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 100 * top * 1.2)  # from zero: the scaling trend at its true size
    ax.set_xlabel("chips")
    ax.set_ylabel("MFU (%)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_step_breakdown(reports: Mapping[str, StepReport], title: str = "Training step time breakdown") -> Figure:
    """Stacked bars of where each step's time goes (compute phases, exposed communication, optimizer)."""
    fig = Figure(figsize=(max(6, 1.3 * len(reports) + 3), 5))
    ax = fig.add_subplot()
    keys: list[str] = []
    for r in reports.values():
        keys.extend(k for k in r.breakdown if k not in keys)
    bottom = np.zeros(len(reports))
    labels = list(reports)
    for k in keys:
        vals = np.array([reports[lab].breakdown.get(k, 0.0) for lab in labels])
        ax.bar(labels, vals, bottom=bottom, label=k.replace("_", " "))
        bottom += vals
    for i, lab in enumerate(labels):
        ax.annotate(f"MFU {100 * reports[lab].mfu:.0f}%", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("seconds per step")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def plot_precision_cost(chips: Sequence[str] = ("v5e", "v6e"), sizes: Sequence[int] = (128, 256, 512, 1024, 2048,
                        4096, 8192), title: str = "float32 matmul cost by precision") -> Figure:
    """Time of an N x N x N float32 matmul at DEFAULT / HIGH / HIGHEST (1/3/6 bf16 passes), per chip."""
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    styles = {"DEFAULT": "-", "HIGH": "--", "HIGHEST": ":"}
    for chip in chips:
        color = None
        for prec, ls in styles.items():
            t = [matmul_cost(chip, n, n, n, in_bytes=4, out_bytes=4, precision=prec).seconds for n in sizes]
            line, = ax.plot(sizes, np.asarray(t) * 1e6, ls=ls, marker="o", color=color, label=f"{chip} {prec}")
            color = line.get_color()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size N (N x N @ N x N, float32 operands)")
    ax.set_ylabel("time (us)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_cost_per_million(rows: Sequence[Mapping[str, object]], title: str = "Cost per million tokens") -> Figure:
    """Two panels for candidate layouts: USD per 1e6 tokens (rows with a price) and tokens/s per chip.

    Each row: {'label': str, 'chip': str, 'usd_per_mtok': float | None, 'tokens_per_s_per_chip': float}.
    """
    fig = Figure(figsize=(11, max(3.5, 0.35 * len(rows) + 1.5)))
    ax_cost, ax_tput = fig.subplots(1, 2, sharey=True)
    labels = [str(r["label"]) for r in rows]
    y = np.arange(len(rows))
    chips = sorted({str(r["chip"]) for r in rows})
    palette = {c: f"C{i}" for i, c in enumerate(chips)}
    colors = [palette[str(r["chip"])] for r in rows]
    cost = [float(r["usd_per_mtok"]) if r.get("usd_per_mtok") is not None else 0.0 for r in rows]
    ax_cost.barh(y, cost, color=colors)
    for i, r in enumerate(rows):
        if r.get("usd_per_mtok") is None:
            ax_cost.annotate("no price: set a user price", (0, i), va="center", fontsize=7)
    ax_tput.barh(y, [float(r["tokens_per_s_per_chip"]) for r in rows], color=colors)
    ax_cost.set_yticks(y, labels, fontsize=7)
    ax_cost.invert_yaxis()
    ax_cost.set_xlabel("USD per million training tokens")
    ax_tput.set_xlabel("tokens / s per chip")
    for c, col in palette.items():
        ax_tput.barh([], [], color=col, label=c)
    ax_tput.legend(fontsize=8, loc="lower right")
    for ax in (ax_cost, ax_tput):
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(title)
    return fig
