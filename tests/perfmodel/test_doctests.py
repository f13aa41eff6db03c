"""The examples in the perfmodel docstrings run."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["collectives", "config", "flops", "training", "layout_search"])
def test_docstring_examples(name):
    mod = importlib.import_module(f"torchtpu.perfmodel.{name}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0
