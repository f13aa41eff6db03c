// The cached one-op launch path: a C++ PrivateUse1 kernel for each lowered functional, in-place, out= and
// foreach op, and for device-to-device copies. It keys the call (fast_launch_key.cpp: operator, matmul
// precision, every argument; Scalar-typed values (float, int, complex) by type only, their values then filling the
// program's 0-d inputs by the trace's bindings); on a hit it allocates the outputs, makes numpy views of the
// buffers and calls the driver's execute on the executable the Python side stored for that key, so the cached
// case skips the dispatcher's Python trampoline, the Python signature, the output allocation and the buffer
// lookups. On a miss (and whenever the path is off: another eager mode, a driver whose memory is not host
// memory) it calls the op's Python kernel as torch.library would; that kernel stores the launch when the op is
// eligible (`store`).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/extension.h>
#include <torch/library.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "fast_launch_key.h"
#include "record_native.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torchtpu {
namespace {

// How to launch one key again: `execute(exe, [input buffers..., *scalars], [output buffers...], device)`, the
// buffers numpy views of the tensors' memory (what runtime.buffer makes). Made and dropped under the GIL.
struct OutType {
  std::vector<int64_t> sizes;
  at::ScalarType dtype;
  std::vector<int64_t> strides;  // empty: contiguous; else ATen's layout for this key's inputs (out_layout.py)
};

// A small exact `mm`'s kernel as a C function (sim/mxu_native.py), called on the tensors' memory instead of
// `execute` on numpy views (drivers/sim/launcher.py `_native`): after `ready(device)` (the launch's checks and
// its timeline charge) returned True; when it returns False, `execute` runs the call.
using MmInto = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
struct Native {
  MmInto fn = nullptr;
  py::object ready;
  int64_t m = 0, k = 0, n = 0, tile = 0;
};

struct Entry {
  std::vector<OutType> outputs;
  size_t n_inputs;
  py::object execute;
  py::object exe;
  py::tuple bindings;  // a tuple per 0-d input: (index of the call's scalar, or a function of the scalars'
                       // tuple; IR dtype) (eager.Traced.bindings)
  int64_t device;
  // DEFER_AND_FUSE: `execute` records the op into the pending region (deferred.record_cached) and takes the
  // tensors themselves, not numpy views; it returns False when the op cannot be deferred (the Python kernel
  // then runs the call).
  bool record;
  Native native;
  py::object device_obj;  // `device` as a Python int
};

PyObject* g_scalar_buffer = nullptr;  // runtime.scalar_buffer(value, IR dtype): 0-d buffers of other dtypes

// The 0-d input for a float: what runtime.scalar_buffer makes (numpy rounds a double to float32
// to nearest, as the cast here does).
PyObject* scalar_buffer(double value, PyObject* dtype) {
  const char* name = PyUnicode_AsUTF8(dtype);
  if (name == nullptr) throw py::error_already_set();
  int type = std::strcmp(name, "float32") == 0 ? NPY_FLOAT32 : std::strcmp(name, "float64") == 0 ? NPY_FLOAT64 : -1;
  if (type < 0) {
    PyObject* buffer = PyObject_CallFunction(g_scalar_buffer, "dO", value, dtype);
    if (buffer == nullptr) throw py::error_already_set();
    return buffer;
  }
  PyObject* buffer = PyArray_SimpleNew(0, nullptr, type);
  if (buffer == nullptr) throw py::error_already_set();
  void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(buffer));
  if (type == NPY_FLOAT32) {
    *static_cast<float*>(data) = static_cast<float>(value);
  } else {
    *static_cast<double*>(data) = value;
  }
  return buffer;
}

std::unordered_map<int, PyArray_Descr*>& numpy_dtypes() {  // at::ScalarType -> numpy dtype (owned)
  static auto* m = new std::unordered_map<int, PyArray_Descr*>();
  return *m;
}

// A numpy view of `t`'s memory with its sizes and strides, or nullptr (with no Python error) for a dtype
// without a numpy equivalent.
PyObject* numpy_view(const at::Tensor& t) {
  auto it = numpy_dtypes().find(static_cast<int>(t.scalar_type()));
  if (it == numpy_dtypes().end()) return nullptr;
  PyArray_Descr* descr = it->second;
  const int ndim = static_cast<int>(t.dim());
  if (ndim > NPY_MAXDIMS) {
    PyErr_Format(PyExc_ValueError, "a tensor of %d dimensions has no numpy view", ndim);
    return nullptr;
  }
  npy_intp dims[NPY_MAXDIMS];  // (on the stack: a launch makes a view per tensor)
  npy_intp strides[NPY_MAXDIMS];
  const int64_t itemsize = t.element_size();
  for (int i = 0; i < ndim; ++i) {
    dims[i] = t.size(i);
    strides[i] = t.stride(i) * itemsize;
  }
  void* data = t.numel() ? t.data_ptr() : nullptr;
  Py_INCREF(descr);  // stolen by the call
  return PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims, data ? strides : nullptr, data,
                              NPY_ARRAY_WRITEABLE, nullptr);
}

// numpy views of `tensors` as the first items of `list` (all of one dtype numpy has: the key holds them)
void put_views(py::list& list, const std::vector<at::Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    PyObject* view = numpy_view(tensors[i]);
    if (view == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(list.ptr(), i, view);
  }
}

// Whether `native` ran the call: two C-contiguous float32 (m, k) and (k, n) inputs, one (m, n) output, and
// `ready` agreed (it then charged the launch).
bool launch_native(const Native& native, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                   int64_t device) {
  if (inputs.size() != 2 || outputs.size() != 1) return false;
  const at::Tensor& a = inputs[0];
  const at::Tensor& b = inputs[1];
  const at::Tensor& out = outputs[0];
  auto fits = [](const at::Tensor& t, int64_t rows, int64_t cols) {
    return t.scalar_type() == at::kFloat && t.dim() == 2 && t.size(0) == rows && t.size(1) == cols &&
           t.is_contiguous() && t.has_storage() && t.data_ptr() != nullptr;
  };
  if (!fits(a, native.m, native.k) || !fits(b, native.k, native.n) || !fits(out, native.m, native.n)) return false;
  PyObject* ready = PyObject_CallOneArg(native.ready.ptr(), py::int_(device).ptr());
  if (ready == nullptr) throw py::error_already_set();
  const bool go = ready == Py_True;
  Py_DECREF(ready);
  if (!go) return false;
  native.fn(static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
            static_cast<float*>(out.data_ptr()), native.m, native.k, native.n, native.tile);
  return true;
}

constexpr size_t kMaxEntries = 8192;  // like the Python cache: a workload of ever-new shapes stays bounded

std::unordered_map<std::string, Entry>& table() {
  static auto* t = new std::unordered_map<std::string, Entry>();
  return *t;
}

bool g_enabled = false;
bool g_record = false;  // DEFER_AND_FUSE: a hit records into the pending region (entries stored in that mode)
// DEFER_AND_FUSE: hits that may launch now, from an op's launching twin (store), instead of recording: granted by
// Python while each region has held one op (execution/one_op_streak.py), taken back before anything is recorded
int64_t g_launch_budget = 0;
int64_t g_precision = 0;
int64_t g_hits = 0;
int64_t g_misses = 0;

// What an op does with its outputs.
enum Kind : int64_t {
  kFunctional = 0,      // fresh outputs, returned as the op's returns
  kInplace = 1,         // writes its first argument and returns it
  kInplaceList = 2,     // writes every tensor of its first argument (a list), returns ()
  kFunctionalList = 3,  // fresh outputs, returned as one Tensor[]
  kOut = 4,             // writes its keyword-only out= tensors (or lists), returns them
  kCopyFrom = 5,        // _copy_from(self, dst): reads its first argument, writes and returns the second
};

struct Pending {
  std::string key;
  const std::string* op_name;
  const c10::FunctionSchema* schema;
  bool keyable;
  int64_t kind;
  size_t n_scalars;  // scalars keyed by type: the bindings may name that many
};
thread_local std::vector<Pending> t_pending;

bool is_kind(const c10::Argument& arg, c10::TypeKind kind) {
  const auto& t = arg.real_type();
  if (t->kind() == kind) return true;
  auto optional = t->cast<c10::OptionalType>();
  return optional && optional->getElementType()->kind() == kind;
}

// An argument as the Python kernel receives it through torch.library: dtypes, layouts and memory formats
// travel as ints in an IValue.
py::object to_python(const c10::Argument& arg, const c10::IValue& v) {
  if (v.isNone()) return py::none();
  if (is_kind(arg, c10::TypeKind::ScalarTypeType)) {
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(
        static_cast<at::ScalarType>(v.toInt()))));
  }
  if (is_kind(arg, c10::TypeKind::LayoutType)) {
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPLayout(
        static_cast<at::Layout>(v.toInt()))));
  }
  if (is_kind(arg, c10::TypeKind::MemoryFormatType)) return py::cast(static_cast<c10::MemoryFormat>(v.toInt()));
  return torch::jit::toPyObject(v);
}

void push_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.device().is_privateuseone()) out.push_back(t);
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) out.push_back(t);
  } else if (v.isList()) {  // Tensor?[]
    for (const auto& item : v.toListRef()) {
      if (item.isTensor() && item.toTensor().defined()) out.push_back(item.toTensor());
    }
  }
}

struct FastKernel final : public c10::OperatorKernel {
  FastKernel(py::object kernel, std::string name, int64_t kind, std::vector<uint8_t> modes)
      : kernel_(kernel.release().ptr()), name_(std::move(name)), kind_(kind), modes_(std::move(modes)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    py::gil_scoped_acquire gil;  // the table is shared with autograd's device thread: read it under the GIL
    const auto& schema = op.schema();
    const size_t n_args = schema.arguments().size();
    std::string key;
    int64_t device = -1;
    std::vector<c10::IValue> scalars;
    const bool keyable = g_enabled && build_key(this, g_precision, schema, *stack, n_args, modes_, key, device, scalars);
    // torch.use_deterministic_algorithms(True): the Python kernel raises the nondeterminism alerts ATen raises
    if (keyable && !at::globalContext().deterministicAlgorithms()) {
      if (g_record && g_launch_budget > 0) {
        auto twin = table().find(key);
        if (twin != table().end() && !twin->second.record) {
          --g_launch_budget;
          if (launch_cached(schema, twin->second, device, scalars, n_args, stack)) return;
          ++g_launch_budget;
        }
      }
      if (g_record) key.push_back('R');  // a recording entry never serves a launch, nor the other way round
      auto it = table().find(key);
      if (it != table().end() && launch_cached(schema, it->second, device, scalars, n_args, stack)) return;
    }
    call_python(op, std::move(key), keyable, scalars.size(), n_args, stack);
  }

 private:
  bool is_out(const c10::Argument& arg) const {
    return arg.kwarg_only() && arg.alias_info() != nullptr && arg.alias_info()->isWrite();
  }

  // False (nothing done) when a written tensor has elements sharing memory (an expanded view): that call takes
  // the Python kernel, which raises as ATen does (or runs the few ops ATen lets write such views).
  bool launch_cached(const c10::FunctionSchema& schema, const Entry& entry, int64_t device,
                     const std::vector<c10::IValue>& scalars, size_t n_args, torch::jit::Stack* stack) {
    // inputs in the Python signature's order (arguments in order, lists flattened); out= tensors apart
    std::vector<at::Tensor> inputs;
    std::vector<at::Tensor> outputs;
    const c10::IValue* values = stack->data() + (stack->size() - n_args);
    for (size_t i = 0; i < n_args; ++i) {
      if (kind_ == kOut && is_out(schema.arguments()[i])) {
        push_tensors(values[i], outputs);
      } else if (kind_ == kCopyFrom && i == 1) {
        outputs.push_back(values[i].toTensor());
      } else {
        push_tensors(values[i], inputs);
      }
    }
    TORCH_CHECK(inputs.size() == entry.n_inputs, name_, ": cached launch expects ", entry.n_inputs,
                " tensors, got ", inputs.size());
    if (kind_ == kInplace) {
      outputs.push_back(inputs.front());
    } else if (kind_ == kInplaceList) {
      outputs.assign(inputs.begin(), inputs.begin() + values[0].toTensorList().size());
    }
    for (const at::Tensor& t : outputs) {  // none yet for a functional op; an expanded view goes to Python,
      if (at::has_internal_overlap(t) == at::MemOverlap::Yes) return false;  // which refuses it as ATen does
    }
    // a written tensor overlapping another input (disjoint views of one storage are served): the key holds no
    // aliasing, so this entry may have been made without it; the Python kernel checks ATen's overlap rules
    // (execution/overlap.py) and runs the call
    const size_t n_self = kind_ == kInplace || kind_ == kInplaceList ? outputs.size() : 0;
    for (size_t j = 0; j < outputs.size(); ++j) {
      const at::Tensor& out = outputs[j];
      if (!out.has_storage() || out.numel() == 0) continue;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (i < n_self && i == j) continue;
        const at::Tensor& t = inputs[i];
        if (t.has_storage() && t.numel() != 0 && t.storage().is_alias_of(out.storage()) &&
            at::get_overlap_status(out, t) != at::MemOverlapStatus::No) {
          return false;
        }
      }
    }
    if (kind_ == kFunctional || kind_ == kFunctionalList) {
      outputs.reserve(entry.outputs.size());
      auto device_obj = c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
      for (const auto& out : entry.outputs) {
        const auto options = at::TensorOptions().dtype(out.dtype).device(device_obj);
        outputs.push_back(out.strides.empty() ? at::empty(out.sizes, options)
                                              : at::empty_strided(out.sizes, out.strides, options));
      }
    }
    PyObject* bindings = entry.bindings.ptr();
    const Py_ssize_t n_extra = PyTuple_GET_SIZE(bindings);
    if (entry.native.fn != nullptr && n_extra == 0 && launch_native(entry.native, inputs, outputs, device)) {
      return finish(schema, values, n_args, outputs, stack);
    }
    py::list in_buffers(inputs.size() + n_extra);
    py::list out_buffers(outputs.size());
    if (!entry.record) put_views(in_buffers, inputs);  // (a recording's tensors: below, where Python needs them)
    py::tuple py_scalars;  // the scalars as Python values, for bindings that are functions of them
    for (Py_ssize_t i = 0; i < n_extra; ++i) {
      PyObject* binding = PyTuple_GET_ITEM(bindings, i);
      PyObject* source = PyTuple_GET_ITEM(binding, 0);
      PyObject* dtype = PyTuple_GET_ITEM(binding, 1);
      PyObject* item;
      const c10::IValue* scalar =
          PyLong_Check(source) ? &scalars.at(static_cast<size_t>(PyLong_AsSsize_t(source))) : nullptr;
      if (scalar != nullptr && scalar->isDouble()) {
        item = scalar_buffer(scalar->toDouble(), dtype);
      } else {
        py::object value;
        if (scalar != nullptr) {
          value = torch::jit::toPyObject(*scalar);  // an int stays exact, a complex whole
        } else {
          if (py_scalars.size() != scalars.size()) {
            py_scalars = py::tuple(scalars.size());
            for (size_t j = 0; j < scalars.size(); ++j) py_scalars[j] = torch::jit::toPyObject(scalars[j]);
          }
          value = py::handle(source)(py_scalars);
        }
        item = PyObject_CallFunctionObjArgs(g_scalar_buffer, value.ptr(), dtype, nullptr);
        if (item == nullptr) throw py::error_already_set();
      }
      PyList_SET_ITEM(in_buffers.ptr(), inputs.size() + i, item);
    }
    if (entry.record) {
      auto [layout, addresses] = python_layout(inputs, outputs);
      if (record_native(entry.exe.ptr(), inputs, outputs, in_buffers.ptr(), layout.ptr(), addresses.ptr(),
                        entry.device)) {
        return finish(schema, values, n_args, outputs, stack);
      }
      put_tensors(in_buffers, inputs);
      put_tensors(out_buffers, outputs);
      py::object recorded = entry.execute(entry.exe, in_buffers, out_buffers, entry.device, layout, addresses);
      if (recorded.ptr() == Py_False) return false;  // not deferrable now: the Python kernel runs the call
    } else {
      put_views(out_buffers, outputs);
      // execute(exe, inputs, outputs, device) by vectorcall, the device's int made once per entry
      PyObject* args[] = {entry.exe.ptr(), in_buffers.ptr(), out_buffers.ptr(), entry.device_obj.ptr()};
      PyObject* done = PyObject_Vectorcall(entry.execute.ptr(), args, 4, nullptr);
      if (done == nullptr) throw py::error_already_set();
      Py_DECREF(done);
    }
    return finish(schema, values, n_args, outputs, stack);
  }

  // A served call's returns replace its arguments on the stack.
  bool finish(const c10::FunctionSchema& schema, const c10::IValue* values, size_t n_args,
              std::vector<at::Tensor>& outputs, torch::jit::Stack* stack) {
    ++g_hits;
    c10::IValue dst = kind_ == kCopyFrom ? values[1] : c10::IValue();
    std::vector<c10::IValue> out_args;
    if (kind_ == kOut) {
      for (size_t i = 0; i < n_args; ++i) {
        if (is_out(schema.arguments()[i])) out_args.push_back(values[i]);
      }
    }
    torch::jit::drop(*stack, n_args);
    if (kind_ == kFunctionalList) {
      stack->emplace_back(c10::List<at::Tensor>(outputs));
    } else if (kind_ == kInplace || kind_ == kFunctional) {
      for (auto& t : outputs) stack->emplace_back(std::move(t));
    } else if (kind_ == kCopyFrom) {
      stack->push_back(std::move(dst));
    } else if (kind_ == kOut && !schema.returns().empty()) {
      for (auto& v : out_args) stack->push_back(std::move(v));
    }
    return true;
  }

  // The op's Python kernel called as torch.library would: positional and keyword-only arguments from the
  // schema, the result converted back by the schema's return types.
  void call_python(const c10::OperatorHandle& op, std::string key, bool keyable, size_t n_scalars, size_t n_args,
                   torch::jit::Stack* stack) {
    ++g_misses;
    const auto& schema = op.schema();
    const c10::IValue* values = stack->data() + (stack->size() - n_args);
    size_t n_positional = 0;
    const size_t last = passed_positional(schema, values, n_args, n_positional);
    py::tuple args(last);
    for (size_t i = 0; i < last; ++i) args[i] = to_python(schema.arguments()[i], values[i]);
    py::dict kwargs;
    for (size_t i = n_positional; i < n_args; ++i) {
      const auto& arg = schema.arguments()[i];
      if (!is_default(arg, values[i])) kwargs[py::str(arg.name())] = to_python(arg, values[i]);
    }
    t_pending.push_back(Pending{std::move(key), &name_, &schema, keyable, kind_, n_scalars});
    py::object result;
    try {
      result = py::handle(kernel_)(*args, **kwargs);
    } catch (...) {
      t_pending.pop_back();
      throw;
    }
    t_pending.pop_back();
    torch::jit::drop(*stack, n_args);
    const auto& returns = schema.returns();
    if (returns.size() == 1) {
      stack->push_back(torch::jit::toIValue(result, returns[0].real_type()));
    } else if (!returns.empty()) {
      auto items = result.cast<py::sequence>();
      TORCH_CHECK(items.size() == returns.size(), name_, ": expected ", returns.size(), " results");
      for (size_t i = 0; i < returns.size(); ++i) {
        stack->push_back(torch::jit::toIValue(items[i], returns[i].real_type()));
      }
    }
  }

  PyObject* kernel_;
  std::string name_;
  int64_t kind_;  // Kind
  std::vector<uint8_t> modes_;  // by schema position: how its scalars are keyed (ArgumentMode)
};

torch::Library& library() {
  static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                                        __LINE__);
  return *lib;
}

// Registers `kernel` (the op's Python kernel) behind the cached launch path for `qualified` ("add.Tensor").
void register_op(const std::string& qualified, const std::string& name, py::object kernel, int64_t kind,
                 const std::vector<int64_t>& argument_modes) {
  TORCH_CHECK(kind >= kFunctional && kind <= kCopyFrom, "fast_register: unknown kind ", kind);
  std::vector<uint8_t> modes;
  for (int64_t m : argument_modes) {
    TORCH_CHECK(m >= kByValue && m <= kScalars, "fast_register: bad argument mode ", m);
    modes.push_back(static_cast<uint8_t>(m));
  }
  library().impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<FastKernel>(
                                        std::move(kernel), name, kind, std::move(modes))));
}

// Called by the Python kernel of the op being missed: stores how to launch this key again. `op_name` must
// be the op whose miss is in progress (a Python kernel may run other ops itself); false when not stored.
// `outputs` holds (sizes, torch.dtype, strides: [] for contiguous) per fresh output, in the order the op returns
// them; none for an in-place op. `kind` (Kind) must be the one the op was registered with. `bindings`: how each 0-d input after the tensors
// is made from the call's scalars (Entry::bindings).
// `record`: a DEFER_AND_FUSE entry (`execute` records; Entry::record), stored only while the path records; a
// launching entry stored then is the op's twin (its key without the 'R'; an entry already there stays).
// `native`: None, or (address, ready, m, k, n, tile) of a small exact mm's native kernel (Entry::native).
bool store(const std::string& op_name, py::object execute, py::object exe, py::tuple bindings, int64_t device,
           int64_t n_inputs, const py::list& outputs, int64_t kind, bool record, py::object native) {
  if (t_pending.empty()) return false;
  const Pending& p = t_pending.back();
  if (!p.keyable || *p.op_name != op_name || !g_enabled || p.kind != kind || (record && !g_record)) return false;
  const bool twin = g_record && !record;
  if (twin && (p.key.empty() || p.key.back() != 'R')) return false;
  for (const auto& item : bindings) {
    if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2) return false;
    auto pair = item.cast<py::tuple>();
    if (!PyUnicode_Check(pair[1].ptr())) return false;
    if (PyLong_Check(pair[0].ptr()) ? pair[0].cast<size_t>() >= p.n_scalars : !PyCallable_Check(pair[0].ptr())) {
      return false;
    }
  }
  // the schema's returns must be what `kind` pushes (p.kind is one of Kind: register_op checks it)
  const auto& returns = p.schema->returns();
  auto returns_kind = [&](c10::TypeKind k) {
    for (const auto& r : returns) {
      if (r.real_type()->kind() != k) return false;
    }
    return true;
  };
  using c10::TypeKind;
  const bool fits = kind == kFunctional       ? returns.size() == outputs.size() && returns_kind(TypeKind::TensorType)
                    : kind == kFunctionalList ? returns.size() == 1 && returns_kind(TypeKind::ListType)
                    : !outputs.empty()        ? false
                    : kind == kInplaceList    ? returns.empty()
                    : kind == kOut            ? true
                                              : returns.size() == 1;  // kInplace, kCopyFrom
  if (!fits) return false;
  Entry entry{{}, static_cast<size_t>(n_inputs), std::move(execute), std::move(exe), std::move(bindings), device,
              record, Native{}, py::int_(device)};
  if (!native.is_none() && !record) {
    auto t = native.cast<py::tuple>();
    TORCH_CHECK(t.size() == 6 && PyCallable_Check(t[1].ptr()), "fast_store: bad native kernel");
    entry.native.fn = reinterpret_cast<MmInto>(t[0].cast<uintptr_t>());
    entry.native.ready = t[1];
    entry.native.m = t[2].cast<int64_t>();
    entry.native.k = t[3].cast<int64_t>();
    entry.native.n = t[4].cast<int64_t>();
    entry.native.tile = t[5].cast<int64_t>();
    TORCH_CHECK(entry.native.fn != nullptr && entry.native.tile >= 1, "fast_store: bad native kernel");
  }
  for (const auto& item : outputs) {
    auto pair = item.cast<py::tuple>();
    PyObject* dtype = pair[1].ptr();
    TORCH_CHECK(THPDtype_Check(dtype), "fast_store: expected a torch.dtype");
    auto scalar_type = reinterpret_cast<THPDtype*>(dtype)->scalar_type;
    if (!numpy_dtypes().count(static_cast<int>(scalar_type))) return false;
    entry.outputs.push_back(OutType{pair[0].cast<std::vector<int64_t>>(), scalar_type,
                                    pair.size() > 2 ? pair[2].cast<std::vector<int64_t>>() : std::vector<int64_t>()});
  }
  if (table().size() >= kMaxEntries) table().clear();
  if (twin) {
    table().emplace(p.key.substr(0, p.key.size() - 1), std::move(entry));
  } else {
    table().insert_or_assign(p.key, std::move(entry));
  }
  return true;
}

// The numpy dtype of each torch dtype the buffers may have ([(torch.dtype, numpy.dtype)]).
void set_numpy_dtypes(const py::list& pairs) {
  for (const auto& item : pairs) {
    auto pair = item.cast<py::tuple>();
    TORCH_CHECK(THPDtype_Check(pair[0].ptr()) && PyArray_DescrCheck(pair[1].ptr()),
                "fast_numpy_dtypes: expected (torch.dtype, numpy.dtype) pairs");
    auto key = static_cast<int>(reinterpret_cast<THPDtype*>(pair[0].ptr())->scalar_type);
    PyObject* descr = pair[1].ptr();
    Py_INCREF(descr);
    auto& m = numpy_dtypes();
    if (m.count(key)) Py_DECREF(m[key]);
    m[key] = reinterpret_cast<PyArray_Descr*>(descr);
  }
}

void set_state(bool enabled, int64_t precision, bool record) {
  g_enabled = enabled;
  g_record = enabled && record;
  g_precision = precision;
  g_launch_budget = 0;
}

std::vector<int64_t> counters() { return {g_hits, g_misses, static_cast<int64_t>(table().size())}; }

}  // namespace

void bind_fast_launch(py::module& m) {
  if (_import_array() < 0) throw py::error_already_set();
  m.def("fast_numpy_dtypes", &set_numpy_dtypes);
  m.def("fast_register", &register_op);
  m.def("fast_store", &store);
  m.def("fast_clear", [] { table().clear(); });
  m.def("fast_set_state", &set_state);
  m.def("fast_scalar_buffer", [](py::object make) {  // runtime.scalar_buffer, for dtypes numpy has no C type of
    Py_XDECREF(g_scalar_buffer);
    g_scalar_buffer = make.release().ptr();
  });
  m.def("fast_counters", &counters);
  bind_record_native(m);
  m.def("fast_launch_budget", [](int64_t n) {  // sets the budget, returns what was left of the last one
    const int64_t left = g_launch_budget;
    g_launch_budget = g_record ? n : 0;
    return left;
  });
}

}  // namespace torchtpu
