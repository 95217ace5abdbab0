// The decode calibration on first use (issue 14): an engine that starts on a CPU and thread count
// with no tuning cache yet (ops/tuning_cache.h), with weights large enough that decode streams
// them from memory (where the tuning matters), runs a short calibration of the weight formats it
// will read (ops/tune_calibrate.h) and writes the cache, once; later starts load the file.
// Models that fit in a few last-level caches (the bundled demo, test fixtures) start at once.
//
// It runs only when INKLING_TUNE is unset, empty or "on" (not "off", not an explicit file), when
// nothing else set the tuning in this process (no cache or file loaded, no `inkling tune`), and at
// most once per process. A cache that cannot be written gives one warning; the values measured
// stay in effect for this process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"

namespace inkling {

struct FirstUseTuning {
  double budget_s = 3;            // measurement seconds, about (ops/tune_calibrate.h)
  uint64_t min_weight_bytes = 0;  // 0: four times the last-level cache, at least 256 MiB
  size_t synthetic_bytes = 0;     // calibration weights per format; 0: the calibration's default
};

// Calibrates `formats` (tune_calibrate's names: bf16, q4, q8, q3, nvfp4) for this CPU and the
// pool's thread count when the conditions above hold, and returns the cache path it wrote (or
// tried to write); "" when it did nothing. Progress goes to stderr in one line before and one
// after.
std::string tune_on_first_use(ThreadPool& pool, const std::vector<std::string>& formats,
                              uint64_t weight_bytes, const FirstUseTuning& opt = {});

}  // namespace inkling
