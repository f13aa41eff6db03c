"""pytest conftest that scripts/pytorch_device_tests.sh puts beside PyTorch's test files: compatibility of the
April 2023 files with the installed torch's test harness, nothing about the device.

- setUp recursion: torch 2.13's instantiate_device_type_tests makes each device class a subclass of the generic
  class and copies its setUp/tearDown onto it; a generic class whose setUp calls `super(self.__class__,
  self).setUp()` (test_linalg.py's TestLinalg) then finds its own setUp again through the generic base and recurses
  without end, on every device. In April 2023 the device class did not inherit the generic class's methods;
  removing setUp/tearDown from the generic class once they are copied restores that.
- Redefinition: for the same reason a generic class defining both `test_x` and a CPU-only `test_x_cpu` (test_nn.py's
  test_softmax_cpu, test_activations_bfloat16_cpu) fails 2.13's "Redefinition of test test_x_cpu" check; the
  CPU-only twin is renamed `test_x_cpu_only` first (it still runs, under that name).
- Names the 2023 files import that 2.13's testing package renamed or dropped: `common_utils.skipIfMps` (now
  skipIfMPS), `common_cuda.tf32_is_not_fp32` (no CUDA here: False), `common_nn.new_module_tests` (now
  `get_new_module_tests()`), `torch._C.has_mkldnn`, `common_methods_invocations.binary_ufuncs_and_refs` (2.13's
  `binary_ufuncs` holds the refs). Each is bound only where the installed torch lacks it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.testing._internal.common_cuda as _common_cuda
import torch.testing._internal.common_device_type as _cdt
import torch.testing._internal.common_methods_invocations as _cmi
import torch.testing._internal.common_nn as _common_nn
import torch.testing._internal.common_utils as _common_utils


def _bind_missing(module: Any, name: str, make: Any) -> None:
    if not hasattr(module, name):
        setattr(module, name, make())


_bind_missing(_common_utils, "skipIfMps", lambda: _common_utils.skipIfMPS)
_bind_missing(_common_cuda, "tf32_is_not_fp32", lambda: (lambda: False))
_bind_missing(_common_nn, "new_module_tests", _common_nn.get_new_module_tests)
_bind_missing(torch._C, "has_mkldnn", torch.backends.mkldnn.is_available)
_bind_missing(_cmi, "binary_ufuncs_and_refs", lambda: _cmi.binary_ufuncs)

_instantiate = _cdt.instantiate_device_type_tests


def _rename_cpu_only_twins(generic_test_class: type) -> None:
    members = generic_test_class.__dict__
    for name in [n for n in members if n.startswith("test_") and n.endswith("_cpu")]:
        if name[: -len("_cpu")] in members:
            setattr(generic_test_class, name + "_only", members[name])
            delattr(generic_test_class, name)


def _instantiate_device_type_tests(generic_test_class: type, scope: dict[str, Any], *args: Any,
                                   **kwargs: Any) -> Any:
    _rename_cpu_only_twins(generic_test_class)
    result = _instantiate(generic_test_class, scope, *args, **kwargs)
    for name in ("setUp", "tearDown"):
        if name in generic_test_class.__dict__:
            delattr(generic_test_class, name)
    return result


_cdt.instantiate_device_type_tests = _instantiate_device_type_tests
