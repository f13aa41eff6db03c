// A DEFER_AND_FUSE flush's two walks over the whole region (execution/flush_walks.py): which slots the region
// writes that something besides it still references (region_ir.Slot.referenced_elsewhere for every written slot),
// and the replay key (each event's interned signature id; each slot's IR dtype and bytes). In Python they cost
// ~1 us a slot, a few percent of a small model's step.
#include "record_native.h"

#include <torch/extension.h>

namespace torchtpu {
namespace {

PyObject* interned(const char* name) { return PyUnicode_InternFromString(name); }

py::object get(PyObject* obj, PyObject* name) {
  PyObject* v = PyObject_GetAttr(obj, name);
  if (v == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

// A field of a region's Event or Slot: in place where record_native knows its layout, else the attribute.
PyObject* field(PyObject* obj, bool event, size_t index, PyObject* name, py::object& hold) {
  PyObject* v = native_field(obj, event, index);
  if (v != nullptr) return v;
  hold = get(obj, name);
  return hold.ptr();
}

// region_ir.Slot.referenced_elsewhere() of each written slot: its storage's use count above what the slot holds
// (its StorageKeep, and the flat holder once made).
py::list live_slots(const py::list& slots) {
  static PyObject* written = interned("written");
  static PyObject* storage = interned("storage");
  static PyObject* holder = interned("_holder");
  py::list live;
  py::object hold;
  const Py_ssize_t n = PyList_GET_SIZE(slots.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* slot = PyList_GET_ITEM(slots.ptr(), i);
    if (field(slot, false, 3, written, hold) != Py_True) continue;
    const c10::Storage* kept = kept_storage(field(slot, false, 0, storage, hold));
    TORCH_CHECK(kept != nullptr, "a region slot's storage is not a StorageKeep");
    const size_t own = field(slot, false, 7, holder, hold) == Py_None ? 1 : 2;
    if (storage_references(*kept) > own) live.append(py::int_(i));
  }
  return live;
}

// (ids of the events' signatures, IR dtype and bytes of each slot, flat: (dtype0, bytes0, dtype1, ...)): the key a
// region's replay is looked up by.
py::tuple replay_key(const py::list& events, const py::list& slots) {
  static PyObject* key = interned("key");
  static PyObject* dtype = interned("dtype");
  static PyObject* nbytes = interned("nbytes");
  py::object hold;
  const Py_ssize_t n_events = PyList_GET_SIZE(events.ptr());
  py::tuple ids(n_events);
  for (Py_ssize_t i = 0; i < n_events; ++i) {
    PyObject* id = field(PyList_GET_ITEM(events.ptr(), i), true, 6, key, hold);
    Py_INCREF(id);
    PyTuple_SET_ITEM(ids.ptr(), i, id);
  }
  const Py_ssize_t n_slots = PyList_GET_SIZE(slots.ptr());
  py::tuple layout(2 * n_slots);
  for (Py_ssize_t i = 0; i < n_slots; ++i) {
    PyObject* slot = PyList_GET_ITEM(slots.ptr(), i);
    PyObject* d = field(slot, false, 2, dtype, hold);
    Py_INCREF(d);
    PyTuple_SET_ITEM(layout.ptr(), 2 * i, d);
    PyObject* b = field(slot, false, 5, nbytes, hold);
    Py_INCREF(b);
    PyTuple_SET_ITEM(layout.ptr(), 2 * i + 1, b);
  }
  return py::make_tuple(ids, layout);
}

}  // namespace

void bind_region_flush(py::module& m) {
  m.def("region_live_slots", &live_slots);
  m.def("region_replay_key", &replay_key);
}

}  // namespace torchtpu
