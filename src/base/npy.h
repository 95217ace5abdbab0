// Minimal NumPy .npy (version 1.0) I/O for float32 C-order arrays: --dump-logits writes them,
// tests read the reference fixtures.
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
Result<NpyArray> read_npy_f32(const std::string& path);

}  // namespace inkling
