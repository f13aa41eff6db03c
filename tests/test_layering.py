"""Guards that keep the layers and file sizes as the design says: no upward imports, no torch below torchtpu/.

The layers (DESIGN.md): `torchtpu/` is the only layer that imports torch; `drivers/` may import `torchtpu.drivers`
and `torchtpu.sim`; `sim/` imports only itself; `perfmodel/` imports itself and `torchtpu.sim`. Every import
statement of those folders is read from the source (also imports inside functions), so a lazy import of torch
or of the front end fails here as well.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600

# What each torch-free layer may import from the project, by the import names of the distribution.
ALLOWED_PROJECT_IMPORTS = {
    "sim": ("torchtpu.sim",),
    "drivers": ("torchtpu.drivers", "torchtpu.sim"),
    "perfmodel": ("torchtpu.perfmodel", "torchtpu.sim"),
}
FORBIDDEN_THIRD_PARTY = ("torch", "torchtpu", "functorch", "transformers")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _violations(layer: str) -> list[str]:
    allowed = ALLOWED_PROJECT_IMPORTS[layer]
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for lineno, module in _imported_modules(path):
            top = module.split(".")[0]
            if top not in FORBIDDEN_THIRD_PARTY:
                continue
            if any(module == name or module.startswith(name + ".") for name in allowed):
                continue
            bad.append(f"{path.relative_to(ROOT)}:{lineno} imports {module}")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED_PROJECT_IMPORTS))
def test_torch_free_layers_import_no_torch_and_nothing_above_them(layer: str) -> None:
    assert _violations(layer) == []


def test_the_lint_sees_a_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import torch.nn\n    from torchtpu.ops import registry\n")
    assert [m for _, m in _imported_modules(probe)] == ["torch.nn", "torchtpu.ops"]


def _tracked_sources() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed
            if name.endswith((".py", ".cpp", ".h", ".sh")) and (ROOT / name).is_file()]


def test_every_source_file_is_within_the_line_budget() -> None:
    sources = _tracked_sources()
    assert len(sources) > 50  # the listing itself worked
    too_long = [f"{p.relative_to(ROOT)}: {n} lines" for p in sources
                if (n := len(p.read_text(errors="replace").splitlines())) > MAX_LINES]
    assert too_long == [], f"files over {MAX_LINES} lines (split them by concern): {too_long}"
