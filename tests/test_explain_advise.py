"""explain and advise: an injected recompile and an injected 130-wide matmul are reported with the right
source lines, findings' predicted gains agree with re-simulated runs of the changed model, and the HTML
report has its plots."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu.profiler.advise import step_seconds
from torchtpu.profiler.validate import agrees, measure_finding

pytestmark = pytest.mark.sim_only

ROWS = 8192  # enough streamed rows that the MXU's share of the step is visible


class Net(torch.nn.Module):
    def __init__(self, width: int = 130) -> None:
        super().__init__()
        self.a = torch.nn.Linear(width, width)
        self.b = torch.nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)  # the 130-wide matmul
        return self.b(torch.relu(h))


def _net(width: int) -> tuple[Net, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return Net(width).to("tpu"), (torch.randn(ROWS, width, device="tpu"),)


def _line_of(text: str) -> str:
    import inspect

    lines, start = inspect.getsourcelines(Net.forward)
    return f"{__file__}:{start + next(i for i, s in enumerate(lines) if text in s)}"


def test_explain_reports_recompile_and_graph_break():
    def scaled(x):
        y = x * 2
        print("graph break here")
        return y + 1

    ex = torchtpu.explain(scaled, compile=True, inputs=[(torch.randn(4, device="tpu"),),
                                                         (torch.randn(5, device="tpu"),)])
    first = ex.recompiles[0]
    assert first["function"] == "scaled" and first["where"] == f"{__file__}:{scaled.__code__.co_firstlineno}"
    assert "size mismatch" in first["reason"] and "expected 4, actual 5" in first["reason"]
    assert ex.graph_breaks and ex.graph_breaks[0]["where"] == f"{__file__}:{scaled.__code__.co_firstlineno + 2}"
    assert "print" in ex.graph_breaks[0]["reason"]
    assert ex.graphs and ex.time["launches"] >= 4
    text = str(ex)
    assert "recompiles: 2" in text and "graph breaks: 1" in text


def test_explain_deferred_region_and_time():
    model = torch.nn.Linear(16, 16).to("tpu")

    def step(x):
        with torch.tpu.eager_mode("DEFER_AND_FUSE"):
            loss = model(x).sum()
            loss.backward()
            return loss.item()

    ex = torchtpu.explain(step, torch.randn(4, 16, device="tpu"))
    assert isinstance(ex.result, float)
    region = ex.regions[-1]
    assert region["reason"] == "a value was read (.item())" and region["ops"] >= 3
    assert region["where"] == f"{__file__}:{step.__code__.co_firstlineno + 4}"
    assert ex.time["verdict"].startswith("host-bound") and 0 <= ex.time["device_busy"] <= 1


def test_advise_finds_130_wide_matmul_and_prediction_holds():
    model, inputs = _net(130)
    advice = torchtpu.advise(model, inputs)
    padding = [f for f in advice.findings if f.kind == "padding"]
    assert padding, str(advice)
    f = padding[0]
    assert f.action == {"kind": "dim", "from": 130, "to": 128}
    assert f.where == _line_of("self.a(x)")
    assert f.after_s < f.before_s
    assert f.before_s == pytest.approx(step_seconds(advice.window), rel=1e-9)  # replay = the run
    measured = measure_finding(f, model, inputs, True, rebuild=_net)
    assert agrees(f.after_s, measured, f.before_s), (f.after_s, measured, f.before_s)
    # at HIGHEST the MXU dominates: a larger saving, still as measured
    with torch.tpu.precision("HIGHEST"):
        high = [g for g in torchtpu.advise(model, inputs).findings if g.kind == "padding"][0]
        measured = measure_finding(high, model, inputs, True, rebuild=_net)
    assert high.gain > 0.2 and agrees(high.after_s, measured, high.before_s), (high.after_s, measured)
    # a multiple of the tile gets no padding finding
    clean = torchtpu.advise(*_net(128))
    assert not [g for g in clean.findings if g.kind == "padding"]


def test_advise_precision_and_mode_predictions_hold(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.Tanh(), torch.nn.Linear(512, 256)).to("tpu")
    inputs = (torch.randn(1024, 256, device="tpu"),)
    with torch.tpu.precision("HIGHEST"):
        advice = torchtpu.advise(model, inputs, report=str(tmp_path / "advice.html"))
        kinds = {f.kind: f for f in advice.findings}
        assert "precision" in kinds, str(advice)
        for kind in ("precision", "mode"):
            if kind not in kinds:
                continue
            f = kinds[kind]
            measured = measure_finding(f, model, inputs, True)
            assert agrees(f.after_s, measured, f.before_s), (kind, f.after_s, measured, f.before_s)
    html = (tmp_path / "advice.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and "precision" in html


def test_advise_on_other_chip_and_report_pngs(tmp_path):
    from torchtpu.profiler.report import write_html

    model, inputs = _net(130)
    advice = torchtpu.advise(model, inputs, chip="v6e", train=False)
    assert advice.chip == "v6e"
    here = torchtpu.advise(model, inputs, train=False)
    assert advice.step_s != here.step_s  # priced on the other chip's costs
    write_html(advice, str(tmp_path / "r.html"), png_dir=str(tmp_path / "png"))
    for name in ("breakdown", "roofline", "mxu_timeline"):
        assert (tmp_path / "png" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="valid chips: v4, v5e"):
        torchtpu.advise(model, inputs, chip="v99", train=False)


def test_cli_explain_and_advise(tmp_path, capsys):
    from torchtpu.cli import main

    script = tmp_path / "step.py"
    script.write_text("import torch\n"
                      "x = torch.ones(8, device='tpu')\n"
                      "with torch.tpu.eager_mode('DEFER_AND_FUSE'):\n"
                      "    print((x * 2 + 1).sum().item())\n")
    assert main(["explain", str(script)]) == 0
    out = capsys.readouterr().out
    assert "24.0" in out and "deferred regions flushed: 1" in out and f"{script}:4" in out
    factory = tmp_path / "net.py"
    factory.write_text("import torch\n"
                       "def make():\n"
                       "    return torch.nn.Linear(64, 64).to('tpu'), (torch.randn(8, 64, device='tpu'),)\n")
    assert main(["advise", f"{factory}:make", "--report", str(tmp_path / "a.html")]) == 0
    assert "torchtpu advise on v5e" in capsys.readouterr().out and (tmp_path / "a.html").exists()
    with pytest.raises(SystemExit, match="unknown zoo model 'nope'"):
        main(["advise", "zoo:nope"])


def test_notebook_plots_written_as_png(tmp_path):
    """notebooks/06_advisor.ipynb's model and plots, fast: each plot a non-empty PNG with a sane size."""
    import struct

    from torchtpu.profiler.report import write_html

    model, inputs = _net(130)
    with torch.tpu.precision("HIGHEST"):
        advice = torchtpu.advise(model, inputs)
    write_html(advice, str(tmp_path / "advisor_report.html"), png_dir=str(tmp_path), prefix="advisor_")
    for name in ("breakdown", "roofline", "mxu_timeline"):
        data = (tmp_path / f"advisor_{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) > 10_000, name
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 300 and height >= 200, (name, width, height)


@pytest.mark.slow
def test_advisor_notebook_saves_its_plots():
    from pathlib import Path

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    nb = nbformat.read(notebooks / "06_advisor.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed without outputs
    figures = [notebooks / "figures" / f"advisor_{n}.png" for n in ("breakdown", "roofline", "mxu_timeline")]
    for f in figures:
        f.unlink(missing_ok=True)
    nbclient.NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(notebooks)}}).execute()
    for f in figures:
        assert f.exists() and f.stat().st_size > 10_000, f
