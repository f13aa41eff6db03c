// Which of a launch's results may share memory with its outputs (drivers/sim/output_overlap.py): what
// `any(np.may_share_memory(r, o) for o in outputs)` answers for each result that views memory the caller passed in,
// for all results at once. A fused region writes a hundred outputs or more; asked pair by pair in Python that was
// ~5,000 calls a step of a small model's training (about a tenth of its host time).
#include <torch/extension.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace torchtpu {
namespace {

using Extent = std::pair<uintptr_t, uintptr_t>;  // [first byte, one past the last byte)

// The bytes an array may touch (numpy's memory bounds: what may_share_memory compares); empty for no elements.
Extent extent(PyArrayObject* a) {
  const int ndim = PyArray_NDIM(a);
  const npy_intp* dims = PyArray_DIMS(a);
  const npy_intp* strides = PyArray_STRIDES(a);
  intptr_t low = 0, high = 0;
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] == 0) return {0, 0};
    const intptr_t span = static_cast<intptr_t>(dims[i] - 1) * strides[i];
    (span < 0 ? low : high) += span;
  }
  const auto start = reinterpret_cast<uintptr_t>(PyArray_BYTES(a));
  return {start + low, start + high + PyArray_ITEMSIZE(a)};
}

// Whether the array's root (its last ndarray base) does not own its memory: memory the caller passed in, or a view
// of it. Arrays a kernel made during the launch own theirs and cannot overlap an output.
bool external(PyArrayObject* a) {
  PyObject* base = PyArray_BASE(a);
  while (base != nullptr && PyArray_Check(base)) {
    a = reinterpret_cast<PyArrayObject*>(base);
    base = PyArray_BASE(a);
  }
  return !PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA);
}

// Indices of the results that view caller memory overlapping one of the outputs (each output an ndarray).
std::vector<int64_t> shared_with_outputs(const py::list& results, const py::list& outputs) {
  std::vector<Extent> written;
  written.reserve(outputs.size());
  for (const py::handle& out : outputs) {
    if (!PyArray_Check(out.ptr())) throw py::type_error("shared_with_outputs: every output must be a numpy array");
    const Extent e = extent(reinterpret_cast<PyArrayObject*>(out.ptr()));
    if (e.first < e.second) written.push_back(e);
  }
  std::sort(written.begin(), written.end());
  std::vector<Extent> merged;  // disjoint, ascending
  for (const Extent& e : written) {
    if (!merged.empty() && e.first < merged.back().second) {
      merged.back().second = std::max(merged.back().second, e.second);
    } else {
      merged.push_back(e);
    }
  }
  std::vector<int64_t> shared;
  int64_t index = 0;
  for (const py::handle& result : results) {
    if (PyArray_Check(result.ptr())) {
      auto* a = reinterpret_cast<PyArrayObject*>(result.ptr());
      const Extent e = extent(a);
      if (e.first < e.second && external(a)) {
        // the last merged extent starting before this one ends is the only one that can overlap it
        auto it = std::lower_bound(merged.begin(), merged.end(), Extent{e.second, 0});
        if (it != merged.begin() && std::prev(it)->second > e.first) shared.push_back(index);
      }
    }
    ++index;
  }
  return shared;
}

}  // namespace

void bind_array_overlap(py::module& m) {
  if (_import_array() < 0) throw py::error_already_set();
  m.def("shared_with_outputs", &shared_with_outputs);
}

}  // namespace torchtpu
