// An importance matrix: per matrix of a quantize plan (by output module path), the mean of x^2
// of each input column over the calibration tokens that reached it, one row per stacked expert,
// and those token counts. Saved as a safetensors file (`inkling quantize --imatrix FILE`) so one
// calibration serves many quantizations of the same model, as llama.cpp's imatrix files do.
//
// File layout: for module path P, "P.in_sq" F32 [n, cols] (mean x^2) and "P.tokens" I64 [n];
// metadata "format" = "inkling-imatrix", "version" = "1", plus the source's "model_type",
// "calibration" (the text file's name), "tokens" and "windows".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct ImatrixEntry {
  int64_t n = 1, cols = 0;      // n > 1: stacked experts, row e for expert e
  std::vector<float> mean_sq;   // [n, cols]
  std::vector<int64_t> tokens;  // [n]
};

struct Imatrix {
  std::map<std::string, ImatrixEntry> entries;  // by module path
  std::map<std::string, std::string> meta;      // model_type, calibration, tokens, windows
};

Status save_imatrix(const Imatrix& m, const std::string& path);
// Fails naming the file and the tensor for anything malformed (wrong dtype, rank, shapes that
// disagree, a value that is negative or not finite, not an imatrix file).
Result<Imatrix> load_imatrix(const std::string& path);

}  // namespace inkling
