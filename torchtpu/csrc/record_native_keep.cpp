// StorageKeep: the storage a pending region's slot holds (execution/region_ir.py Slot.storage), as a plain CPython
// type rather than a pybind11 class. The C++ recording hit (record_native.cpp) makes one per fresh output; a pybind11
// instance registers itself in pybind's instance map on creation and leaves it on deallocation (a hash-table insert
// and erase, and a type-info lookup, per recorded op: ~7% of an 8x8 op's recording). This type holds a c10::Storage
// in place and is not tracked by the cycle collector (it references no Python object).
#include "record_native.h"

#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <new>

namespace torchtpu {
namespace {

struct KeepObject {
  PyObject_HEAD
  c10::Storage storage;  // constructed in place (tp_alloc zeroes the memory, which is no valid Storage)
};

PyTypeObject* keep_type();

PyObject* keep_of(PyTypeObject* type, const c10::Storage& storage) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (obj == nullptr) return nullptr;
  new (&reinterpret_cast<KeepObject*>(obj)->storage) c10::Storage(storage);
  return obj;
}

PyObject* keep_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  HANDLE_TH_ERRORS
  static const char* keywords[] = {"of", nullptr};
  PyObject* of = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:StorageKeep", const_cast<char**>(keywords), &of)) {
    return nullptr;
  }
  TORCH_CHECK_TYPE(THPVariable_Check(of), "StorageKeep: expected a tensor");
  const at::Tensor& t = THPVariable_Unpack(of);
  TORCH_CHECK(t.has_storage(), "StorageKeep: a tensor without a storage");
  return keep_of(type, t.storage());
  END_HANDLE_TH_ERRORS
}

void keep_dealloc(PyObject* self) {
  reinterpret_cast<KeepObject*>(self)->storage.~Storage();
  Py_TYPE(self)->tp_free(self);
}

PyObject* keep_references(PyObject* self, PyObject*) {
  return PyLong_FromSize_t(storage_references(reinterpret_cast<KeepObject*>(self)->storage));
}

PyObject* keep_flat(PyObject* self, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject* dtype = nullptr;
  long long numel = 0;
  if (!PyArg_ParseTuple(args, "OL:flat", &dtype, &numel)) return nullptr;
  TORCH_CHECK_TYPE(THPDtype_Check(dtype), "StorageKeep.flat: dtype must be a torch.dtype");
  const c10::Storage& storage = reinterpret_cast<KeepObject*>(self)->storage;
  const auto scalar_type = reinterpret_cast<THPDtype*>(dtype)->scalar_type;
  at::Tensor t = at::empty({0}, at::TensorOptions().dtype(scalar_type).device(storage.device()));
  t.set_(storage, 0, {numel}, {1});
  return THPVariable_Wrap(t);
  END_HANDLE_TH_ERRORS
}

PyMethodDef keep_methods[] = {
    {"references", keep_references, METH_NOARGS,
     "The storage's references, less its own Python object's where nothing else holds that object."},
    {"flat", keep_flat, METH_VARARGS, "flat(dtype, numel): a 1-D tensor of `numel` elements over the storage."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject* keep_type() {
  static PyTypeObject* type = [] {
    static PyTypeObject t = {PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "torchtpu_shim.StorageKeep";
    t.tp_doc = "StorageKeep(of): keeps the storage of tensor `of` alive (a C++ reference; no cycle-collector "
               "tracking).";
    t.tp_basicsize = sizeof(KeepObject);
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_new = keep_new;
    t.tp_dealloc = keep_dealloc;
    t.tp_methods = keep_methods;
    if (PyType_Ready(&t) < 0) throw py::error_already_set();
    return &t;
  }();
  return type;
}

}  // namespace

size_t storage_references(const c10::Storage& storage) {
  size_t count = storage.use_count();
  PyObject* own = storage.unsafeGetStorageImpl()->pyobj_slot()->load_pyobj();
  if (own != nullptr && Py_REFCNT(own) == 1) --count;
  return count;
}

py::object make_storage_keep(const c10::Storage& storage) {
  PyObject* obj = keep_of(keep_type(), storage);
  if (obj == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(obj);
}

const c10::Storage* kept_storage(PyObject* obj) {
  return Py_TYPE(obj) == keep_type() ? &reinterpret_cast<KeepObject*>(obj)->storage : nullptr;
}

void bind_storage_keep(py::module& m) {
  PyTypeObject* type = keep_type();
  m.attr("StorageKeep") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
}

}  // namespace torchtpu
