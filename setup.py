"""Maps the top-level folders to their import names (torchtpu, torchtpu.drivers, torchtpu.sim, torchtpu.perfmodel)
and builds the C++ shim (torchtpu/csrc) into the wheel as `torchtpu._shim`, so that an installed torchtpu needs no
compiler. An editable install (`pip install -e .`) skips that build: torchtpu._native JIT-builds the shim from the
checkout's sources on first import and caches it, so editing csrc/ needs no reinstall.
"""

import sys
from pathlib import Path

from setuptools import setup

ROOTS = {
    "torchtpu": "torchtpu",
    "torchtpu.drivers": "drivers",
    "torchtpu.sim": "sim",
    "torchtpu.perfmodel": "perfmodel",
}
SHIM_SOURCES = sorted(str(p) for p in Path("torchtpu/csrc").glob("*.cpp"))  # as torchtpu/_native.py's JIT build


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


def _extensions() -> tuple[list, dict]:
    if "editable_wheel" in sys.argv or "develop" in sys.argv:
        return [], {}
    import numpy
    from torch.utils.cpp_extension import BuildExtension, CppExtension

    ext = CppExtension("torchtpu._shim", SHIM_SOURCES, include_dirs=[numpy.get_include()],
                       extra_compile_args=["-O2", "-DNDEBUG", "-g0"])  # _native.SHIM_CFLAGS, and -g0
    return [ext], {"build_ext": BuildExtension}


packages, package_dir = _packages()
ext_modules, cmdclass = _extensions()
setup(packages=packages, package_dir=package_dir, ext_modules=ext_modules, cmdclass=cmdclass)
