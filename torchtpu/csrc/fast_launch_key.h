// The cache key of one dispatcher call (fast_launch.cpp's launch cache): the operator, the matmul precision, the
// default dtype and every argument as the Python kernel would see it (fast_launch_key.cpp).
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>
#include <ATen/core/Tensor.h>

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

// How an argument's scalars enter the key (eager._kinds; fast_launch.BY_VALUE...): by value (static), floats by
// type, or floats, ints and complex values by type (a traced lowering's Scalar-typed argument). Python says
// which, per schema position (registry._argument_modes), so both keys treat each argument alike.
enum ArgumentMode : uint8_t { kByValue = 0, kFloats = 1, kScalars = 2 };

// The key of the call whose `n_args` arguments end `stack`, or false when the call must take the Python path
// (an argument kind the key does not cover, a tensor off the tpu device, a lazy conjugate/negative bit,
// tensors on two devices). `device` gets the tpu device index. Float arguments the Python kernel receives (and
// 0-dim CPU float tensors), and the int and complex values of Scalar-typed ones, enter the key by type and
// their values go to `scalars`, in the Python signature's order (eager.signature), as `modes` (one per
// schema argument) says.
bool build_key(const void* op_id, int64_t precision, const c10::FunctionSchema& schema,
               const torch::jit::Stack& stack, size_t n_args, const std::vector<uint8_t>& modes,
               std::string& key, int64_t& device, std::vector<c10::IValue>& scalars);

// A recording hit's storage layout, for deferred.record_cached to look its one-op region up by instead of
// walking the tensors in Python: the bytes name, for each tensor (the inputs, then the outputs), its storage slot
// (storages numbered by first use), dtype, offset, sizes and strides ('Z' for an empty tensor or one without
// memory), then each slot's byte size; `bases` gets each slot's storage address.
std::string storage_layout(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                           std::vector<const void*>& bases);

}  // namespace torchtpu
