"""`torchtpu perf` sub-command (add_perf_parser / run_perf), without going through torchtpu.cli."""

import argparse
import json

import pytest

from torchtpu.cli_perf import add_perf_parser, run_perf


def _run(capsys, *argv):
    p = argparse.ArgumentParser(prog="torchtpu")
    add_perf_parser(p.add_subparsers(dest="command"))
    code = run_perf(p.parse_args(["perf", *argv]))
    return code, capsys.readouterr().out


def test_train_json(capsys):
    code, out = _run(capsys, "--model", "maxtext-32b", "--chip", "v5e", "--chips", "512", "--per-device-batch",
                     "4", "--parallelism", "fsdp=-1", "--causal", "full", "--json")
    d = json.loads(out)
    assert code == 0
    for key in ("step_seconds", "mfu", "tokens_per_second", "memory_per_chip_bytes", "layout"):
        assert key in d
    assert d["layout"] == "fsdp=256,dcn_dp=2" and 0.4 < d["mfu"] < 0.8


def test_search_text_and_json(capsys):
    code, out = _run(capsys, "--model", "llama3.1-8b", "--chip", "v5e", "--chips", "16", "--batch", "64",
                     "--search", "--top", "3")
    assert code == 0 and out.startswith("best:") and "| 3 |" in out
    code, out = _run(capsys, "--model", "llama3.1-8b", "--chip", "v5e", "--chips", "16", "--batch", "64",
                     "--search", "--json")
    d = json.loads(out)
    assert d["mfu"] > 0 and d["search"]["best"]["layout"] == d["layout"]


def test_serve_validate_list_and_errors(capsys, tmp_path):
    code, out = _run(capsys, "--model", "llama3.1-8b", "--chip", "v5e", "--chips", "8", "--serve",
                     "--serve-batch", "8", "--json")
    assert code == 0 and json.loads(out)["decode_tokens_per_second"] > 0
    code, out = _run(capsys, "--validate")
    assert code == 0 and "published MFU" in out
    code, out = _run(capsys, "--list-models")
    assert "llama3.1-70b" in out.split()
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({"hidden_size": 2048, "num_hidden_layers": 8, "num_attention_heads": 16,
                              "intermediate_size": 8192, "vocab_size": 32000}))
    code, out = _run(capsys, "--model", str(hf), "--chip", "v6e", "--chips", "8", "--batch", "16")
    assert code == 0 and "MFU" in out
    assert _run(capsys)[0] == 2
    assert _run(capsys, "--model", "nope")[0] == 2
    assert _run(capsys, "--model", "llama3.1-8b", "--chips", "256", "--parallelism", "tp=3")[0] == 2


def test_cli_module_does_not_import_torch_at_module_level():
    import ast
    from pathlib import Path

    import torchtpu.cli_perf as mod

    tree = ast.parse(Path(mod.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in top if isinstance(n, ast.ImportFrom)}
    assert not {n for n in names if n == "torch" or n.startswith("torch.")}
    with pytest.raises(SystemExit):
        _run_help()


def _run_help():
    p = argparse.ArgumentParser(prog="torchtpu")
    add_perf_parser(p.add_subparsers(dest="command"))
    p.parse_args(["perf", "--help"])


def test_search_explains_rejections_and_new_flags(capsys):
    code, out = _run(capsys, "--model", "palm-540b", "--chip", "v4", "--chips", "6144", "--slices", "2",
                     "--batch", "2048", "--search", "--remat", "full")
    assert code == 1 and "no layout fits" in out and "dcn:" in out and "batch:" in out
    code, out = _run(capsys, "--model", "llama3.1-8b", "--chip", "v5p", "--chips", "64", "--batch", "8",
                     "--seq", "65536", "--parallelism", "fsdp=8,cp=8", "--cp-mode", "ring", "--json")
    assert code == 0 and json.loads(out)["cp_mode"] == "ring"
    code, out = _run(capsys, "--model", "llama3.1-70b", "--chip", "v6e", "--chips", "8", "--serve", "--tp", "4",
                     "--serve-batch", "4", "--quant", "int8", "--draft", "llama3.1-8b", "--acceptance", "0.7",
                     "--page-tokens", "128", "--json")
    d = json.loads(out)
    assert code == 0 and d["quant"] == "int8" and d["tokens_per_round"] > 1
    assert _run(capsys, "--model", "llama3.1-8b", "--chip", "v5e", "--chips", "8", "--serve", "--quant", "q4")[0] == 2
