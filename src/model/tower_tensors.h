// What both families' towers do with their checkpoint tensors: look one up under any of its
// names, check its shape and float dtype, view a matrix for the kernels, copy a vector to f32.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "model/layouts.h"
#include "ops/weight_view.h"

namespace inkling {

// The first of `names` present, else null.
const TensorRef* find_tower_tensor(const TensorMap& m, std::initializer_list<std::string> names);
// "" when `r` has shape `want` and a float dtype (F32, BF16, F16), else the message.
std::string check_tower_tensor(const TensorRef& r, const std::vector<int64_t>& want);
// A 2-D float tensor as a weight view with its kernels bound (kernels null: none runs it).
MatView tower_matrix(const TensorRef& r);
// Any float tensor's values as f32, in order.
std::vector<float> tower_vector(const TensorRef& r);

}  // namespace inkling
