"""torchtpu.perfmodel never imports torch (DESIGN: only torchtpu/ does) and never imports simulator value code."""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "perfmodel"
SIM = ROOT / "sim"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    return names


def test_sources_import_neither_torch_nor_sim_value_kernels():
    files = sorted(PERF.rglob("*.py"))
    assert len(files) > 10
    value_code = {"torchtpu.sim.mxu", "torchtpu.sim.mxu_kernel", "torchtpu.sim.kernels", "torchtpu.sim.numerics",
                  "torchtpu.sim.conv", "numba"}
    for f in files:
        names = _imports(f)
        assert not {n for n in names if n == "torch" or n.startswith("torch.")}, f
        assert not names & value_code, f


def test_perfmodel_runs_with_torch_blocked():
    """Load torchtpu.sim and torchtpu.perfmodel from their folders (skipping torchtpu/__init__) without torch."""
    code = textwrap.dedent(f"""
        import importlib, importlib.util, sys, types
        sys.modules['torch'] = None
        parent = types.ModuleType('torchtpu'); parent.__path__ = []
        sys.modules['torchtpu'] = parent
        for name, folder in (('torchtpu.sim', {str(SIM)!r}), ('torchtpu.perfmodel', {str(PERF)!r})):
            spec = importlib.util.spec_from_file_location(name, folder + '/__init__.py',
                                                          submodule_search_locations=[folder])
            mod = importlib.util.module_from_spec(spec); sys.modules[name] = mod
            spec.loader.exec_module(mod)
        from torchtpu.perfmodel import train_step, serve, search, validate
        r = train_step('llama3.1-8b', 'v5e', 16, 'fsdp=16', global_batch=32, seq_len=2048)
        assert r.mfu > 0
        assert serve('llama3.1-8b', 'v5e', 8, batch=4).decode_step_seconds > 0
        assert len(validate()) > 30
        assert not any(m == 'numba' or m.startswith('numba.') for m in sys.modules)
        print('ok')
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
