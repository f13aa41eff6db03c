"""sim/kernel_cache.py: a cached numba kernel that calls a kernel of another file is recompiled when only the
callee's file changes (numba's own stamp is the caller's file alone, so without the check the old callee runs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torchtpu.sim import kernel_cache

CALLEE = """
from numba import njit


@njit(cache=True)
def step(x):
    return x + {value}
"""
CALLER = """
from numba import njit

from kernels_pkg.callee import step


@njit(cache=True)
def run(x):
    return step(x) * 10
"""
RUN = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
if {check}:
    from torchtpu.sim import kernel_cache
    kernel_cache.check((Path({folder!r}),))
from kernels_pkg.caller import run
print(run(1))
"""


def _package(tmp_path: Path, value: int) -> Path:
    folder = tmp_path / "kernels_pkg"
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / "callee.py").write_text(textwrap.dedent(CALLEE.format(value=value)))
    (folder / "caller.py").write_text(textwrap.dedent(CALLER))
    return folder


def _run(tmp_path: Path, folder: Path, *, check: bool) -> int:
    code = RUN.format(root=str(tmp_path), folder=str(folder), check=check)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.parametrize("check", [False, True])
def test_a_changed_callee_file_recompiles_its_caller(tmp_path: Path, check: bool) -> None:
    folder = _package(tmp_path, 1)
    assert _run(tmp_path, folder, check=check) == 20
    assert list((folder / "__pycache__").glob("caller.*.nbi"))  # the caller's kernel is cached on disk
    (folder / "callee.py").write_text(textwrap.dedent(CALLEE.format(value=2)))  # the caller's file unchanged
    # numba alone keeps the caller's cached code, which holds the old callee (what this module guards against)
    assert _run(tmp_path, folder, check=check) == (30 if check else 20)


def test_an_unchanged_source_keeps_its_cache(tmp_path: Path) -> None:
    folder = _package(tmp_path, 1)
    assert _run(tmp_path, folder, check=True) == 20  # compiles and caches (no cache folder to stamp before)
    assert _run(tmp_path, folder, check=True) == 20  # stamps the cache (none before: dropped once), caches again
    cached = sorted(p.name for p in (folder / "__pycache__").glob("*.nb[ic]"))
    stamp = (folder / "__pycache__" / kernel_cache.STAMP).read_text()
    kernel_cache.check((folder,))
    assert cached and sorted(p.name for p in (folder / "__pycache__").glob("*.nb[ic]")) == cached
    assert stamp == kernel_cache.digest(kernel_cache.kernel_sources((folder,)))


def test_the_simulators_kernels_are_covered() -> None:
    names = {p.name for p in kernel_cache.kernel_sources()}
    assert {"mxu_kernel.py", "mxu_round.py", "numerics.py", "kernels.py"} <= names
