// `inkling quantize -m SRC -o DST`: any checkpoint the engine loads -> an MLX affine checkpoint
// in the mlx-vlm layout (recipes, per-group and per-module specs, --dry-run sizes from
// config.json alone). Options and their checks live here; the work is in quantize_*.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/safetensors.h"
#include "commands.h"
#include "quantize_calibrate.h"
#include "quantize_plan.h"
#include "quantize_report.h"
#include "quantize_run.h"
#include "quantize_sources.h"

namespace inkling::cli {

namespace {

namespace fs = std::filesystem;

struct QuantizeArgs {
  std::string src, dst, recipe = "uniform", modules, dtype, mtp = "keep";
  int bits = 0, group = 0;  // 0: the recipe's main spec
  std::vector<std::string> overrides;
  bool dry_run = false, force = false, quiet = false;
  int threads = 0;
  int64_t context = 32768;
  double memory_gib = 0;
  double max_shard_mb = 5000;
  std::string calibrate, imatrix;
  int64_t calibrate_window = 512, calibrate_tokens = 65536;
  bool search = false;
};

std::optional<DType> parse_float_dtype(const std::string& s) {
  if (s == "bf16") return DType::BF16;
  if (s == "f16") return DType::F16;
  if (s == "f32") return DType::F32;
  return std::nullopt;
}

// The config of a dry run: a model folder or a config.json file itself.
Result<ModelConfig> dry_run_config(const std::string& src) {
  std::error_code ec;
  if (fs::is_regular_file(src, ec)) {
    INK_ASSIGN_OR_RETURN(std::string text, read_text_file(src));
    return parse_config(text, src);
  }
  if (!fs::is_directory(src, ec)) return Status::error("[quantize] " + src + ": no such folder");
  return load_config(src);
}

// MTP bytes from the safetensors headers of the folder, when it has weights (no data is read).
std::optional<uint64_t> header_mtp_bytes(const std::string& src) {
  std::error_code ec;
  if (!fs::is_directory(src, ec)) return std::nullopt;
  auto store = TensorStore::open_dir(src);
  if (!store.ok()) return std::nullopt;
  uint64_t n = 0;
  for (const auto& [name, t] : store->all())
    if (name.rfind("model.mtp.", 0) == 0 || name.rfind("mtp.", 0) == 0) n += t->nbytes;
  if (fs::exists(src + "/mtp.safetensors", ec)) {
    bool listed = false;
    for (const auto& f : store->files()) listed |= f->path() == src + "/mtp.safetensors";
    if (!listed)
      if (auto f = SafetensorsFile::open(src + "/mtp.safetensors"); f.ok())
        for (const auto& t : f.value()->tensors()) n += t.nbytes;
  }
  return n;
}

int run(const QuantizeArgs& a) {
  // Options first: every usage error before any file is read.
  const Recipe* recipe = find_recipe(a.recipe);
  if (!recipe)
    return fail("--recipe: unknown recipe '" + a.recipe + "' (recipes: " + recipe_names() + ")", 2);
  PlanOptions po;
  po.recipe = recipe;
  po.bits = a.bits ? a.bits : recipe->main_bits;
  po.group = a.group ? a.group : recipe->main_group;
  po.mtp = a.mtp == "quantize";
  if (Status s = check_bits(po.bits, "--bits"); !s) return fail(s.message(), 2);
  if (Status s = check_group(po.group, "--group-size"); !s) return fail(s.message(), 2);
  if (!a.modules.empty()) {
    auto m = parse_modules(a.modules);
    if (!m.ok()) return fail(m.status().message(), 2);
    po.modules = std::move(m).value();
  }
  for (const std::string& text : a.overrides) {
    auto o = parse_override(text);
    if (!o.ok()) return fail(o.status().message(), 2);
    po.overrides.push_back(std::move(o).value());
  }
  std::optional<DType> dtype;
  if (!a.dtype.empty()) dtype = parse_float_dtype(a.dtype);
  if (!(a.max_shard_mb > 0)) return fail("--max-shard-mb: must be a positive size in MB", 2);
  ReportOptions ro;
  ro.context = a.context;
  ro.memory_gib = a.memory_gib;

  if (a.dry_run) {
    auto c = dry_run_config(a.src);
    if (!c.ok()) return fail(c.status().message(), 2);
    auto plan = make_plan(c.value(), po);
    if (!plan.ok()) return fail(plan.status().message(), 2);
    for (PlanItem& item : plan->items)
      if (Module* m = std::get_if<Module>(&item)) m->float_dtype = dtype.value_or(DType::BF16);
    if (a.mtp == "keep") ro.mtp_bytes = header_mtp_bytes(a.src);
    std::printf("inkling quantize --dry-run: %s\n", a.src.c_str());
    std::printf(
        "  %d layers, hidden %d, %d routed + %d shared experts of width %d; recipe %s, "
        "main spec %s; floats %s%s\n\n",
        c->n_layers, c->hidden, c->n_routed, c->n_shared, c->moe_width, recipe->name,
        plan->main.str().c_str(), a.dtype.empty() ? "bf16" : a.dtype.c_str(),
        a.dtype.empty() ? " (assumed: the published checkpoints' dtype)" : "");
    print_report(c.value(), plan.value(), ro);
    return 0;
  }

  if (a.dst.empty()) return fail("-o/--output is required (or pass --dry-run)", 2);
  std::error_code ec;
  if (fs::exists(a.dst, ec) && !a.force)
    return fail("[quantize] " + a.dst + " already exists (pass --force to replace it)", 2);
  if (fs::exists(a.src, ec) && fs::exists(a.dst, ec) && fs::equivalent(a.src, a.dst, ec))
    return fail("[quantize] the output folder is the source folder", 2);
  if (a.calibrate_window < 16 || a.calibrate_window > 8192)
    return fail("--calibrate-window: must be 16..8192 tokens", 2);
  if (a.calibrate_tokens < a.calibrate_window)
    return fail("--calibrate-tokens: must be at least one window", 2);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<CalibrationRun> calib;
  if (!a.calibrate.empty()) {
    ImatrixCalibration co;
    co.text = a.calibrate;
    co.window = a.calibrate_window;
    co.max_tokens = a.calibrate_tokens;
    co.threads = a.threads;
    co.quiet = a.quiet;
    auto r = calibrate_importance(a.src, co);
    if (!r.ok()) return fail(r.status().message(), 2);
    calib = std::move(r).value();
  }
  auto src = Source::open(a.src, po.mtp);
  if (!src.ok()) return fail(src.status().message(), 2);
  // --mtp keep of depths stored quantized (an earlier --mtp quantize): planned at their stored
  // specs, so they are copied byte for byte and config.json's quantization block describes them.
  const bool keep_quantized_mtp = a.mtp == "keep" && src.value()->mtp_quantized;
  if (keep_quantized_mtp) po.mtp = true;
  auto plan = make_plan(src.value()->config, po);
  if (!plan.ok()) return fail(plan.status().message(), 2);
  if (keep_quantized_mtp)
    for (PlanItem& item : plan->items)
      if (Module* m = std::get_if<Module>(&item); m && m->group == Group::kMtp) {
        auto rows = RowSource::of(*src.value(), *m);
        if (!rows.ok()) return fail(rows.status().message(), 1);
        m->spec = rows->stored_spec();
        m->kept_why.clear();
      }

  std::optional<Imatrix> imatrix;
  if (calib) {
    imatrix = imatrix_for_plan(*src.value(), plan.value(), *calib);
    imatrix->meta["calibration"] = fs::path(a.calibrate).filename().string();
    if (!a.imatrix.empty())
      if (Status s = save_imatrix(*imatrix, a.imatrix); !s) return fail(s.message(), 1);
    if (!a.quiet)
      std::printf("calibrated on %lld tokens (%lld windows) in %.1f s%s%s\n",
                  (long long)calib->tokens, (long long)calib->windows, calib->seconds,
                  a.imatrix.empty() ? "" : "; importance matrix saved to ", a.imatrix.c_str());
  } else if (!a.imatrix.empty()) {
    auto m = load_imatrix(a.imatrix);
    if (!m.ok()) return fail(m.status().message(), 2);
    if (Status s = check_imatrix(m.value(), plan.value(), a.imatrix); !s)
      return fail(s.message(), 2);
    imatrix = std::move(m).value();
  }
  if (imatrix && !a.quiet) print_coverage(*imatrix, plan.value());

  RunOptions o;
  o.search = a.search || imatrix.has_value();
  o.imatrix = imatrix ? &*imatrix : nullptr;
  if (imatrix) {
    o.imatrix_id = a.imatrix.empty() ? a.calibrate : a.imatrix;
    std::error_code sz_ec;
    o.imatrix_id += ":" + std::to_string(fs::file_size(o.imatrix_id, sz_ec));
  }
  o.dst = a.dst;
  o.force = a.force;
  o.threads = a.threads;
  o.max_shard_bytes = uint64_t(a.max_shard_mb * 1e6);
  o.quiet = a.quiet;
  o.keep_mtp = a.mtp != "drop";
  o.dtype = dtype;
  auto outcome = run_quantize(*src.value(), plan.value(), o);
  if (!outcome.ok()) return fail(outcome.status().message(), 1);
  if (outcome.value() == RunOutcome::kInterrupted) return 130;
  if (!a.quiet) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t mtp = 0;
    for (const TensorInfo* t : src.value()->mtp) mtp += t->nbytes;
    if (a.mtp == "keep" && !keep_quantized_mtp) ro.mtp_bytes = mtp;
    std::printf("quantized %s (%s) -> %s in %.1f s; recipe %s, main spec %s\n\n", a.src.c_str(),
                src.value()->layout.c_str(), a.dst.c_str(), s, recipe->name,
                plan->main.str().c_str());
    print_report(src.value()->config, plan.value(), ro);
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
  for (const Recipe& r : recipes())
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
                 "say whether weights + KV cache + scratch fit this many GiB")
      ->check(CLI::Range(0.0, 1e6));
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
