"""torchtpu.sim must stay torch-free (DESIGN: only torchtpu/ imports torch) and cost must not see values."""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "sim"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


def test_no_torch_import_in_sim_sources():
    files = sorted(SIM.rglob("*.py"))
    assert files
    for f in files:
        bad = {n for n in _imports(f) if n == "torch" or n.startswith("torch.")}
        assert not bad, f"{f} imports {bad}"


def test_cost_layer_imports_no_value_code():
    for name in ("cost.py", "systolic.py", "timeline.py", "chips.py"):
        names = _imports(SIM / name)
        value_code = ("numerics", "mxu", "mxu_kernel", "conv", "numba")
        assert not {n for n in names if n.lstrip(".") in value_code}


def test_sim_modules_load_without_torch():
    """Load torchtpu.sim from its folder (skipping the torchtpu parent __init__) with torch blocked."""
    code = textwrap.dedent(f"""
        import importlib, importlib.util, sys, types
        sys.modules['torch'] = None  # any 'import torch' now raises ImportError
        parent = types.ModuleType('torchtpu'); parent.__path__ = []
        sys.modules['torchtpu'] = parent
        spec = importlib.util.spec_from_file_location(
            'torchtpu.sim', {str(SIM / '__init__.py')!r}, submodule_search_locations=[{str(SIM)!r}])
        mod = importlib.util.module_from_spec(spec); sys.modules['torchtpu.sim'] = mod
        spec.loader.exec_module(mod)
        for sub in {sorted(p.stem for p in SIM.glob("*.py") if p.stem != "__init__")!r}:
            importlib.import_module('torchtpu.sim.' + sub)
        assert mod.get_chip('v5e').name == 'v5e'
        print('ok')
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
