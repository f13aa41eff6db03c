"""torch.tpu's legacy typed-storage classes (torchtpu/legacy_storage.py): what torch 2.13 gives a CUDA tensor,
`torch.cuda.FloatStorage` and its kin, a tpu tensor gets from `torch.tpu` (storage_type() was None)."""

import warnings

import pytest
import torch

HELD = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex128, torch.complex64]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "TypedStorage is deprecated"
        yield


@pytest.mark.parametrize("dtype", HELD, ids=str)
def test_storage_type_is_the_tpu_class_as_cuda_has_its_own(tpu, dtype):
    name = torch.storage._dtype_to_storage_type_map()[dtype]
    t = torch.ones(4, dtype=dtype, device=tpu)
    cls = t.storage_type()
    assert cls is getattr(torch.tpu, name) and cls.__name__ == getattr(torch.cuda, name).__name__
    assert cls is not getattr(torch, name)  # CPU's class makes CPU storages
    assert isinstance(t.storage(), cls) and not isinstance(t.storage(), getattr(torch, name))
    assert not isinstance(torch.ones(4, dtype=dtype).storage(), cls)
    assert cls.dtype == dtype


def test_the_classes_make_tpu_storages():
    made = torch.tpu.FloatStorage(5)
    assert made.device.type == "tpu" and made.dtype == torch.float32 and made.size() == 5
    from_list = torch.tpu.LongStorage([3, -1, 7])
    assert from_list.device.type == "tpu" and from_list.tolist() == [3, -1, 7]
    t = torch.tensor(from_list, dtype=torch.int64, device="tpu")
    assert torch.equal(t.cpu(), torch.tensor([3, -1, 7]))
    wrapped = torch.tpu.IntStorage(wrap_storage=torch.arange(4, dtype=torch.int32, device="tpu").untyped_storage())
    assert wrapped.tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="Device of 'wrap_storage' must be tpu, but got cpu"):
        torch.tpu.IntStorage(wrap_storage=torch.arange(4, dtype=torch.int32).untyped_storage())
    with pytest.raises(RuntimeError, match="from_buffer: Not available for tpu storage"):
        torch.tpu.FloatStorage.from_buffer(b"\0\0\0\0")


def test_dtypes_without_a_tpu_class_still_have_none():
    """uint16 has no legacy class anywhere (CPU's storage_type() is None too); the quantized classes are not
    defined for tpu, which holds no quantized tensor."""
    assert torch.empty(2, dtype=torch.uint16).storage_type() is None
    assert torch.empty(2, dtype=torch.uint16, device="tpu").storage_type() is None
    assert not hasattr(torch.tpu, "QInt8Storage")
