// `inkling tune`: the decode calibration (ops/tune_calibrate.h) for this CPU and thread count,
// written to the tuning cache that every engine loads at start (ops/tuning_cache.h).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/cpus.h"
#include "commands.h"
#include "inkling/engine.h"
#include "model/tuning_formats.h"
#include "ops/tune_calibrate.h"
#include "ops/tuning_cache.h"

namespace inkling::cli {

namespace {

struct TuneArgs {
  std::string model_dir;  // optional: calibrate the formats this model stores
  int threads = 0;
  double budget_s = 10;
  int64_t mib = 0;  // weights per format (0: 3x the last-level cache, at least 128 MiB)
  std::vector<std::string> formats;
  std::string out;  // default: the cache file for this CPU and thread count
  bool no_write = false, json = false;
};

int run_tune(const TuneArgs& args) {
  TuneArgs a = args;
  if (a.threads <= 0) a.threads = available_cpus();
  CalibrateOptions opt;
  opt.budget_s = a.budget_s;
  opt.bytes = size_t(a.mib) << 20;
  opt.formats = a.formats;
  if (!a.model_dir.empty() && opt.formats.empty()) {
    EngineOptions eo;
    eo.n_threads = 1;
    eo.tune_on_first_use = false;  // this command calibrates itself
    auto loaded = Engine::load(a.model_dir, eo);
    if (!loaded.ok()) return fail(loaded.status().message());
    opt.formats = decode_tuning_formats(loaded.value()->info());
  }
  for (const std::string& f : opt.formats)
    if (f != "bf16" && f != "q4" && f != "q8" && f != "q3" && f != "nvfp4")
      return fail("--formats: unknown format \"" + f + "\" (bf16, q4, q8, q3, nvfp4)", 2);
  const std::string path = a.out.empty() ? tuning_cache_path(a.threads) : a.out;
  if (!a.no_write && path.empty())
    return fail("no cache directory (set XDG_CACHE_HOME or HOME, or pass --out)", 2);

  ThreadPool pool(a.threads);
  auto log = [&](const std::string& m) {
    if (!a.json) std::fprintf(stderr, "[tune] %s\n", m.c_str());
  };
  log(cpu_model_name() + ", " + std::to_string(a.threads) + " threads");
  const CalibrateResult r = calibrate_decode(pool, opt, log);

  TuningFile f;
  f.tuning = r.tuning;
  f.cpu = cpu_model_name();
  f.threads = a.threads;
  f.measured = r.measured;
  f.measured["seconds"] = r.seconds;
  if (!a.no_write) {
    std::string err;
    if (!write_tuning_file(path, f, &err)) return fail(err);
  }
  if (a.json) {
    nlohmann::json j = {{"cpu", f.cpu},
                        {"threads", a.threads},
                        {"tuning", tuning_to_json(r.tuning)},
                        {"defaults", tuning_to_json(DecodeTuning::defaults())},
                        {"measured", f.measured},
                        {"seconds", r.seconds},
                        {"written", a.no_write ? "" : path}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("tuning: %s\n", tuning_to_json(r.tuning).dump().c_str());
  std::printf("took %.1f s; %s\n", r.seconds,
              a.no_write ? "not written (--no-write)" : ("written to " + path).c_str());
  return 0;
}

}  // namespace

Runner add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  app.add_option("-m,--model", a->model_dir,
                 "calibrate the weight formats this model stores (default: bf16, q4, q8, q3)");
  app.add_option("-t,--threads", a->threads,
                 "threads to tune for: the cache is per CPU model and thread count (0 = one per "
                 "CPU this process may use)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--budget", a->budget_s, "seconds of measurement, about")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--mib", a->mib,
                 "synthetic weights per format in MiB (0 = 3x the last-level cache, >= 128)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 16));
  app.add_option("--formats", a->formats, "formats to calibrate: bf16, q4, q8, q3, nvfp4")
      ->delimiter(',');
  app.add_option("--out", a->out, "write the tuning here instead of the cache file");
  app.add_flag("--no-write", a->no_write, "measure and print only");
  app.add_flag("--json", a->json, "print one JSON object instead of the report");
  return [a]() { return run_tune(*a); };
}

}  // namespace inkling::cli
