// Decode tuning values (see tuning.h).
#include "ops/tuning.h"

#include <mutex>
#include <nlohmann/json.hpp>

namespace inkling {

namespace {
constexpr TuneParamInfo kInfo[kTuneParams] = {
    {"split_rows", 256, 0, 1 << 20,
     "dense decode: 0: one band of rows per thread; N: blocks of N rows claimed by the threads in "
     "turn"},
    {"dense_rows", 1, 1, 4, "dense decode: rows streamed at once (1, 2 or 4)"},
    {"dense_prefetch", 0, 0, 64, "dense decode: prefetch the row this many rows ahead (0: none)"},
    {"q4_rows", 4, 1, 4, "4-bit / NVFP4 bf16-dot decode: rows per block (1, 2 or 4)"},
    {"q4_prefetch", 1, 0, 8, "4-bit decode: prefetch this many blocks of rows ahead (0: none)"},
    {"affine_prefetch", 1, 0, 8,
     "bf16-dot affine 1/2/3/5/6-bit decode: prefetch this many blocks of rows ahead (0: none)"},
    {"bytes_prefetch", 1, 0, 8,
     "8-bit affine decode: prefetch this many blocks of rows ahead (0: none)"},
};

std::mutex g_source_mu;
std::string& source_ref() {
  static std::string s = "default";
  return s;
}
}  // namespace

namespace detail {
std::atomic<int> g_tuning[kTuneParams] = {0, 1, 0, 4, 1, 1, 1};
}

const TuneParamInfo& tune_param_info(TuneParam p) {
  return kInfo[int(p)];
}

DecodeTuning DecodeTuning::defaults() {
  DecodeTuning t;
  for (int i = 0; i < kTuneParams; ++i) t.v[i] = kInfo[i].def;
  return t;
}

DecodeTuning DecodeTuning::current() {
  DecodeTuning t;
  for (int i = 0; i < kTuneParams; ++i) t.v[i] = detail::g_tuning[i].load();
  return t;
}

bool DecodeTuning::operator==(const DecodeTuning& o) const {
  for (int i = 0; i < kTuneParams; ++i)
    if (v[i] != o.v[i]) return false;
  return true;
}

void set_decode_tuning(const DecodeTuning& t, const std::string& source) {
  for (int i = 0; i < kTuneParams; ++i) detail::g_tuning[i].store(t.v[i]);
  std::lock_guard<std::mutex> lock(g_source_mu);
  source_ref() = source;
}

std::string decode_tuning_source() {
  std::lock_guard<std::mutex> lock(g_source_mu);
  return source_ref();
}

nlohmann::json tuning_to_json(const DecodeTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kTuneParams; ++i) j[kInfo[i].name] = t.v[i];
  return j;
}

bool tuning_from_json(const nlohmann::json& j, DecodeTuning* out, std::string* err) {
  if (!j.is_object()) {
    *err = "tuning is not a JSON object";
    return false;
  }
  DecodeTuning t = *out;
  for (int i = 0; i < kTuneParams; ++i) {
    const auto it = j.find(kInfo[i].name);
    if (it == j.end()) continue;
    if (!it->is_number_integer()) {
      *err = std::string("tuning value \"") + kInfo[i].name + "\" is not an integer";
      return false;
    }
    const int64_t x = it->get<int64_t>();
    if (x < kInfo[i].lo || x > kInfo[i].hi) {
      *err = std::string("tuning value \"") + kInfo[i].name + "\" = " + std::to_string(x) +
             " is outside [" + std::to_string(kInfo[i].lo) + ", " + std::to_string(kInfo[i].hi) +
             "]";
      return false;
    }
    t.v[i] = int(x);
  }
  *out = t;
  return true;
}

}  // namespace inkling
