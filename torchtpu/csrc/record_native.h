// DEFER_AND_FUSE's recording hit in C++ (record_native.cpp): what execution/record_fast.py does for a cached op
// whose storage layout and region slots were met before, without running Python per op.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/extension.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace torchtpu {

// A storage kept alive by a pending region's slot (execution/region_ir.py Slot.storage; the shim's StorageKeep, a
// plain CPython type: record_native_keep.cpp): a C++ reference that the cycle collector does not track, where a
// torch.UntypedStorage object is one it tracks and, with one per fresh output held until the flush, scans on every
// collection.
py::object make_storage_keep(const c10::Storage& storage);
// The storage a StorageKeep holds; nullptr when `obj` is not a StorageKeep.
const c10::Storage* kept_storage(PyObject* obj);
// The storage's references, less its own Python object's where nothing else holds that object (a storage made a
// torch.UntypedStorage once keeps it, and the object's reference, while C++ references remain).
size_t storage_references(const c10::Storage& storage);
void bind_storage_keep(py::module& m);

// The `index`th field (record_fast.NATIVE_EVENT_FIELDS or NATIVE_SLOT_FIELDS) of a region_ir.Event (`event`) or Slot
// read in place (borrowed; nullptr where unset, where `obj` is not of that type or the path is off: get the attribute).
PyObject* native_field(PyObject* obj, bool event, size_t index);

// `tensors` as the first items of `list` (a recording entry's operands for the Python path)
void put_tensors(py::list& list, const std::vector<at::Tensor>& tensors);

// storage_layout (fast_launch_key.h) as deferred.record_cached takes it: the bytes and each slot's address.
std::pair<py::bytes, py::tuple> python_layout(const std::vector<at::Tensor>& inputs,
                                              const std::vector<at::Tensor>& outputs);

// Whether the op of `token` (fast_launch.store_record's) on `inputs` writing `outputs` was recorded into the pending
// region here; false, with nothing changed, where record_fast.record_cached must take the call (the items of
// `buffers` after the inputs' places are the call's 0-d scalar buffers; the inputs' places are not set yet).
bool record_native(PyObject* token, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                   PyObject* buffers, PyObject* layout, PyObject* addresses, int64_t device);

void bind_record_native(py::module& m);

}  // namespace torchtpu
