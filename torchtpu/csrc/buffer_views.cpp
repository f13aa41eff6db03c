// The driver views of a launch's tensors (runtime.buffers): each tensor's cached view, looked up by the key
// runtime.buffer files it under, (data_ptr, sizes, strides, dtype), for a whole list in one call. A compiled step
// passes a few hundred tensors to its launches; keyed in Python (four attribute calls each) that was ~1.4 us a
// tensor. A tensor whose view is not cached yet goes to runtime.buffer, which makes and caches it.
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

namespace torchtpu {
namespace {

PyObject* int_tuple(c10::IntArrayRef values) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < values.size(); ++i) {
    PyObject* v = PyLong_FromLongLong(values[i]);
    if (v == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), v);
  }
  return tuple;
}

// The key runtime.buffer builds, `(t.data_ptr(), t.shape, t.stride(), t.dtype)` (a new reference, or nullptr with
// the Python error set): torch.Size hashes and compares as the tuple of its sizes, so a plain tuple finds the
// same entry.
PyObject* view_key(const at::Tensor& t) {
  PyObject* key = PyTuple_New(4);
  if (key == nullptr) return nullptr;
  PyObject* items[3] = {PyLong_FromVoidPtr(t.data_ptr()), int_tuple(t.sizes()), int_tuple(t.strides())};
  for (int i = 0; i < 3; ++i) PyTuple_SET_ITEM(key, i, items[i]);
  if (items[0] == nullptr || items[1] == nullptr || items[2] == nullptr) {
    Py_DECREF(key);
    return nullptr;
  }
  PyObject* dtype = reinterpret_cast<PyObject*>(torch::getTHPDtype(t.scalar_type()));
  Py_INCREF(dtype);
  PyTuple_SET_ITEM(key, 3, dtype);
  return key;
}

py::list buffers(const py::list& tensors, const py::dict& views, const py::object& make) {
  const Py_ssize_t n = PyList_GET_SIZE(tensors.ptr());
  py::list out(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* obj = PyList_GET_ITEM(tensors.ptr(), i);
    if (!THPVariable_Check(obj)) throw py::type_error("runtime.buffers takes a list of tensors");
    PyObject* key = view_key(THPVariable_Unpack(obj));
    if (key == nullptr) throw py::error_already_set();
    PyObject* view = PyDict_GetItemWithError(views.ptr(), key);
    Py_DECREF(key);
    if (view != nullptr) {
      Py_INCREF(view);
    } else if (PyErr_Occurred()) {
      throw py::error_already_set();
    } else {
      view = PyObject_CallOneArg(make.ptr(), obj);
      if (view == nullptr) throw py::error_already_set();
    }
    PyList_SET_ITEM(out.ptr(), i, view);  // steals the reference into the empty slot
  }
  return out;
}

}  // namespace

void bind_buffer_views(py::module& m) { m.def("buffers", &buffers); }

}  // namespace torchtpu
