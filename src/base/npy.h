// Minimal NumPy .npy (version 1.0) I/O for float32 (and, writing only, int32) C-order arrays:
// --dump-logits and --dump-activations write them, tests read the reference fixtures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

Status write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);
Status write_npy_i32(const std::string& path, const int32_t* data,
                     const std::vector<int64_t>& shape);
// Reads a float32 array; an int32 array (ids) is accepted too, its values converted to float.
Result<NpyArray> read_npy_f32(const std::string& path);

}  // namespace inkling
