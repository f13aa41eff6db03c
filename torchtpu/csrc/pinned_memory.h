// Pinned host memory for tpu copies (pinned_memory.cpp): the allocator PrivateUse1's hooks hand out.
#pragma once

#include <c10/core/Allocator.h>

namespace torchtpu {

// The pinned host allocator (also registered as PrivateUse1's at::HostAllocator).
c10::Allocator* pinned_allocator();

// Whether `ptr` is the start of a live pinned block.
bool pinned_is_pinned(const void* ptr);

}  // namespace torchtpu
