// The forward pass's side of ActivationObserver (include/inkling/observer.h): a tap that names
// tensors under a prefix ("layers.3.") and does nothing when no observer is set.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "inkling/observer.h"

namespace inkling {

struct Tap {
  ActivationObserver* obs = nullptr;
  std::string prefix;

  explicit operator bool() const { return obs != nullptr; }
  // A tap for a sub-module: "layers.3." + "self_attn." ...
  Tap sub(const std::string& name) const { return obs ? Tap{obs, prefix + name} : Tap{}; }
  bool wants(const char* name) const { return obs && obs->wants(prefix + name); }
  void operator()(const char* name, const float* data, std::initializer_list<int64_t> shape) const {
    if (!obs) return;
    const std::string full = prefix + name;
    if (obs->wants(full)) obs->on_tensor(full, {shape.begin(), shape.size()}, data);
  }
  void ids(const char* name, const int32_t* data, std::initializer_list<int64_t> shape) const {
    if (!obs) return;
    const std::string full = prefix + name;
    if (obs->wants(full)) obs->on_ids(full, {shape.begin(), shape.size()}, data);
  }
};

}  // namespace inkling
