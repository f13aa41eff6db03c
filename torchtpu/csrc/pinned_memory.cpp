// Host memory handed to pinned tensors (pin_memory(), DataLoader's pin_memory=True): tpu's at::HostAllocator.
// The simulator's device memory is host memory already; for a PJRT device, pinned buffers are what host->device
// copies start from.
#include "pinned_memory.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace torchtpu {
namespace {

// Pinned host memory for tpu copies, an at::HostAllocator so that torch.accelerator's host-memory calls
// (empty_host_cache, host memory stats) reach it. Copies to and from the simulated device complete at the call,
// so a freed block is returned at once: no cache, no events to wait for.
struct PinnedAllocator final : at::HostAllocator {
  std::mutex mutex;
  std::unordered_map<const void*, size_t> live;  // block -> bytes
  at::HostStats stats;

  static void free_pinned(void* ptr);

  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nbytes ? std::aligned_alloc(64, (nbytes + 63) / 64 * 64) : nullptr;
    TORCH_CHECK(nbytes == 0 || ptr != nullptr, "pinned host allocation of ", nbytes, " bytes failed");
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(mutex);
      live.emplace(ptr, nbytes);
      for (auto* stat : {&stats.allocations, &stats.active_requests}) stat->increase(1);
      for (auto* stat : {&stats.allocated_bytes, &stats.active_bytes}) stat->increase(nbytes);
      stats.num_host_alloc += 1;
    }
    return {ptr, ptr, &PinnedAllocator::free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  bool record_event(void* ptr, void* /*ctx*/, c10::Stream /*stream*/) override { return is_pinned(ptr); }
  void empty_cache() override {}
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mutex);
    return stats;
  }
  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto* stat : {&stats.allocations, &stats.active_requests, &stats.allocated_bytes, &stats.active_bytes}) {
      stat->reset_accumulated();
    }
    stats.num_host_alloc = stats.num_host_free = 0;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto* stat : {&stats.allocations, &stats.active_requests, &stats.allocated_bytes, &stats.active_bytes}) {
      stat->reset_peak();
    }
  }
  c10::DeleterFnPtr raw_deleter() const override { return &PinnedAllocator::free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
  bool is_pinned(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    return live.count(ptr) > 0;
  }
};

PinnedAllocator g_pinned;
REGISTER_HOST_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_pinned);

void PinnedAllocator::free_pinned(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_pinned.mutex);
    auto it = g_pinned.live.find(ptr);
    if (it != g_pinned.live.end()) {
      for (auto* stat : {&g_pinned.stats.allocations, &g_pinned.stats.active_requests}) stat->decrease(1);
      for (auto* stat : {&g_pinned.stats.allocated_bytes, &g_pinned.stats.active_bytes}) stat->decrease(it->second);
      g_pinned.stats.num_host_free += 1;
      g_pinned.live.erase(it);
    }
  }
  std::free(ptr);
}

}  // namespace

c10::Allocator* pinned_allocator() { return &g_pinned; }

bool pinned_is_pinned(const void* ptr) { return g_pinned.is_pinned(ptr); }

}  // namespace torchtpu
