// DEFER_AND_FUSE's recording hit without Python per op: what execution/record_fast.py's `record_cached` does
// (same checks, same Event and Slot objects, same commit point) for an op whose storage layout was planned before
// (record_plan._plans), whose storages the pending region already holds (or that this call made fresh), and whose
// views were made before (record_plan._views). Anything else (no event yet, a poisoned storage, another device or
// mode, a storage new to the region, a miss in either table, the lock held by another thread, a user frame not
// seen before) returns false with nothing changed, and the caller runs record_fast.record_cached, which does it
// the long way. The Python objects it reads are the modules' own (set by execution/record_fast.py `install`), so
// both paths share one region, one plan table and one set of caches.
#include "record_native.h"

#include "fast_launch_key.h"

#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <frameobject.h>
#include <structmember.h>

namespace torchtpu {
namespace {

struct Hooks {
  bool on = false;
  // the modules' dicts: deferred, poison, modes, record_plan, user_frames; one_op_fast, one_op_streak and
  // profiler.events for a whole-storage driver's (pjrt) one-op regions outside DEFER_AND_FUSE
  py::object deferred, poison, modes, plan, frames, one_op, streak, profiler;
  py::object event_type, slot_type, fuse, user_line;
  // the byte offset of each field of Event and Slot (record_fast.NATIVE_EVENT_FIELDS, NATIVE_SLOT_FIELDS) in their
  // instances: __slots__ members, written in place (PyObject_SetAttr's type lookup and descriptor call cost more
  // than the rest of making the object); empty where a field is not such a member (then set as attributes)
  std::vector<Py_ssize_t> event_offsets, slot_offsets;
  // deferred._lock's bound acquire and release (made again if the module's lock is another object)
  py::object lock, acquire, release, no_wait;
};

int64_t g_recorded = 0;  // ops recorded here (tests and benchmarks read it: fast_record_count)

Hooks& hooks() {
  static auto* h = new Hooks();
  return *h;
}

// Interned attribute and global names.
struct Names {
  PyObject *region, *single, *active, *stack, *mode, *lock, *plans, *views, *package, *lines, *stats, *max_ops;
  PyObject *events, *slots, *slot_of, *device, *torch_dtype, *written, *ir_ops, *ops_deferred, *ops;
  PyObject *acquire, *release, *program, *structure, *inputs, *outputs, *scalars, *origin, *key;
  PyObject *storage, *dtype, *nbytes, *numel, *holder, *flush, *granted, *profiling, *run, *replayed;
};

Names& names() {
  static Names* n = [] {
    auto* m = new Names();
    auto s = [](const char* text) { return PyUnicode_InternFromString(text); };
    *m = Names{s("_region"), s("_single"), s("active"), s("_stack"), s("_mode"), s("_lock"), s("_plans"),
               s("_views"), s("_PACKAGE_CODE"), s("_LINES"), s("stats"), s("MAX_REGION_OPS"), s("events"),
               s("slots"), s("slot_of"), s("device"), s("torch_dtype"), s("written"), s("ir_ops"),
               s("ops_deferred"), s("ops"), s("acquire"), s("release"), s("program"), s("structure"),
               s("inputs"), s("outputs"), s("scalars"), s("origin"), s("key"), s("storage"), s("dtype"),
               s("nbytes"), s("numel"), s("_holder"), s("flush"), s("_granted"), s("ACTIVE"),
               s("run"), s("_replayed")};
    return m;
  }();
  return *n;
}

// A global of a module's dict (borrowed), or nullptr when it is missing.
PyObject* global(const py::object& dict, PyObject* name) {
  PyObject* v = PyDict_GetItemWithError(dict.ptr(), name);
  if (v == nullptr && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

py::object attr(PyObject* obj, PyObject* name) {
  PyObject* v = PyObject_GetAttr(obj, name);
  if (v == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

void set_attr(PyObject* obj, PyObject* name, PyObject* value) {
  if (PyObject_SetAttr(obj, name, value) < 0) throw py::error_already_set();
}

// An instance of `type` with these attributes set, without running its __init__ (which only sets them), untracked
// by the cycle collector: a pending region holds an Event and a Slot per op until its flush, which nothing else
// references and which reference no object that references them (programs, tuples, storages), so they are in
// no cycle; tracked, thousands of them survived into the oldest generation and made full collections run.
py::object make(const py::object& type, const std::vector<Py_ssize_t>& offsets,
                std::initializer_list<std::pair<PyObject*, PyObject*>> fields) {
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  PyObject* obj = t->tp_alloc(t, 0);
  if (obj == nullptr) throw py::error_already_set();
  auto result = py::reinterpret_steal<py::object>(obj);
  if (offsets.size() == fields.size()) {  // (tp_alloc zeroed every member: each is unset)
    size_t i = 0;
    for (const auto& field : fields) {
      Py_INCREF(field.second);
      *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offsets[i++]) = field.second;
    }
  } else {
    for (const auto& [name, value] : fields) set_attr(obj, name, value);
  }
  if (PyObject_IS_GC(obj)) PyObject_GC_UnTrack(obj);
  return result;
}

// The member offsets of `fields` in instances of `type` (Hooks::event_offsets): each a writable object member of
// its __slots__ (T_OBJECT_EX: unset reads raise AttributeError, as an unset slot does); empty otherwise.
std::vector<Py_ssize_t> member_offsets(const py::object& type, std::initializer_list<const char*> fields) {
  std::vector<Py_ssize_t> offsets;
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  if (t->tp_setattro != PyObject_GenericSetAttr) return {};
  for (const char* field : fields) {
    py::str name(field);
    PyObject* descr = _PyType_Lookup(t, name.ptr());
    if (descr == nullptr || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) return {};
    PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0 ||
        member->offset + static_cast<Py_ssize_t>(sizeof(PyObject*)) > t->tp_basicsize) {
      return {};
    }
    offsets.push_back(member->offset);
  }
  return offsets;
}

// A field of a Slot (Hooks::slot_offsets' `index`th), read (borrowed) or written in place where the object is a
// Slot whose members are known; else by attribute.
py::object slot_field(PyObject* slot, size_t index, PyObject* name) {
  const Hooks& h = hooks();
  if (Py_TYPE(slot) == reinterpret_cast<PyTypeObject*>(h.slot_type.ptr()) && index < h.slot_offsets.size()) {
    PyObject* v = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(slot) + h.slot_offsets[index]);
    if (v != nullptr) return py::reinterpret_borrow<py::object>(v);
  }
  return attr(slot, name);
}

void set_slot_field(PyObject* slot, size_t index, PyObject* name, PyObject* value) {
  const Hooks& h = hooks();
  if (Py_TYPE(slot) == reinterpret_cast<PyTypeObject*>(h.slot_type.ptr()) && index < h.slot_offsets.size()) {
    auto** place = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(slot) + h.slot_offsets[index]);
    Py_INCREF(value);
    Py_XSETREF(*place, value);
    return;
  }
  set_attr(slot, name, value);
}

// The pending region's lock, taken without waiting (another thread's flush holds it: the Python path waits).
class LockGuard {
 public:
  explicit LockGuard(PyObject* lock) {
    Hooks& h = hooks();
    if (h.lock.ptr() != lock) {  // (the bound methods made once: a lookup and a method object per call cost more)
      h.acquire = attr(lock, names().acquire);
      h.release = attr(lock, names().release);
      h.no_wait = py::make_tuple(false);
      h.lock = py::reinterpret_borrow<py::object>(lock);
    }
    release_ = h.release;
    PyObject* got = PyObject_Call(h.acquire.ptr(), h.no_wait.ptr(), nullptr);
    if (got == nullptr) throw py::error_already_set();
    held_ = got == Py_True;
    Py_DECREF(got);
  }
  ~LockGuard() {
    if (!held_) return;
    PyObject* type;
    PyObject* value;
    PyObject* trace;
    PyErr_Fetch(&type, &value, &trace);  // (an error being raised survives the release)
    PyObject* done = PyObject_CallNoArgs(release_.ptr());
    Py_XDECREF(done);
    if (done == nullptr) PyErr_Clear();
    PyErr_Restore(type, value, trace);
  }
  bool held() const { return held_; }

 private:
  py::object release_;
  bool held_ = false;
};

// Small direct-mapped memos of user_frames' caches, by object identity (each entry holds its objects, so an address
// is never another object's): whether a code object's frames are ours (skipped), and the event origin (op name,
// user line) of an op issued at a user instruction. Their values never change for those objects (the file a code
// object is in; the line of an instruction), so they answer as the caches they copy; looking those up hashed the
// code object (its constants, every time) and a (code, offset) tuple per recorded op.
constexpr size_t kMemo = 256;
struct OursMemo {
  PyObject* code = nullptr;
  bool ours = false;
};
struct OriginMemo {
  PyObject* code = nullptr;
  int lasti = -1;
  PyObject* op = nullptr;
  PyObject* origin = nullptr;
};
OursMemo g_ours[kMemo];
OriginMemo g_origins[kMemo];

size_t memo_slot(const void* p, uintptr_t salt = 0) {
  return ((reinterpret_cast<uintptr_t>(p) >> 4) ^ (salt * 0x9E3779B1u)) % kMemo;
}

void clear_memos() {
  for (auto& m : g_ours) Py_CLEAR(m.code);
  for (auto& m : g_origins) {
    Py_CLEAR(m.code);
    Py_CLEAR(m.op);
    Py_CLEAR(m.origin);
  }
}

// (op, user_frames.user_line()) from its caches: the first frame up the stack whose code the caches call the
// user's, and that instruction's line. None (no error) where a cache misses, or no frame is found: the Python walk
// then.
py::object cached_origin(PyObject* op) {
  const Names& n = names();
  PyFrameObject* top = PyEval_GetFrame();
  if (top == nullptr) return py::none();
  PyObject* package = nullptr;
  Py_INCREF(top);
  auto frame = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(top));
  for (int depth = 0; depth < 40 && frame; ++depth) {
    auto* f = reinterpret_cast<PyFrameObject*>(frame.ptr());
    auto code = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetCode(f)));
    OursMemo& known = g_ours[memo_slot(code.ptr())];
    bool ours = known.ours;
    if (known.code != code.ptr()) {
      if (package == nullptr && (package = global(hooks().frames, n.package)) == nullptr) return py::none();
      PyObject* cached = PyDict_GetItemWithError(package, code.ptr());
      if (cached == nullptr) {
        if (PyErr_Occurred()) throw py::error_already_set();
        return py::none();
      }
      if (cached != Py_False && cached != Py_True) return py::none();
      ours = cached == Py_True;
      Py_INCREF(code.ptr());
      Py_XSETREF(known.code, code.ptr());
      known.ours = ours;
    }
    if (!ours) {
      const int lasti = PyFrame_GetLasti(f);
      OriginMemo& memo = g_origins[memo_slot(code.ptr(), static_cast<uintptr_t>(lasti) ^
                                                           (reinterpret_cast<uintptr_t>(op) >> 4))];
      if (memo.code == code.ptr() && memo.lasti == lasti && memo.op == op) {
        return py::reinterpret_borrow<py::object>(memo.origin);
      }
      PyObject* lines = global(hooks().frames, n.lines);
      if (lines == nullptr) return py::none();
      py::object key = py::make_tuple(code, py::int_(lasti));
      PyObject* line = PyDict_GetItemWithError(lines, key.ptr());
      if (line == nullptr) {
        if (PyErr_Occurred()) throw py::error_already_set();
        return py::none();
      }
      py::object origin = py::make_tuple(py::handle(op), py::handle(line));
      Py_INCREF(code.ptr());
      Py_XSETREF(memo.code, code.ptr());
      Py_INCREF(op);
      Py_XSETREF(memo.op, op);
      Py_INCREF(origin.ptr());
      Py_XSETREF(memo.origin, origin.ptr());
      memo.lasti = lasti;
      return origin;
    }
    frame = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetBack(f)));
  }
  return py::none();
}

bool truthy(PyObject* v) {
  const int t = PyObject_IsTrue(v);
  if (t < 0) throw py::error_already_set();
  return t == 1;
}

}  // namespace

PyObject* native_field(PyObject* obj, bool event, size_t index) {
  const Hooks& h = hooks();
  const py::object& type = event ? h.event_type : h.slot_type;
  const std::vector<Py_ssize_t>& offsets = event ? h.event_offsets : h.slot_offsets;
  if (!h.on || Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(type.ptr()) || index >= offsets.size()) return nullptr;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offsets[index]);
}

void put_tensors(py::list& list, const std::vector<at::Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    PyObject* t = THPVariable_Wrap(tensors[i]);
    if (t == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(list.ptr(), i, t);
  }
}

std::pair<py::bytes, py::tuple> python_layout(const std::vector<at::Tensor>& inputs,
                                              const std::vector<at::Tensor>& outputs) {
  std::vector<const void*> bases;
  const std::string layout = storage_layout(inputs, outputs, bases);
  py::tuple addresses(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) {
    addresses[i] = py::int_(reinterpret_cast<uintptr_t>(bases[i]));
  }
  return {py::bytes(layout), std::move(addresses)};
}

namespace {

// The call's scalar buffers: the items of `buffers` after the first `n_inputs` (the tensors' places).
py::tuple scalars_of(PyObject* buffers, size_t n_inputs) {
  const auto first = static_cast<Py_ssize_t>(n_inputs);
  const Py_ssize_t n = PyList_GET_SIZE(buffers);
  py::tuple scalars(n - first);
  for (Py_ssize_t i = first; i < n; ++i) {
    scalars[i - first] = py::reinterpret_borrow<py::object>(PyList_GET_ITEM(buffers, i));
  }
  return scalars;
}

// Outside DEFER_AND_FUSE (a whole-storage driver: pjrt): what deferred.record_cached does when the op's one-op
// region has a prepared launch (one_op_fast.run, then deferred._replayed), from here; false, with nothing
// launched, where the Python way must take the call (no plan yet, a kept or pending region, a profiler, a granted
// streak, the lock held elsewhere, a launch the prepared path declined: the long way then runs it).
bool launch_one(PyObject* token, size_t n_inputs, PyObject* buffers, PyObject* layout, PyObject* addresses,
                int64_t device, PyObject* region, PyObject* single, PyObject* lock) {
  const Hooks& h = hooks();
  const Names& n = names();
  PyObject* granted = global(h.streak, n.granted);
  PyObject* profiling = global(h.profiler, n.profiling);
  PyObject* plans = global(h.one_op, n.plans);
  PyObject* run = global(h.one_op, n.run);
  PyObject* replayed = global(h.deferred, n.replayed);
  if (granted == nullptr || profiling == nullptr || plans == nullptr || run == nullptr || replayed == nullptr ||
      truthy(granted) || truthy(profiling) || PyList_GET_SIZE(single)) {
    return false;
  }
  py::object events = attr(region, n.events);
  if (!PyList_Check(events.ptr()) || PyList_GET_SIZE(events.ptr()) != 0) return false;
  py::object memo = py::make_tuple(py::handle(PyTuple_GET_ITEM(token, 5)), py::handle(layout));
  const int planned = PyDict_Contains(plans, memo.ptr());
  if (planned < 0) throw py::error_already_set();
  if (!planned) return false;
  auto run_ref = py::reinterpret_borrow<py::object>(run);
  auto replayed_ref = py::reinterpret_borrow<py::object>(replayed);
  LockGuard guard(lock);
  if (!guard.held()) return false;
  py::object built = run_ref(py::handle(token), scalars_of(buffers, n_inputs), py::handle(layout),
                             py::handle(addresses), device);
  if (built.is_none()) return false;
  replayed_ref(built);
  return true;
}

}  // namespace

bool record_native(PyObject* token, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                   PyObject* buffers, PyObject* layout, PyObject* addresses, int64_t device) {
  const Hooks& h = hooks();
  if (!h.on || !PyTuple_Check(token) || PyTuple_GET_SIZE(token) != 6 || !PyList_Check(buffers)) return false;
  const Names& n = names();
  // (strong references from here on: user_line may run Python, and with it another thread)
  auto region_ref = py::reinterpret_borrow<py::object>(global(h.deferred, n.region));
  PyObject* region = region_ref.ptr();
  PyObject* single = global(h.deferred, n.single);
  PyObject* lock = global(h.deferred, n.lock);
  PyObject* active = global(h.poison, n.active);
  PyObject* stack = global(h.modes, n.stack);
  if (region == nullptr || single == nullptr || lock == nullptr || active == nullptr || stack == nullptr ||
      !PyList_Check(single) || !PyList_Check(stack)) {
    return false;
  }
  const Py_ssize_t depth = PyList_GET_SIZE(stack);
  PyObject* mode = depth ? PyList_GET_ITEM(stack, depth - 1) : global(h.modes, n.mode);
  if (mode != h.fuse.ptr()) {
    return launch_one(token, inputs.size(), buffers, layout, addresses, device, region, single, lock);
  }
  if (PyList_GET_SIZE(single) || truthy(active)) return false;
  py::object events = attr(region, n.events);
  if (!PyList_Check(events.ptr()) || PyList_GET_SIZE(events.ptr()) == 0) return false;
  if (PyLong_AsLongLong(attr(region, n.device).ptr()) != device) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return false;
  }
  LockGuard guard(lock);
  if (!guard.held()) return false;

  py::object memo = py::make_tuple(py::handle(PyTuple_GET_ITEM(token, 5)), py::handle(layout));
  PyObject* plans = global(h.plan, n.plans);
  PyObject* plan = plans == nullptr ? nullptr : PyDict_GetItemWithError(plans, memo.ptr());
  if (plan == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return false;
  }
  if (!PyTuple_Check(plan)) return false;  // None: the walk
  auto plan_ref = py::reinterpret_borrow<py::object>(plan);
  PyObject* storages = PyTuple_GET_ITEM(plan, 0);
  const Py_ssize_t n_storages = PyTuple_GET_SIZE(storages);
  if (n_storages != PyTuple_GET_SIZE(addresses)) return false;
  py::object slot_of = attr(region, n.slot_of);
  py::object slots = attr(region, n.slots);
  const Py_ssize_t n_slots = PyList_GET_SIZE(slots.ptr());
  py::tuple mapped(n_storages);
  std::vector<Py_ssize_t> added;  // storages new to the region (made by this call, or first met): new slots
  for (Py_ssize_t i = 0; i < n_storages; ++i) {
    PyObject* entry = PyTuple_GET_ITEM(storages, i);  // (first tensor, torch dtype, IR dtype, bytes, fresh)
    PyObject* slot = PyTuple_GET_ITEM(entry, 4) == Py_True
                         ? nullptr
                         : PyDict_GetItemWithError(slot_of.ptr(), PyTuple_GET_ITEM(addresses, i));
    if (slot == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      mapped[i] = py::int_(n_slots + static_cast<Py_ssize_t>(added.size()));
      added.push_back(i);
      continue;
    }
    const Py_ssize_t index = PyLong_AsSsize_t(slot);
    if (index < 0 || index >= n_slots) return false;
    py::object held = slot_field(PyList_GET_ITEM(slots.ptr(), index), 1, n.torch_dtype);
    if (held.ptr() != PyTuple_GET_ITEM(entry, 1)) return false;  // another dtype: record_fast refuses it
    mapped[i] = py::reinterpret_borrow<py::object>(slot);
  }
  PyObject* views = global(h.plan, n.views);
  py::object view_key = py::make_tuple(memo, mapped);
  PyObject* found = views == nullptr ? nullptr : PyDict_GetItemWithError(views, view_key.ptr());
  if (found == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return false;
  }
  auto found_ref = py::reinterpret_borrow<py::object>(found);
  PyObject* outs = PyTuple_GET_ITEM(found, 1);
  py::object origin = cached_origin(PyTuple_GET_ITEM(token, 0));
  if (origin.is_none()) {  // (its own frame, ours, then up: an autograd thread has no other)
    origin = py::make_tuple(py::handle(PyTuple_GET_ITEM(token, 0)), h.user_line(0));
  }
  py::tuple scalars = scalars_of(buffers, inputs.size());
  PyObject* program = PyTuple_GET_ITEM(token, 1);
  py::object event = make(h.event_type, h.event_offsets,
                          {{n.program, program}, {n.structure, PyTuple_GET_ITEM(token, 2)},
                           {n.inputs, PyTuple_GET_ITEM(found, 0)}, {n.outputs, outs}, {n.scalars, scalars.ptr()},
                           {n.origin, origin.ptr()}, {n.key, PyTuple_GET_ITEM(found, 2)}});
  std::vector<py::object> new_slots;  // as record_plan.hit makes them (deferred._new_slot for one first met)
  const auto n_in = static_cast<Py_ssize_t>(inputs.size());
  for (const Py_ssize_t i : added) {
    PyObject* entry = PyTuple_GET_ITEM(storages, i);
    const Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
    if (first < 0 || first >= n_in + static_cast<Py_ssize_t>(outputs.size())) return false;
    const at::Tensor& t = first < n_in ? inputs[first] : outputs[first - n_in];
    if (!t.has_storage() || !THPDtype_Check(PyTuple_GET_ITEM(entry, 1)) ||
        t.scalar_type() != reinterpret_cast<THPDtype*>(PyTuple_GET_ITEM(entry, 1))->scalar_type) {
      return false;
    }
    const c10::Storage& s = t.storage();
    PyObject* nbytes = PyTuple_GET_ITEM(entry, 3);
    if (PyLong_AsLongLong(nbytes) != static_cast<long long>(s.nbytes())) return false;
    py::object storage = make_storage_keep(s);
    const bool fresh = PyTuple_GET_ITEM(entry, 4) == Py_True;
    py::object key = fresh ? py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(addresses, i))
                           : py::int_(reinterpret_cast<uintptr_t>(s.data()));
    py::int_ numel(static_cast<long long>(s.nbytes()) / static_cast<long long>(t.element_size()));
    new_slots.push_back(make(h.slot_type, h.slot_offsets,
                             {{n.storage, storage.ptr()}, {n.torch_dtype, PyTuple_GET_ITEM(entry, 1)},
                              {n.dtype, PyTuple_GET_ITEM(entry, 2)}, {n.written, Py_False}, {n.key, key.ptr()},
                              {n.nbytes, nbytes}, {n.numel, numel.ptr()}, {n.holder, Py_None}}));
  }
  PyObject* ops = PyObject_GetAttr(program, n.ops);
  const Py_ssize_t n_ops = ops == nullptr ? -1 : PyObject_Length(ops);
  Py_XDECREF(ops);
  if (n_ops < 0) throw py::error_already_set();

  // the commit, as record_fast's: the new slots, the written flags, then the event
  for (size_t k = 0; k < added.size(); ++k) {
    if (PyList_Append(slots.ptr(), new_slots[k].ptr()) < 0 ||
        PyDict_SetItem(slot_of.ptr(), PyTuple_GET_ITEM(addresses, added[k]), mapped[added[k]].ptr()) < 0) {
      throw py::error_already_set();
    }
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outs); ++i) {
    const Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyTuple_GET_ITEM(outs, i), 0));
    set_slot_field(PyList_GET_ITEM(slots.ptr(), index), 3, n.written, Py_True);
  }
  if (PyList_Append(events.ptr(), event.ptr()) < 0) throw py::error_already_set();
  ++g_recorded;
  py::object ir_ops = attr(region, n.ir_ops) + py::int_(n_ops);
  set_attr(region, n.ir_ops, ir_ops.ptr());
  PyObject* stats = global(h.deferred, n.stats);
  if (stats != nullptr) set_attr(stats, n.ops_deferred, (attr(stats, n.ops_deferred) + py::int_(1)).ptr());
  PyObject* max_ops = global(h.deferred, n.max_ops);
  if (max_ops != nullptr) {
    const int over = PyObject_RichCompareBool(ir_ops.ptr(), max_ops, Py_GT);
    if (over < 0) throw py::error_already_set();
    if (over) {
      PyObject* flush = global(h.deferred, n.flush);
      TORCH_CHECK(flush != nullptr, "torchtpu.execution.deferred has no flush");
      PyObject* done = PyObject_CallNoArgs(flush);
      if (done == nullptr) throw py::error_already_set();
      Py_DECREF(done);
    }
  }
  return true;
}

void bind_record_native(py::module& m) {
  bind_storage_keep(m);
  // region_ir.Event and Slot made in Python untrack themselves (as `make` does here)
  m.def("gc_untrack", [](py::handle obj) {
    if (PyObject_IS_GC(obj.ptr())) PyObject_GC_UnTrack(obj.ptr());
  });
  m.def("fast_record_count", [] { return g_recorded; });
  // (deferred, poison, modes, record_plan, user_frames, one_op_fast, one_op_streak, profiler.events modules,
  // Event, Slot, the FUSE mode, user_line); None turns the path off
  m.def("fast_record_hooks", [](py::object deferred, py::object poison, py::object modes, py::object plan,
                                py::object frames, py::object one_op, py::object streak, py::object profiler,
                                py::object event, py::object slot, py::object fuse, py::object user_line) {
    Hooks& h = hooks();
    h.on = false;
    h.lock = h.acquire = h.release = py::object();
    clear_memos();
    if (deferred.is_none()) return;
    names();
    auto dict = [](const py::object& module) {
      return py::reinterpret_borrow<py::object>(PyModule_GetDict(module.ptr()));
    };
    h.deferred = dict(deferred);
    h.poison = dict(poison);
    h.modes = dict(modes);
    h.plan = dict(plan);
    h.frames = dict(frames);
    h.one_op = dict(one_op);
    h.streak = dict(streak);
    h.profiler = dict(profiler);
    TORCH_CHECK(PyType_Check(event.ptr()) && PyType_Check(slot.ptr()), "fast_record_hooks: Event and Slot types");
    h.event_type = event;
    h.slot_type = slot;
    h.fuse = fuse;
    h.user_line = user_line;
    h.event_offsets = member_offsets(event, {"program", "structure", "inputs", "outputs", "scalars", "origin", "key"});
    h.slot_offsets = member_offsets(slot, {"storage", "torch_dtype", "dtype", "written", "key", "nbytes", "numel",
                                           "_holder"});
    h.on = true;
  });
}

}  // namespace torchtpu
