// The cache key of one dispatcher call (fast_launch.cpp's launch cache): the operator, the matmul precision and
// every argument as the Python kernel would see it (fast_launch_key.cpp).
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torchtpu {

// Whether `v` is the argument's default (torch.library leaves such arguments out of the Python call).
bool is_default(const c10::Argument& arg, const c10::IValue& v);

// How many leading arguments the Python kernel receives positionally (those after the last non-default
// positional one are left out, as torch.library does); `n_positional` gets the schema's positional count.
size_t passed_positional(const c10::FunctionSchema& schema, const c10::IValue* values, size_t n_args,
                         size_t& n_positional);

// The key of the call whose `n_args` arguments end `stack`, or false when the call must take the Python path
// (an argument kind the key does not cover, a tensor off the tpu device, a lazy conjugate/negative bit,
// tensors on two devices). `device` gets the tpu device index. Float arguments the Python kernel receives (and
// 0-dim CPU float tensors) enter the key by type and their values go to `floats`, in the Python signature's
// order (eager.signature), except at the schema positions `is_static` marks, which are keyed by value.
bool build_key(const void* op_id, int64_t precision, const c10::FunctionSchema& schema,
               const torch::jit::Stack& stack, size_t n_args, const std::vector<bool>& is_static,
               std::string& key, int64_t& device, std::vector<double>& floats);

}  // namespace torchtpu
