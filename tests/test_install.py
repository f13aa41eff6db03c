"""Installs: the wheel carries everything the package reads (headers, data, the built shim), the metadata is
current, a backend that already took PrivateUse1 gives a clear error while `import torch` keeps working, and (slow)
a wheel built from the checkout installs into a fresh venv and passes the device tests there."""

from __future__ import annotations

import ast
import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_package_data_covers_every_non_python_file_the_package_reads():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    folders = {"torchtpu": ROOT / "torchtpu", "torchtpu.sim": ROOT / "sim", "torchtpu.perfmodel": ROOT / "perfmodel"}
    for package, folder in folders.items():
        tracked = subprocess.run(["git", "ls-files", str(folder)], capture_output=True, text=True, cwd=ROOT,
                                 check=True).stdout.split()
        for path in tracked:
            rel = os.path.relpath(ROOT / path, folder)
            if rel.endswith(".py"):
                continue
            assert any(fnmatch.fnmatch(rel, pattern) for pattern in data.get(package, [])), (package, rel)


def test_the_shim_sources_are_the_ones_setup_builds(monkeypatch):
    from torchtpu import _native

    tree = ast.parse((ROOT / "setup.py").read_text())
    expr = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "SHIM_SOURCES")
    monkeypatch.chdir(ROOT)  # setup.py runs from the source tree
    built = eval(compile(ast.Expression(expr), "setup.py", "eval"), {"Path": Path})  # noqa: S307
    every = sorted((ROOT / "torchtpu" / "csrc").glob("*.cpp"))
    assert built == [f"torchtpu/csrc/{p.name}" for p in every]
    assert [p.name for p in _native._SOURCES] == [p.name for p in every]


def test_license_metadata_is_spdx():
    project = PYPROJECT["project"]
    assert project["license"] == "BSD-3-Clause"
    assert all((ROOT / f).is_file() for f in project["license-files"])
    requires = PYPROJECT["build-system"]["requires"]
    assert "setuptools>=77" in requires and any(r.startswith("torch==") for r in requires)
    torch_pin = next(r for r in requires if r.startswith("torch=="))
    assert torch_pin in (ROOT / "constraints.txt").read_text().split()


@pytest.mark.parametrize("name", ["tpu", "foo"])
def test_another_backend_that_took_privateuse1_gives_a_clear_error(name):
    # Another backend's entry point ran first and renamed PrivateUse1; then torch's autoload (the function
    # `import torch` runs) reaches torchtpu's. Autoload is off for the first import so that the order is fixed.
    code = (f"import torch\ntorch.utils.rename_privateuse1_backend({name!r})\ntorch._import_device_backends()\n"
            "print(torch.ones(2).sum().item(), torch._C._get_privateuse1_backend_name())\n"
            "try:\n    import torchtpu\nexcept RuntimeError as e:\n    print(type(e).__name__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2.0", name, "BackendConflictError"]
    assert r.stderr.count("could not register the 'tpu' device") == 1
    assert f"already renamed PyTorch's PrivateUse1 backend to {name!r}" in r.stderr


def test_the_conflict_is_an_error_for_an_explicit_import(tmp_path):
    code = "import torch; torch.utils.rename_privateuse1_backend('foo'); import torchtpu"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode != 0 and "BackendConflictError" in r.stderr and "'foo'" in r.stderr


@pytest.mark.slow
def test_a_wheel_installs_into_a_fresh_venv_and_runs_without_a_compiler(tmp_path):
    r = subprocess.run(["bash", str(ROOT / "scripts" / "wheel_smoke.sh"), str(tmp_path)], capture_output=True,
                       text=True, env={**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "wheel ok" in r.stdout and " passed" in r.stdout
