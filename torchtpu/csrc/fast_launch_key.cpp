// The launch cache's key (fast_launch_key.h): tensors by dtype and sizes (and strides, where not the default
// contiguous ones), floats (and host 0-d float tensors) and
// the int and complex values of Scalar-typed arguments by type, other scalars by type and value, other host 0-d
// tensors by their bytes, devices by index, lists item by item; the arguments an op declares static by value.
#include "fast_launch_key.h"

#include <ATen/ATen.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>


namespace torchtpu {
namespace {

template <typename T>
void put(std::string& key, T value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Exactly the strides at::empty(t.sizes()) gives (out_layout.default_strided): a size-0 dimension counts as 1.
bool default_strides(const at::Tensor& t) {
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  int64_t expected = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (strides[i] != expected) return false;
    expected *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return true;
}

bool put_tensor(const at::Tensor& t, std::string& key, int64_t& device) {
  if (!t.defined()) {
    key.push_back('U');
    return true;
  }
  if (!t.device().is_privateuseone() || t.is_conj() || t.is_neg()) return false;
  int64_t d = t.device().index();
  if (device >= 0 && d != device) return false;
  device = d;
  key.push_back('T');
  put(key, static_cast<int8_t>(t.scalar_type()));
  put(key, static_cast<int64_t>(t.dim()));
  for (int64_t s : t.sizes()) put(key, s);
  if (!default_strides(t)) {  // they decide the outputs' layout (execution/out_layout.py), as in eager's key
    key.push_back('P');
    for (int64_t s : t.strides()) put(key, s);
  }
  return true;
}

bool put_scalar(const c10::IValue& v, std::string& key) {
  if (v.isNone()) {
    key.push_back('N');
  } else if (v.isBool()) {
    key.push_back('B');
    put(key, v.toBool());
  } else if (v.isInt()) {
    key.push_back('I');
    put(key, v.toInt());
  } else if (v.isDouble()) {
    key.push_back('D');
    put(key, v.toDouble());  // the bits: 0.0 and -0.0 differ, as in the Python key
  } else {
    return false;
  }
  return true;
}

// A scalar argument or Scalar[] item: floats (and, in a Scalar-typed argument, ints and complex values) by type,
// their values into `values` in the order the Python signature visits them; everything else by value.
bool put_value(const c10::IValue& v, std::string& key, std::vector<c10::IValue>* values, bool scalar_typed) {
  if (values != nullptr && (v.isDouble() || (scalar_typed && (v.isInt() || v.isComplexDouble())))) {
    key.push_back(v.isDouble() ? 'F' : v.isInt() ? 'i' : 'x');
    values->push_back(v);
    return true;
  }
  return put_scalar(v, key);
}


bool put_device(const c10::Device& d, std::string& key, int64_t& device) {
  if (!d.is_privateuseone()) return false;
  int64_t index = d.has_index()
                      ? d.index()
                      : c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index();
  if (device >= 0 && index != device) return false;
  device = index;
  key.push_back('V');
  put(key, index);
  return true;
}

}  // namespace

bool is_default(const c10::Argument& arg, const c10::IValue& v) {
  if (!arg.default_value()) return false;
  const c10::IValue& d = *arg.default_value();
  if (d.isNone() || v.isNone()) return d.isNone() && v.isNone();
  if (d.isBool() && v.isBool()) return d.toBool() == v.toBool();
  if (d.isInt() && v.isInt()) return d.toInt() == v.toInt();
  if (d.isDouble() && v.isDouble()) return d.toDouble() == v.toDouble();
  if (d.isIntList() && v.isIntList()) return d.toIntVector() == v.toIntVector();
  if (d.isString() && v.isString()) return d.toStringRef() == v.toStringRef();
  return false;
}

size_t passed_positional(const c10::FunctionSchema& schema, const c10::IValue* values, size_t n_args,
                         size_t& n_positional) {
  n_positional = 0;
  while (n_positional < n_args && !schema.arguments()[n_positional].kwarg_only()) ++n_positional;
  size_t last = n_positional;
  while (last > 0 && is_default(schema.arguments()[last - 1], values[last - 1])) --last;
  return last;
}

bool build_key(const void* op_id, int64_t precision, const c10::FunctionSchema& schema,
               const torch::jit::Stack& stack, size_t n_args, const std::vector<uint8_t>& modes,
               std::string& key, int64_t& device, std::vector<c10::IValue>& scalars) {
  key.reserve(128);
  put(key, op_id);
  put(key, precision);
  // torch.get_default_dtype(): what an integer op's float result and a factory without dtype= take
  put(key, static_cast<int8_t>(c10::typeMetaToScalarType(c10::get_default_dtype())));
  device = -1;
  const c10::IValue* values = stack.data() + (stack.size() - n_args);
  size_t n_positional = 0;
  const size_t passed = passed_positional(schema, values, n_args, n_positional);
  for (size_t i = 0; i < n_args; ++i) {
    const c10::IValue& v = values[i];
    std::vector<c10::IValue>* input = &scalars;
    const uint8_t mode = i < modes.size() ? modes[i] : kFloats;
    const bool scalar_typed = mode == kScalars;
    if (mode == kByValue || (i < n_positional ? i >= passed : is_default(schema.arguments()[i], v))) {
      input = nullptr;  // keyed by value: static, or left out of the Python call (the lowering's default)
    }
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!t.defined()) {
        key.push_back('U');
        continue;
      }
      if (t.device().is_cpu() && t.dim() == 0 && !t.requires_grad() && !t.is_conj() && !t.is_neg()) {
        if (input != nullptr && at::isFloatingType(t.scalar_type())) {
          // a Python float the dispatcher wrapped (the Python kernel receives the float itself) or a host
          // float scalar: a program input either way
          key.push_back(t.unsafeGetTensorImpl()->is_wrapped_number() ? 'F' : 'c');
          put(key, static_cast<int8_t>(t.scalar_type()));
          input->push_back(c10::IValue(t.item<double>()));
          continue;
        }
        const auto st = t.scalar_type();  // an int one (`x + 2`) too: eager._INT_SCALAR_DTYPES
        const bool wrapped = t.unsafeGetTensorImpl()->is_wrapped_number();  // Python gets the int itself
        if (input != nullptr && (scalar_typed || !wrapped) &&
            (st == at::kByte || st == at::kChar || st == at::kShort || st == at::kInt || st == at::kLong)) {
          key.push_back(wrapped ? 'J' : 'j');  // the Python kernel gets an int, or a tensor: two traces
          put(key, static_cast<int8_t>(st));
          input->push_back(c10::IValue(t.item<int64_t>()));
          continue;
        }
        if (input != nullptr && scalar_typed && wrapped && at::isComplexType(st)) {
          key.push_back('k');  // a wrapped complex: the Python kernel gets a complex, an input of a Tensor argument
          input->push_back(c10::IValue(t.item<c10::complex<double>>()));
          continue;
        }
        key.push_back(wrapped ? 'W' : 'C');  // a host scalar: the Python kernel takes its value as a constant
        put(key, static_cast<int8_t>(t.scalar_type()));
        // its bytes (not item<int64_t>(): a uint64 beyond int64's range, or a copy's uninitialized destination)
        key.append(static_cast<const char*>(t.const_data_ptr()), t.element_size());
        continue;
      }
      if (!put_tensor(t, key, device)) return false;
    } else if (put_value(v, key, input, scalar_typed)) {
      continue;
    } else if (v.isDevice()) {
      if (!put_device(v.toDevice(), key, device)) return false;
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      key.push_back('l');
      put(key, static_cast<int64_t>(list.size()));
      for (const at::Tensor& t : list) {
        if (!t.defined() || !put_tensor(t, key, device)) return false;
      }
    } else if (v.isList()) {  // Scalar[], int[], Tensor?[]
      auto list = v.toListRef();
      key.push_back('s');
      put(key, static_cast<int64_t>(list.size()));
      for (const auto& item : list) {
        if (item.isTensor()) {
          if (!put_tensor(item.toTensor(), key, device)) return false;  // undefined: 'U', as None to Python
        } else if (!put_value(item, key, input, scalar_typed)) {
          return false;
        }
      }
    } else if (v.isString()) {
      key.push_back('S');
      const auto& text = v.toStringRef();
      put(key, static_cast<int64_t>(text.size()));
      key.append(text);
    } else {
      return false;
    }
  }
  return device >= 0;
}

// A recording hit's storage layout (fast_launch_key.h).
std::string storage_layout(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                           std::vector<const void*>& bases) {
  std::string layout;
  std::vector<int64_t> nbytes;
  auto add = [&](const at::Tensor& t) {
    if (!t.has_storage() || t.numel() == 0 || t.data_ptr() == nullptr) {
      layout.push_back('Z');
      return;
    }
    const c10::Storage& storage = t.storage();
    const void* base = storage.data();
    size_t slot = 0;
    while (slot < bases.size() && bases[slot] != base) ++slot;
    if (slot == bases.size()) {
      bases.push_back(base);
      nbytes.push_back(static_cast<int64_t>(storage.nbytes()));
    }
    layout.push_back('S');
    put(layout, static_cast<int32_t>(slot));
    put(layout, static_cast<int8_t>(t.scalar_type()));
    put(layout, static_cast<int64_t>(t.storage_offset()));
    put(layout, static_cast<int64_t>(t.dim()));
    for (int64_t s : t.sizes()) put(layout, s);
    for (int64_t s : t.strides()) put(layout, s);
  };
  for (const at::Tensor& t : inputs) add(t);
  for (const at::Tensor& t : outputs) add(t);
  for (int64_t n : nbytes) put(layout, n);
  return layout;
}

}  // namespace torchtpu
