// Decode (one-token matvec) tuning: the parameters of the decode kernels and of the row split
// that do not change any arithmetic, only how the weights are streamed (rows in flight, software
// prefetch distance, how rows are split over the pool's threads). What is fastest differs by host,
// so they are run-time values: today's settings are the defaults, `inkling tune` measures
// candidates and caches the best per CPU model and thread count (ops/tuning_cache.h), and the
// engine loads that cache at start.
//
// Invariant: every value of every parameter gives bitwise the same results. The per-(row, token)
// summation order of the kernels (ops/formats.h, row-count invariance) does not depend on them;
// tests/ops/test_tuning.cpp checks it with memcmp for several settings and every format.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace inkling {

enum class TuneParam : int {
  kSplitRows,       // dense f32/bf16 decode: 0: one contiguous band of rows per thread; N: blocks
                    // of N rows claimed in turn by the threads (balances threads slowed by other
                    // work)
  kDenseRows,       // dense f32/bf16 decode: rows streamed at once (1, 2 or 4)
  kDensePrefetch,   // dense decode: software prefetch of the row this many rows ahead (0: none)
  kQ4Rows,          // 4-bit / NVFP4 AVX512-BF16 decode: rows per block (1, 2 or 4)
  kQ4Prefetch,      // 4-bit decode: prefetch the block of rows this many blocks ahead (0: none)
  kAffinePrefetch,  // AVX512-BF16 affine 1/2/3/5/6-bit decode: blocks of rows ahead (0: none)
  kBytesPrefetch,   // 8-bit (byte) affine decode: blocks of rows ahead (0: none)
  kCount
};
constexpr int kTuneParams = int(TuneParam::kCount);

struct TuneParamInfo {
  const char* name;  // the key in the cache file and in `bench --json`
  int def;           // today's value
  int lo, hi;        // accepted range (inclusive)
  const char* help;
};
const TuneParamInfo& tune_param_info(TuneParam p);

// The values in effect (read by the kernels on every call: relaxed atomics, no locking).
namespace detail {
extern std::atomic<int> g_tuning[kTuneParams];
}
inline int tuning(TuneParam p) {
  return detail::g_tuning[int(p)].load(std::memory_order_relaxed);
}

// A full set of values.
struct DecodeTuning {
  int v[kTuneParams];
  static DecodeTuning defaults();
  static DecodeTuning current();
  int& operator[](TuneParam p) { return v[int(p)]; }
  int operator[](TuneParam p) const { return v[int(p)]; }
  bool operator==(const DecodeTuning& o) const;
};

// Sets the values in effect and where they came from ("default", "cache <path>", "tune",
// "env"). Call while no product runs (engine start, calibration, tests).
void set_decode_tuning(const DecodeTuning& t, const std::string& source);
std::string decode_tuning_source();

// {"split_rows": 0, ...}
nlohmann::json tuning_to_json(const DecodeTuning& t);
// Reads the keys present in j over `out` (absent keys keep their value). False with a message
// naming the key for a non-object, a non-integer or an out-of-range value; unknown keys are
// ignored (a newer cache file read by an older binary).
bool tuning_from_json(const nlohmann::json& j, DecodeTuning* out, std::string* err);

}  // namespace inkling
