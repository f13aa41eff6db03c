"""The perfmodel notebooks run top to bottom (small inputs) and save their figures to notebooks/figures/."""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
FIGURES = {
    "01_roofline.ipynb": ["roofline_chips.png", "roofline_llama8b_ops.png"],
    "02_precision_cost.ipynb": ["precision_cost.png", "precision_step.png"],
    "03_scaling.ipynb": ["scaling_dense.png", "scaling_moe.png", "step_breakdown.png"],
    "04_defer_and_fuse.ipynb": ["defer_and_fuse.png", "projection.png"],
    "05_what_if.ipynb": ["what_if_cost.png"],
}


def test_notebooks_are_committed_without_outputs():
    for name in FIGURES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.get("outputs") and cell.get("execution_count") is None, name


@pytest.fixture(scope="module")
def kernel():
    """One kernel for the three notebooks (each would otherwise pay kernel start-up and imports again)."""
    from jupyter_client.manager import KernelManager

    old = {k: os.environ.get(k) for k in ("PERFMODEL_NB_QUICK", "MPLBACKEND")}
    os.environ.update(PERFMODEL_NB_QUICK="1", MPLBACKEND="Agg")
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(NOTEBOOKS))
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.sim_only(
    "the notebook plots the sim's simulated costs (stats hbm_bytes, device_seconds) and timeline records"))
    if n == "04_defer_and_fuse.ipynb" else n for n in sorted(FIGURES)])
def test_notebook_executes_and_saves_figures(name, kernel):
    for fig in FIGURES[name]:
        (NOTEBOOKS / "figures" / fig).unlink(missing_ok=True)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, km=kernel, timeout=120, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on any failing cell
    for fig in FIGURES[name]:
        path = NOTEBOOKS / "figures" / fig
        assert path.exists() and path.stat().st_size > 10_000, path
