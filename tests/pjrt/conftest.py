"""The pjrt tests run the PJRT driver on JAX's CPU client; they are skipped where jax is not installed."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("jax") is None:  # the pjrt driver tests need jax: pip install 'torchtpu[pjrt]'
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/pjrt/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.pjrt)


@pytest.fixture(scope="session")
def pjrt():
    from torchtpu.drivers.pjrt.driver import PjrtDriver

    return PjrtDriver("cpu")


@pytest.fixture(scope="session")
def sim():
    from torchtpu.drivers.sim.driver import SimDriver

    return SimDriver()
