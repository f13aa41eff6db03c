"""Every `TORCHTPU_*` variable, parsed once and validated: `get(name)`, `check_all()`, `table()`.

The table and parsers live in the torch-free `torchtpu.drivers.config` (the drivers read their own options through
it, and layers below torch must not import this package's torch parts); this module is the PyTorch layer's name for
it. `registration.register()` runs `check_all()` before it touches torch, so a bad value fails at import with the
variable's name, the value and the valid set.
"""

from __future__ import annotations

from torchtpu.drivers.config import MAX_DEVICES, VARS, ConfigError, Var, check_all, get, parse, table

__all__ = ["MAX_DEVICES", "VARS", "ConfigError", "Var", "check_all", "get", "parse", "table"]
