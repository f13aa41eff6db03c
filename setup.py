"""Maps the top-level folders to their import names (torchtpu, torchtpu.drivers, torchtpu.sim, torchtpu.perfmodel)."""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "torchtpu": "torchtpu",
    "torchtpu.drivers": "drivers",
    "torchtpu.sim": "sim",
    "torchtpu.perfmodel": "perfmodel",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = [], {}
    for name, folder in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder)
            if rel.parts and (rel.parts[0] in ("drivers", "sim", "perfmodel") and folder == "torchtpu"):
                continue
            pkg = ".".join((name, *rel.parts))
            packages.append(pkg)
            package_dir[pkg] = str(init.parent)
    return packages, package_dir


packages, package_dir = _packages()
setup(packages=packages, package_dir=package_dir)
