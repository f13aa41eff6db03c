// A storage's block is about to be replaced (resize_ that grows it, storage.resize_): work queued for the old block
// (a deferred region's pending writes) must land first, or it writes freed memory and the new block misses it.
#include "realloc_settle.h"

#include <torch/extension.h>

namespace torchtpu {

static PyObject* g_settle_cb = nullptr;  // (block address) -> None

void settle_before_realloc(const void* block) {
  if (g_settle_cb == nullptr || !Py_IsInitialized() || _Py_IsFinalizing()) {
    return;
  }
  py::gil_scoped_acquire gil;
  PyObject* r = PyObject_CallFunction(g_settle_cb, "L", reinterpret_cast<long long>(block));
  if (r == nullptr) {
    throw py::error_already_set();
  }
  Py_DECREF(r);
}

void bind_realloc_settle(py::module& m) {
  m.def("set_settle_callback", [](py::object cb) {
    Py_XDECREF(g_settle_cb);
    g_settle_cb = cb.is_none() ? nullptr : cb.inc_ref().ptr();
  });
}

}  // namespace torchtpu
