// Decode calibration on first use (see tune_first_use.h).
#include "ops/tune_first_use.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "base/cpus.h"
#include "ops/tune_calibrate.h"
#include "ops/tuning.h"
#include "ops/tuning_cache.h"

namespace inkling {

std::string tune_on_first_use(ThreadPool& pool, const std::vector<std::string>& formats,
                              uint64_t weight_bytes, const FirstUseTuning& opt) {
  static std::mutex mu;
  static bool done = false;
  std::lock_guard<std::mutex> lock(mu);
  if (done || formats.empty()) return "";
  const char* env = std::getenv("INKLING_TUNE");
  if (env && *env && std::string(env) != "on") return "";  // "off" or an explicit file
  if (decode_tuning_source() != "default") return "";      // a cache, a file or a calibration
  const uint64_t min_bytes =
      opt.min_weight_bytes ? opt.min_weight_bytes
                           : std::max<uint64_t>(4 * uint64_t(last_level_cache_bytes()), 256u << 20);
  if (weight_bytes < min_bytes) return "";
  const int threads = int(pool.size());
  const std::string path = tuning_cache_path(threads);
  if (path.empty()) return "";  // no cache directory: nowhere to keep the result
  // Any file there (another CPU or thread count, damaged) was warned about when it was loaded.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || ec) return "";
  done = true;

  std::string fmts;
  for (const std::string& f : formats) fmts += (fmts.empty() ? "" : ", ") + f;
  std::fprintf(stderr,
               "inkling: first start on this CPU with %d threads: calibrating decode (%s) for "
               "about %.0f s, once (`inkling tune` redoes it; INKLING_TUNE=off skips it)\n",
               threads, fmts.c_str(), opt.budget_s);
  CalibrateOptions co;
  co.budget_s = opt.budget_s;
  co.bytes = opt.synthetic_bytes;
  co.formats = formats;
  const CalibrateResult r = calibrate_decode(pool, co, nullptr);
  TuningFile f;
  f.tuning = r.tuning;
  f.cpu = cpu_model_name();
  f.threads = threads;
  f.measured = r.measured;
  f.measured["seconds"] = r.seconds;
  f.measured["first_use"] = true;
  set_decode_tuning(r.tuning, "first use " + path);
  std::string err;
  if (!write_tuning_file(path, f, &err)) {
    std::fprintf(stderr, "inkling: warning: decode tuning not cached: %s\n", err.c_str());
    return path;
  }
  std::fprintf(stderr, "inkling: decode tuning %s written to %s (%.1f s)\n",
               tuning_to_json(r.tuning) == tuning_to_json(DecodeTuning::defaults())
                   ? "(the defaults)"
                   : tuning_to_json(r.tuning).dump().c_str(),
               path.c_str(), r.seconds);
  return path;
}

}  // namespace inkling
