// Pending work lands before a tpu storage gets a new block (realloc_settle.cpp).
#pragma once

namespace torchtpu {

// Calls Python's settle callback (torchtpu/execution/realloc_settle.py) with the old block's address; a Python
// error (the pending region's) propagates as the resize's error.
void settle_before_realloc(const void* block);

}  // namespace torchtpu
