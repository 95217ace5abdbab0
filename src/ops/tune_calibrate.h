// The decode calibration behind `inkling tune`: times one-token products (matmul() with the
// kernels the registry binds, as decode runs them) on synthetic weights larger than the last-level
// cache, per weight format, under candidate decode tunings (ops/tuning.h), each against the read
// bandwidth probe of the same moment, and picks the best. Candidates are measured in interleaved
// rounds, each paired with the current choice measured right before or after it (the machine's
// speed drifts); a setting replaces the current choice only when the median of its paired speed
// ratios beats it by `min_gain`, and a format's final choice is kept only when a last paired
// check against the defaults confirms it (by min_gain / 2).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "ops/tuning.h"

namespace inkling {

struct CalibrateOptions {
  double budget_s = 10;  // seconds of measurement, about (making the weights not counted)
  size_t bytes = 0;      // weights per format; 0: 3x the last-level cache, at least 128 MiB
  // Formats: "bf16", "q4" (MLX affine 4-bit g64), "q8", "q3" (stands for the bf16-dot affine
  // widths 1/2/3/5/6), "nvfp4". Empty: bf16, q4, q8, q3.
  std::vector<std::string> formats;
  double min_gain = 0.03;
};

struct CalibrateResult {
  DecodeTuning tuning;      // the choice (defaults where nothing beat them)
  nlohmann::json measured;  // per format: GB/s and ratio to the probe, default and chosen
  double seconds = 0;
};

// The last-level cache of CPU 0 (sysfs, else sysconf, else 32 MiB).
size_t last_level_cache_bytes();

// Leaves the chosen values in effect (source "tune"). `log` gets one line per step (may be null).
CalibrateResult calibrate_decode(ThreadPool& pool, const CalibrateOptions& opt,
                                 const std::function<void(const std::string&)>& log);

}  // namespace inkling
