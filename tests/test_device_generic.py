"""PyTorch-style device-generic tests (tests/device_generic/), instantiated for CPU and for "tpu" (PrivateUse1)
with `instantiate_device_type_tests`, as PyTorch's own test files are; the CPU copies check the tests themselves.
Tests that fail on "tpu" because of a known bug are expected failures with their cause (device_generic/xfail.py),
so they turn red when the bug is fixed; `TORCHTPU_DG_RAW=1` runs without that table (to measure pass rates)."""

from __future__ import annotations

import os

from device_generic.autograd_nn import TestAutogradDeviceType, TestNNDeviceType
from device_generic.mechanisms import (
    TestIndexing,
    TestReductions,
    TestShapeOps,
    TestSortAndSelect,
    TestTensorCreation,
    TestTypePromotion,
    TestViewOps,
)
from device_generic.opinfo import TestCommonDevice
from device_generic.xfail import apply_expected_failures
from torch.testing._internal.common_device_type import instantiate_device_type_tests

GENERIC = (TestViewOps, TestIndexing, TestTypePromotion, TestTensorCreation, TestReductions, TestSortAndSelect,
           TestShapeOps, TestAutogradDeviceType, TestNNDeviceType, TestCommonDevice)

for _cls in GENERIC:
    globals()[_cls.__name__] = _cls
    instantiate_device_type_tests(_cls, globals(), only_for=("cpu", "privateuse1"))

if os.environ.get("TORCHTPU_DG_RAW") != "1":
    apply_expected_failures(globals())
