// `inkling quantize -m SRC -o DST`: any checkpoint the engine loads -> an MLX affine checkpoint
// in the mlx-vlm layout (recipes, per-group and per-module specs, --dry-run sizes from
// config.json alone). Options and their checks live here; the work is in quantize_*.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "inkling/quantize.h"
#include "quantize/quantize_model.h"
#include "quantize/quantize_recipe.h"
#include "quantize_progress.h"
#include "quantize_report.h"

namespace inkling::cli {

namespace {

struct QuantizeArgs {
  std::string src, dst, recipe = "uniform", modules, dtype, mtp = "keep";
  int bits = 0, group = 0;  // 0: the recipe's main spec
  std::vector<std::string> overrides;
  bool dry_run = false, force = false, quiet = false;
  int threads = 0;
  int64_t context = 32768;
  double memory_gib = 0, weights_gib = 0;
  double max_shard_mb = 5000;
  std::vector<int> auto_bits = {2, 3, 4, 5, 6, 8}, auto_groups = {64, 128};
  bool no_auto_float = false;
  std::string sensitivity;
  int64_t sensitivity_tokens = 2048;
  std::string calibrate, imatrix;
  int64_t calibrate_window = 512, calibrate_tokens = 65536;
  bool search = false;
};

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) {
  g_stop.store(true);
}

// Installs the SIGINT/SIGTERM handlers for the run's lifetime: they set the cancel flag the
// library checks between chunks.
class SignalGuard {
 public:
  SignalGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

QuantizeOptions library_options(const QuantizeArgs& a) {
  QuantizeOptions o;
  o.recipe = a.recipe;
  o.bits = a.bits;
  o.group_size = a.group;
  o.modules = a.modules;
  o.overrides = a.overrides;
  o.dtype = a.dtype;
  o.mtp = a.mtp;
  o.search = a.search;
  o.calibration_text = a.calibrate;
  o.imatrix = a.imatrix;
  o.calibration_window = a.calibrate_window;
  o.calibration_tokens = a.calibrate_tokens;
  o.memory_gib = a.memory_gib;
  o.weights_gib = a.weights_gib;
  o.context = a.context;
  o.auto_bits = a.auto_bits;
  o.auto_groups = a.auto_groups;
  o.auto_float = !a.no_auto_float;
  o.sensitivity = a.sensitivity;
  o.sensitivity_tokens = a.sensitivity_tokens;
  o.threads = a.threads;
  o.max_shard_bytes = a.max_shard_mb > 0 ? uint64_t(a.max_shard_mb * 1e6) : 0;
  o.force = a.force;
  return o;
}

int run(const QuantizeArgs& a) {
  const QuantizeOptions lo = library_options(a);
  ReportOptions ro;
  ro.context = a.context;
  ro.memory_gib = a.memory_gib;
  g_stop.store(false);
  SignalGuard signals;
  std::optional<Progress> progress;
  bool calibrating = false, measuring = false;  // a progress line of either is open
  const auto on_event = [&](const QuantizeEvent& e) {
    switch (e.kind) {
      case QuantizeEvent::Kind::kCalibrating:
        if (a.quiet) return;
        calibrating = true;
        std::fprintf(stderr, "\rcalibrating: %lld windows, %lld tokens", (long long)e.windows,
                     (long long)e.tokens);
        std::fflush(stderr);
        return;
      case QuantizeEvent::Kind::kMeasuring:
        if (a.quiet) return;
        if (calibrating && !measuring) std::fprintf(stderr, "\n");
        calibrating = measuring = true;
        std::fprintf(stderr, "\rmeasuring each module group's cost: %lld of %lld (group, spec)",
                     (long long)e.measured, (long long)e.to_measure);
        std::fflush(stderr);
        return;
      case QuantizeEvent::Kind::kWriting:
        if (calibrating) std::fprintf(stderr, "\n"), calibrating = false;
        if (!progress) {
          progress.emplace(e.total_bytes, e.total_tensors, a.quiet);
          return;
        }
        progress->set(e.bytes, e.tensors);
        return;
      case QuantizeEvent::Kind::kNotice:
        if (progress && !a.quiet) std::fprintf(stderr, "\n");
        std::fprintf(stderr, "%s\n", e.message.c_str());
        return;
    }
  };
  bool usage = false;
  if (a.dry_run) {
    auto out = quant::plan_outcome(a.src, lo, &usage, on_event, &g_stop);
    if (calibrating) std::fprintf(stderr, "\n");
    if (!out.ok()) return fail(out.status().message(), usage ? 2 : 1);
    const ModelConfig& c = out->config;
    ro.mtp_bytes = out->mtp_bytes;
    std::printf("inkling quantize --dry-run: %s\n", a.src.c_str());
    std::printf(
        "  %d layers, hidden %d, %d routed + %d shared experts of width %d; recipe %s, "
        "main spec %s; floats %s%s\n\n",
        c.n_layers, c.hidden, c.n_routed, c.n_shared, c.moe_width, out->plan.recipe.c_str(),
        out->plan.main.str().c_str(), a.dtype.empty() ? "bf16" : a.dtype.c_str(),
        a.dtype.empty() ? " (assumed: the published checkpoints' dtype)" : "");
    print_report(c, out->plan, ro);
    print_auto(out->result);
    return 0;
  }

  auto out = quant::quantize_outcome(a.src, a.dst, lo, on_event, &g_stop, &usage);
  if (!out.ok()) return fail(out.status().message(), usage ? 2 : 1);
  if (out->result.cancelled) return 130;
  if (progress) progress->finish();
  if (!a.quiet) {
    const QuantizeResult& r = out->result;
    if (r.calibration_tokens > 0)
      std::printf("calibrated on %lld tokens (%lld windows)%s%s\n", (long long)r.calibration_tokens,
                  (long long)r.calibration_windows,
                  a.imatrix.empty() ? "" : "; importance matrix saved to ", a.imatrix.c_str());
    if (!r.coverage.empty()) std::printf("%s\n", r.coverage.c_str());
    ro.mtp_bytes = out->mtp_bytes;
    std::printf("quantized %s (%s) -> %s in %.1f s; recipe %s, main spec %s\n\n", a.src.c_str(),
                r.layout.c_str(), a.dst.c_str(), r.seconds, r.recipe.c_str(), r.main_spec.c_str());
    print_report(out->config, out->plan, ro);
    print_auto(r);
  }
  return 0;
}

}  // namespace

Runner add_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantizeArgs>();
  app.add_option("-m,--model", a->src,
                 "source model folder (any layout the engine loads: original or transformers "
                 "bf16/f32, NVFP4, MLX); with --dry-run also a config.json file")
      ->required();
  app.add_option("-o,--output", a->dst, "output folder (written as OUTPUT.partial, then renamed)");
  app.add_option("--bits", a->bits, "main width: 2, 3, 4, 5, 6 or 8 (default: the recipe's)");
  app.add_option("--group-size", a->group,
                 "main group size: 32, 64 or 128 (default: the recipe's)");
  std::string recipes_help = "named recipe:";
  for (const quant::Recipe& r : quant::recipes())
    recipes_help += std::string("\n  ") + r.name + " (main q" + std::to_string(r.main_bits) + "/g" +
                    std::to_string(r.main_group) + "): " + r.summary;
  app.add_option("--recipe", a->recipe, recipes_help)->capture_default_str();
  app.add_option("--modules", a->modules,
                 "module groups to quantize, comma-separated (embed, head, attention, dense, "
                 "experts, shared) or all; the others are kept as floats");
  app.add_option("--override", a->overrides,
                 "PATTERN=SPEC, repeatable, last match wins: PATTERN a group (mtp too, with "
                 "--mtp quantize) or a glob over module paths "
                 "(language_model.model.layers.*.mlp.switch_mlp.down_proj, "
                 "model.mtp.layers.*.input_proj), SPEC off, BITS or BITS:GROUP");
  app.add_option("--dtype", a->dtype,
                 "dtype of float matrices, scales and biases (default: the source's)")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app.add_option("--mtp", a->mtp,
                 "MTP draft depths: keep (copied as stored), drop, or quantize (their matrices "
                 "MLX affine at the recipe's mtp spec, the main spec unless the recipe says "
                 "otherwise; --override mtp=SPEC or a glob over model.mtp.layers.* changes it; "
                 "norms and convs as stored)")
      ->check(CLI::IsMember({"keep", "drop", "quantize"}))
      ->capture_default_str();
  app.add_flag("--dry-run", a->dry_run,
               "print the size of each module group and the memory to run, from config.json "
               "alone, and exit");
  app.add_option("--context", a->context, "tokens of KV cache the memory estimate counts")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30))
      ->capture_default_str();
  app.add_option("--memory-gb", a->memory_gib,
                 "say whether weights + KV cache + scratch fit this many GiB; with --recipe "
                 "auto, the budget the plan fills")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--weights-gb", a->weights_gib,
                 "--recipe auto: the budget of the weights alone, in GiB (instead of "
                 "--memory-gb)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--auto-bits", a->auto_bits,
                 "--recipe auto: the widths each module group may take (measured each)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--auto-groups", a->auto_groups,
                 "--recipe auto: the group sizes each width may take (32, 64, 128)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--auto-no-float", a->no_auto_float,
               "--recipe auto: every module group quantized (none kept as floats)");
  app.add_option("--sensitivity", a->sensitivity,
                 "--recipe auto: the table of measured costs (JSON): written after measuring on "
                 "--calibrate, else read");
  app.add_option("--sensitivity-tokens", a->sensitivity_tokens,
                 "--recipe auto: calibration tokens each cost is measured over")
      ->check(CLI::Range(int64_t(16), int64_t(1) << 24))
      ->capture_default_str();
  app.add_option("-t,--threads", a->threads, "worker threads (0 = all)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--max-shard-mb", a->max_shard_mb, "largest output shard, in MB")
      ->capture_default_str();
  app.add_option("--calibrate", a->calibrate,
                 "UTF-8 text to run the source model over (fast numerics): per-column input "
                 "statistics of every matrix weigh each group's scale search (an importance "
                 "matrix; with --imatrix FILE it is also saved there)");
  app.add_option("--imatrix", a->imatrix,
                 "importance matrix file: written by --calibrate, else read (it must be this "
                 "model's)");
  app.add_option("--calibrate-window", a->calibrate_window, "tokens per calibration window")
      ->capture_default_str();
  app.add_option("--calibrate-tokens", a->calibrate_tokens, "calibration tokens at most")
      ->capture_default_str();
  app.add_flag("--search", a->search,
               "choose each group's scale and bias by an error search (least squares over "
               "clipped ranges) instead of mx.quantize's min/max rule; implied by --calibrate "
               "and --imatrix");
  app.add_flag("--force", a->force,
               "replace an existing output folder (and a stale OUTPUT.partial)");
  app.add_flag("-q,--quiet", a->quiet, "no progress and no summary");
  return [a]() { return run(*a); };
}

}  // namespace inkling::cli
