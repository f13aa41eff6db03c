// The native part of torchtpu: a host-memory allocator for PrivateUse1 that accounts bytes per device
// against the simulated chip's HBM, the device guard, and the view/metadata ops that ATen implements
// device-generically. Compute kernels live in Python (torch.library on PrivateUse1).
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/TensorShape.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/extension.h>
#include <torch/library.h>

#include "pinned_memory.h"
#include "realloc_settle.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace torchtpu {

constexpr int kMaxDevices = 64;

struct DeviceCounters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> limit{INT64_MAX};
  std::atomic<int64_t> num_allocs{0};
  std::atomic<int64_t> num_frees{0};
  std::atomic<int64_t> num_ooms{0};
  std::atomic<int64_t> live{0};  // blocks alive now (num_allocs - num_frees until accumulated stats are reset)
};

static DeviceCounters g_counters[kMaxDevices];
// Drivers whose device memory is not host memory (PJRT) keep a buffer per storage; they learn of frees here.
static std::atomic<bool> g_track_frees{false};
static std::mutex g_freed_mutex;
static std::vector<int64_t> g_freed;
static std::atomic<int> g_device_count{1};
static thread_local c10::DeviceIndex t_current_device = 0;
// Memory history (torchtpu/profiler/memory.py): while on, every allocation and free calls back into Python
// (which takes the Python stack); the OOM note callback adds the largest live tensors to the OOM message.
static std::atomic<bool> g_history{false};
static PyObject* g_alloc_cb = nullptr;  // (ptr, size, device, is_alloc) -> None
static PyObject* g_oom_cb = nullptr;    // (device, nbytes) -> str

static void notify_alloc(void* ptr, int64_t size, int device, bool is_alloc) {
  if (!g_history.load(std::memory_order_relaxed) || g_alloc_cb == nullptr || !Py_IsInitialized() ||
      _Py_IsFinalizing()) {
    return;
  }
  py::gil_scoped_acquire gil;
  PyObject* r = PyObject_CallFunction(g_alloc_cb, "Llii", reinterpret_cast<long long>(ptr),
                                      static_cast<long long>(size), device, is_alloc ? 1 : 0);
  if (r == nullptr) {
    PyErr_WriteUnraisable(g_alloc_cb);
  }
  Py_XDECREF(r);
}

static std::string oom_note(int device, int64_t nbytes) {
  if (g_oom_cb == nullptr || !Py_IsInitialized() || _Py_IsFinalizing()) {
    return "";
  }
  py::gil_scoped_acquire gil;
  PyObject* r = PyObject_CallFunction(g_oom_cb, "iL", device, static_cast<long long>(nbytes));
  std::string out;
  if (r != nullptr && PyUnicode_Check(r)) {
    out = PyUnicode_AsUTF8(r);
  } else if (r == nullptr) {
    PyErr_WriteUnraisable(g_oom_cb);
  }
  Py_XDECREF(r);
  return out;
}

// Every device index that reaches the counters or the current-device slot is checked here first: the counter
// table has kMaxDevices entries and only the first g_device_count are devices of this process.
static void check_index(int64_t device) {
  const int count = g_device_count.load();
  TORCH_CHECK(device >= 0 && device < count, "tpu:", device, " is not a device of this process (invalid device ",
              "ordinal ", device, "); valid indices are 0..", count - 1, " (", count,
              count == 1 ? " tpu device" : " tpu devices", ": this host's chips; TORCHTPU_NUM_DEVICES or ",
              "TORCHTPU_TOPOLOGY sets how many the simulator has)");
}

struct Block {
  void* ptr;
  int64_t size;
  int device;
};

static void delete_block(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  notify_alloc(block->ptr, block->size, block->device, false);
  if (g_track_frees.load()) {
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    g_freed.push_back(reinterpret_cast<int64_t>(block->ptr));
  }
  g_counters[block->device].allocated -= block->size;
  g_counters[block->device].num_frees += 1;
  g_counters[block->device].live -= 1;
  std::free(block->ptr);
  delete block;
}

static void reserve(int device, int64_t nbytes) {
  auto& c = g_counters[device];
  int64_t before = c.allocated.fetch_add(nbytes);
  if (before + nbytes > c.limit.load()) {
    c.allocated -= nbytes;
    c.num_ooms += 1;
    TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu:", device, " out of simulated HBM: tried to allocate ",
                     nbytes, " bytes; ", before, " bytes already allocated of ", c.limit.load(),
                     " bytes total (", c.limit.load() - before,
                     " bytes free). Free tensors, use a smaller batch, or pick a chip with more HBM "
                     "(TORCHTPU_CHIP).", oom_note(device, nbytes));
  }
  int64_t now = before + nbytes;
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  c.num_allocs += 1;
  c.live += 1;
}

// A c10::DeviceAllocator, so that torch.accelerator's memory calls (memory_allocated, memory_stats,
// empty_cache, reset_peak_memory_stats, get_memory_info) reach these counters as torch.tpu's do.
struct TpuAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    int device = t_current_device;
    check_index(device);
    c10::Device dev(c10::DeviceType::PrivateUse1, device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &c10::detail::deleteNothing, dev};
    }
    reserve(device, static_cast<int64_t>(nbytes));
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, rounded);
    if (ptr == nullptr) {
      g_counters[device].allocated -= static_cast<int64_t>(nbytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu:", device, " host allocation of ", nbytes,
                       " bytes failed (the simulator keeps device memory in host RAM)");
    }
    notify_alloc(ptr, static_cast<int64_t>(nbytes), device, true);
    return {ptr, new Block{ptr, static_cast<int64_t>(nbytes), device}, &delete_block, dev};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
  bool initialized() override { return true; }
  // Each free returns its memory: there is no cache to empty.
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}
  // Memory is freed when its storage dies, never reused while a stream could still read it: nothing to record.
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_index(device);
    auto& c = g_counters[device];
    c10::CachingDeviceAllocator::DeviceStats stats;
    const int64_t allocated = c.allocated.load(), peak = c.peak.load();
    for (auto* bytes : {&stats.allocated_bytes, &stats.active_bytes, &stats.reserved_bytes}) {
      auto& all = (*bytes)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
      all.current = allocated;
      all.peak = peak;
    }
    auto& blocks = stats.allocation[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    blocks.current = c.live.load();
    blocks.peak = blocks.current;
    blocks.allocated = c.num_allocs.load();
    blocks.freed = c.num_frees.load();
    stats.num_ooms = c.num_ooms.load();
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_index(device);
    g_counters[device].num_allocs = 0;
    g_counters[device].num_frees = 0;
    g_counters[device].num_ooms = 0;
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    check_index(device);
    g_counters[device].peak = g_counters[device].allocated.load();
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_index(device);
    const int64_t limit = g_counters[device].limit.load();
    return {static_cast<size_t>(std::max<int64_t>(limit - g_counters[device].allocated.load(), 0)),
            static_cast<size_t>(limit)};
  }
};

static TpuAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// ---- streams and events: ids here, their simulated clocks in Python (torchtpu/streams.py) ----
// Stream id 0 is each device's default stream; other ids are (serial << 4) | (priority + 8), priority clamped to
// kMinPriority..kMaxPriority (lower is higher, as CUDA's). The current stream is per thread and device, as CUDA's.
constexpr int kMinPriority = -8;
constexpr int kMaxPriority = 7;
constexpr int kPoolSize = 4;
static thread_local int64_t t_current_stream[kMaxDevices] = {};
static std::atomic<int64_t> g_next_stream{1};
static std::atomic<int64_t> g_next_event{1};
static std::mutex g_pool_mutex;
static int64_t g_pool[kMaxDevices][2][kPoolSize] = {};
static int g_pool_next[kMaxDevices][2] = {};
static PyObject* g_stream_cb = nullptr;  // (kind, *ints) -> None | bool | float: torchtpu/streams.py _on_native

static int64_t new_stream_id(int priority) {
  const int clamped = std::min(std::max(priority, kMinPriority), kMaxPriority);
  return (g_next_stream.fetch_add(1) << 4) | static_cast<int64_t>(clamped - kMinPriority);
}

static int64_t stream_priority(int64_t id) {
  return id == 0 ? 0 : (id & 15) + kMinPriority;
}

static int64_t pool_stream_id(int device, bool high) {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  int& next = g_pool_next[device][high ? 1 : 0];
  int64_t& slot = g_pool[device][high ? 1 : 0][next];
  next = (next + 1) % kPoolSize;
  if (slot == 0) slot = new_stream_id(high ? -1 : 0);
  return slot;
}

static int device_of(c10::Device d) {
  const int index = d.has_index() ? d.index() : t_current_device;
  check_index(index);
  return index;
}

static c10::Stream stream_of(int device, int64_t id) {
  return c10::Stream::unpack3(id, static_cast<c10::DeviceIndex>(device), c10::DeviceType::PrivateUse1);
}

static int64_t event_id(void* event) { return reinterpret_cast<int64_t>(event); }

// Calls the Python side and returns its result as a number (None: 0, a bool: 0 or 1), converted under the GIL;
// a Python exception becomes a c10::Error (RuntimeError) carrying its message.
template <typename... Args>
static double stream_call(const char* kind, Args... args) {
  TORCH_CHECK(g_stream_cb != nullptr, "tpu streams are not initialised (torchtpu/streams.py registers them at load)");
  std::string error;
  {
    py::gil_scoped_acquire gil;
    try {
      py::object r = py::reinterpret_borrow<py::object>(g_stream_cb)(kind, static_cast<long long>(args)...);
      return r.is_none() ? 0.0 : r.cast<double>();
    } catch (py::error_already_set& e) {
      error = e.what();
    }
  }
  TORCH_CHECK(false, error);
}

struct TpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old(kType, t_current_device);
    if (d.index() >= 0) {
      check_index(d.index());
      t_current_device = d.index();
    }
    return old;
  }
  c10::Device getDevice() const override { return {kType, t_current_device}; }
  void setDevice(c10::Device d) const override {
    check_index(d.index());
    t_current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < g_device_count.load()) t_current_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    const int index = device_of(d);
    return stream_of(index, t_current_stream[index]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return stream_of(device_of(d), 0); }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    return stream_of(device_of(d), new_stream_id(priority));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override {
    return stream_of(device_of(d), pool_stream_id(device_of(d), isHighPriority));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    const int index = device_of(s.device());
    const int64_t old = t_current_stream[index];
    if (old != s.id()) {
      stream_call("switch", index, old, s.id());  // pending work is charged on the stream it was issued on
      t_current_stream[index] = s.id();
    }
    return stream_of(index, old);
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    const int event_device = device_index;  // c10::DeviceIndex is a char: print it as a number
    const int stream_device = stream.device_index();
    TORCH_CHECK(event_device == -1 || event_device == stream_device, "tpu event of tpu:", event_device,
                " cannot be recorded on a stream of tpu:", stream_device,
                ": an event belongs to the device of its first record; record it on a stream of tpu:", event_device);
    check_index(stream.device_index());
    if (*event == nullptr) {
      *event = reinterpret_cast<void*>(g_next_event.fetch_add(1));
    }
    stream_call("record", event_id(*event), stream.device_index(), stream.id(),
                flag == c10::EventFlag::BACKEND_DEFAULT ? 1 : 0);
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    check_index(stream.device_index());
    stream_call("block", event_id(event), stream.device_index(), stream.id());
  }
  bool queryEvent(void* event) const override {
    return event == nullptr || stream_call("query", event_id(event)) != 0.0;
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) stream_call("sync_event", event_id(event));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex device_index) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "both tpu events must be recorded before elapsed_time");
    return stream_call("elapsed", event_id(start), event_id(end), device_index);
  }
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {
    if (event == nullptr || g_stream_cb == nullptr || !Py_IsInitialized() || _Py_IsFinalizing()) return;
    try {
      stream_call("destroy", event_id(event), device_index);
    } catch (...) {  // a destructor: the event's record is dropped either way
    }
  }
  bool queryStream(const c10::Stream& s) const override {
    return stream_call("query_stream", device_of(s.device()), s.id()) != 0.0;
  }
  void synchronizeStream(const c10::Stream& s) const override {
    stream_call("sync_stream", device_of(s.device()), s.id());
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    stream_call("sync_device", device_index < 0 ? t_current_device : device_index);
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(g_device_count.load());
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

// ---- hooks: pinned host memory (DataLoader pin_memory, Trainer) and device queries ----

struct TpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(g_device_count.load()); }
  bool isPinnedPtr(const void* data) const override { return pinned_is_pinned(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  // storage.resize_(n) (FSDP2 frees unsharded parameters with resize_(0) and brings them back with resize_(n)):
  // a new block from the allocator on the storage's device (accounted), the old bytes copied, the old block freed.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "tpu storage of ", impl->nbytes(), " bytes is not resizable (it wraps memory "
                "it does not own)");
    const c10::Device device = impl->data_ptr().device();
    TORCH_CHECK(device.is_privateuseone(), "resizePrivateUse1Bytes got a storage on ", device);
    settle_before_realloc(impl->data());
    const c10::DeviceGuard guard(device);
    c10::DataPtr fresh = g_allocator.allocate(newsize);
    const size_t keep = std::min(newsize, impl->nbytes());
    if (keep > 0 && impl->data() != nullptr) {
      std::memcpy(fresh.get(), impl->data(), keep);
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

static bool register_hooks() {
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  return true;
}
static const bool g_hooks_registered = register_hooks();

// ---- view and metadata ops: ATen's device-generic implementations ----

// The dtypes a tpu storage may hold (dtypes.STORAGE, set at registration) and the refusal's text for the others:
// every dtype's Python name, and the supported list.
static std::vector<bool> g_storage_dtypes;
static std::vector<std::string> g_dtype_names;
static std::string g_supported_names;

static void set_storage_dtypes(const std::vector<at::ScalarType>& held,
                               const std::vector<std::pair<at::ScalarType, std::string>>& names,
                               const std::string& supported) {
  const auto n = static_cast<size_t>(at::ScalarType::NumOptions);
  g_storage_dtypes.assign(n, false);
  for (at::ScalarType t : held) g_storage_dtypes[static_cast<size_t>(t)] = true;
  g_dtype_names.assign(n, "");
  for (const auto& [t, name] : names) g_dtype_names[static_cast<size_t>(t)] = name;
  g_supported_names = supported;
}

static at::ScalarType held_dtype(std::optional<c10::ScalarType> dtype) {
  const at::ScalarType t = c10::dtype_or_default(dtype);
  const auto i = static_cast<size_t>(t);
  TORCH_CHECK_TYPE(g_storage_dtypes.empty() || g_storage_dtypes[i],
                   "a new tpu tensor (empty, a factory, .to): dtype ",
                   g_dtype_names[i].empty() ? c10::toString(t) : g_dtype_names[i],
                   " is not supported on the tpu device (no device storage for it); supported: ", g_supported_names,
                   ". Convert first (e.g. x.to(torch.float32)) or keep the tensor on the CPU.");
  return t;
}

static at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                      std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                      std::optional<bool> pin_memory,
                                      std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "tpu supports only strided tensors");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, &g_allocator, ks, held_dtype(dtype), memory_format);
}

static at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                                std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                                std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "tpu supports only strided tensors");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, &g_allocator, ks, held_dtype(dtype));
}

static at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                             std::optional<c10::SymInt> storage_offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

static const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                                 std::optional<at::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  const at::IntArrayRef sizes = C10_AS_INTARRAYREF_SLOW(size);
  const size_t needed = at::detail::computeStorageNbytesContiguous(sizes, self.dtype().itemsize(),
                                                                   self.storage_offset());
  if (self.storage() && needed > self.storage().nbytes()) {  // the storage gets a new, larger block
    settle_before_realloc(self.storage().data());
  }
  return at::native::resize_(self, sizes, memory_format);
}

static at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

static at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

static at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

static at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, source);
}

static at::Tensor& set_source_storage_offset(at::Tensor& self, at::Storage storage, int64_t offset,
                                             c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::cpu::set_(self, storage, offset, size, stride);
}

static at::Tensor& set_empty(at::Tensor& self) {
  return at::cpu::set_(self);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("resize_", resize_);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("view", view);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_", set_empty);
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));  // same storage, offset, sizes, strides
}

// ---- helpers for the Python side ----

// A CPU tensor over the same host memory, sizes, strides and offset: how the sim driver reads and writes.
static at::Tensor cpu_alias(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_privateuseone(), "cpu_alias expects a tpu tensor, got ", t.device());
  auto opts = t.options().device(at::kCPU);
  if (t.storage().data() == nullptr) {
    return at::empty_strided(t.sizes(), t.strides(), opts);
  }
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), opts);
}

static std::vector<int64_t> memory_counters(int64_t device) {
  check_index(device);
  auto& c = g_counters[device];
  return {c.allocated.load(), c.peak.load(), c.limit.load(), c.num_allocs.load(), c.num_frees.load(),
          c.num_ooms.load(), c.live.load()};
}

static void reset_peak(int64_t device) {
  g_allocator.resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

static void reset_accumulated(int64_t device) {
  g_allocator.resetAccumulatedStats(static_cast<c10::DeviceIndex>(device));
}

static void set_limit(int64_t device, int64_t limit) {
  check_index(device);
  g_counters[device].limit = limit;
}

static void set_device_count(int64_t n) {
  TORCH_CHECK(n >= 1 && n <= kMaxDevices, "tpu device count ", n, " is out of range: valid counts are 1..",
              kMaxDevices);
  g_device_count = static_cast<int>(n);
}

static void set_track_frees(bool on) { g_track_frees = on; }

static std::vector<int64_t> drain_freed() {
  std::lock_guard<std::mutex> lock(g_freed_mutex);
  std::vector<int64_t> out;
  out.swap(g_freed);
  return out;
}

static void set_memory_hooks(py::object alloc_cb, py::object oom_cb, bool history) {
  g_history = false;
  for (auto [slot, cb] : {std::pair{&g_alloc_cb, alloc_cb}, std::pair{&g_oom_cb, oom_cb}}) {
    Py_XDECREF(*slot);
    *slot = cb.is_none() ? nullptr : cb.inc_ref().ptr();
  }
  g_history = history && g_alloc_cb != nullptr;
}

static void set_stream_callback(py::object cb) {
  Py_XDECREF(g_stream_cb);
  g_stream_cb = cb.is_none() ? nullptr : cb.inc_ref().ptr();
}

static int64_t current_stream(int64_t device) {
  check_index(device);
  return t_current_stream[device];
}

static int64_t storage_ptr(const at::Tensor& t) {
  return reinterpret_cast<int64_t>(t.storage().data());
}

void bind_fast_launch(py::module& m);      // fast_launch.cpp
void bind_realloc_settle(py::module& m);  // realloc_settle.cpp
void bind_array_overlap(py::module& m);   // array_overlap.cpp
void bind_region_flush(py::module& m);    // region_flush.cpp
void bind_buffer_views(py::module& m);    // buffer_views.cpp

}  // namespace torchtpu

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  torchtpu::bind_fast_launch(m);
  torchtpu::bind_realloc_settle(m);
  torchtpu::bind_array_overlap(m);
  torchtpu::bind_region_flush(m);
  torchtpu::bind_buffer_views(m);
  m.def("cpu_alias", &torchtpu::cpu_alias);
  m.def("memory_counters", &torchtpu::memory_counters);
  m.def("reset_peak", &torchtpu::reset_peak);
  m.def("reset_accumulated", &torchtpu::reset_accumulated);
  m.def("set_limit", &torchtpu::set_limit);
  m.def("set_device_count", &torchtpu::set_device_count);
  m.def("set_storage_dtypes", &torchtpu::set_storage_dtypes);
  m.def("storage_ptr", &torchtpu::storage_ptr);
  m.def("set_stream_callback", &torchtpu::set_stream_callback);
  m.def("current_stream", &torchtpu::current_stream);
  m.def("stream_priority", &torchtpu::stream_priority);
  m.def("set_track_frees", &torchtpu::set_track_frees);
  m.def("drain_freed", &torchtpu::drain_freed);
  m.def("set_memory_hooks", &torchtpu::set_memory_hooks);
}
