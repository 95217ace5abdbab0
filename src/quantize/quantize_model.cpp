// quantize_model(): options checked before any file is read, calibration (or an importance
// matrix read back), the source bound, the plan written; plan_quantization(): the plan from
// config.json alone.
#include "quantize/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "base/mapped_file.h"
#include "base/safetensors.h"
#include "quantize/quantize_auto.h"
#include "quantize/quantize_calibrate.h"
#include "quantize/quantize_run.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

namespace {

namespace fs = std::filesystem;

bool is_auto(const QuantizeOptions& a) {
  return a.recipe == "auto";
}

std::optional<DType> parse_float_dtype(const std::string& s) {
  if (s == "bf16") return DType::BF16;
  if (s == "f16") return DType::F16;
  if (s == "f32") return DType::F32;
  return std::nullopt;
}

// Every option checked (usage errors), as PlanOptions.
Result<PlanOptions> plan_options(const QuantizeOptions& a) {
  const Recipe* recipe = find_recipe(a.recipe);
  if (!recipe)
    return Status::error("--recipe: unknown recipe '" + a.recipe + "' (recipes: " + recipe_names() +
                         ")");
  PlanOptions po;
  po.recipe = recipe;
  po.bits = a.bits ? a.bits : recipe->main_bits;
  po.group = a.group_size ? a.group_size : recipe->main_group;
  if (a.mtp != "keep" && a.mtp != "drop" && a.mtp != "quantize")
    return Status::error("--mtp: '" + a.mtp + "' is not keep, drop or quantize");
  po.mtp = a.mtp == "quantize";
  INK_RETURN_IF_ERROR(check_bits(po.bits, "--bits"));
  INK_RETURN_IF_ERROR(check_group(po.group, "--group-size"));
  if (!a.modules.empty()) {
    INK_ASSIGN_OR_RETURN(std::vector<Group> m, parse_modules(a.modules));
    po.modules = std::move(m);
  }
  for (const std::string& text : a.overrides) {
    INK_ASSIGN_OR_RETURN(Override o, parse_override(text));
    po.overrides.push_back(std::move(o));
  }
  if (!a.dtype.empty() && !parse_float_dtype(a.dtype))
    return Status::error("--dtype: '" + a.dtype + "' is not bf16, f16 or f32");
  if (a.max_shard_bytes == 0) return Status::error("--max-shard-mb: must be a positive size in MB");
  if (a.calibration_window < 16 || a.calibration_window > 8192)
    return Status::error("--calibrate-window: must be 16..8192 tokens");
  if (a.calibration_tokens < a.calibration_window)
    return Status::error("--calibrate-tokens: must be at least one window");
  if (is_auto(a)) {
    if (a.bits)
      return Status::error("--bits: recipe auto chooses the widths (give them with --auto-bits)");
    if (a.group_size)
      return Status::error(
          "--group-size: recipe auto chooses the group sizes (give them with --auto-groups)");
    if (a.auto_groups.empty()) return Status::error("--auto-groups: give at least one group size");
    for (int g : a.auto_groups) INK_RETURN_IF_ERROR(check_group(g, "--auto-groups"));
    // Planned at the smallest group: every matrix some group size takes is in a unit.
    po.group = *std::min_element(a.auto_groups.begin(), a.auto_groups.end());
    if (!(a.memory_gib > 0) && !(a.weights_gib > 0))
      return Status::error(
          "--recipe auto: give the budget, --memory-gb G (with --context N) or --weights-gb G");
    if (a.calibration_text.empty() && a.sensitivity.empty())
      return Status::error(
          "--recipe auto measures what each module group costs on calibration text: give "
          "--calibrate TEXT (or --sensitivity FILE saved by an earlier run)");
    if (a.auto_bits.empty()) return Status::error("--auto-bits: give at least one width");
    for (int b : a.auto_bits) INK_RETURN_IF_ERROR(check_bits(b, "--auto-bits"));
    if (a.sensitivity_tokens < a.calibration_window)
      return Status::error("--sensitivity-tokens: must be at least one window (" +
                           std::to_string(a.calibration_window) + " tokens)");
    if (a.context < 0) return Status::error("--context: must not be negative");
  }
  return po;
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

void describe(const Plan& plan, QuantizeResult* r) {
  r->recipe = plan.recipe;
  r->main_spec = plan.main.str();
  r->modules.clear();
  r->bytes = 0;
  for (const PlanItem& item : plan.items)
    if (const Module* m = std::get_if<Module>(&item)) {
      QuantizedModule q;
      q.path = m->path;
      q.group = group_key(m->group);
      q.storage = m->spec.str();
      q.parameters = m->total_rows() * m->cols;
      q.bytes = module_bytes(*m, m->float_dtype);
      r->bytes += q.bytes;
      r->modules.push_back(std::move(q));
    }
}

}  // namespace

Result<Outcome> plan_outcome(const std::string& src, const QuantizeOptions& a, bool* usage_error,
                             const std::function<void(const QuantizeEvent&)>& on_event,
                             const std::atomic<bool>* cancel) {
  *usage_error = true;
  INK_ASSIGN_OR_RETURN(PlanOptions po, plan_options(a));
  if (is_auto(a)) {  // the costs need the weights: everything but the writing
    std::error_code ec;
    if (!fs::is_directory(src, ec))
      return Status::error("--recipe auto: " + src +
                           " is not a model folder (the dry run of "
                           "recipe auto measures the model itself)");
    return quantize_outcome(src, "", a, on_event, cancel, usage_error, /*write=*/false);
  }
  Outcome out;
  INK_ASSIGN_OR_RETURN(out.config, dry_run_config(src));
  INK_ASSIGN_OR_RETURN(out.plan, make_plan(out.config, po));
  const DType fd = a.dtype.empty() ? DType::BF16 : *parse_float_dtype(a.dtype);
  for (PlanItem& item : out.plan.items)
    if (Module* m = std::get_if<Module>(&item)) m->float_dtype = fd;
  if (a.mtp == "keep") out.mtp_bytes = header_mtp_bytes(src);
  describe(out.plan, &out.result);
  return out;
}

Result<Outcome> quantize_outcome(const std::string& src_dir, const std::string& dst,
                                 const QuantizeOptions& a,
                                 const std::function<void(const QuantizeEvent&)>& on_event,
                                 const std::atomic<bool>* cancel, bool* usage_error, bool write) {
  *usage_error = true;
  INK_ASSIGN_OR_RETURN(PlanOptions po, plan_options(a));
  std::optional<DType> dtype;
  if (!a.dtype.empty()) dtype = parse_float_dtype(a.dtype);
  std::error_code ec;
  if (write) {
    if (dst.empty()) return Status::error("-o/--output is required (or pass --dry-run)");
    if (fs::exists(dst, ec) && !a.force)
      return Status::error("[quantize] " + dst + " already exists (pass --force to replace it)");
    if (fs::exists(src_dir, ec) && fs::exists(dst, ec) && fs::equivalent(src_dir, dst, ec))
      return Status::error("[quantize] the output folder is the source folder");
  }
  const auto t0 = std::chrono::steady_clock::now();
  Outcome out;
  INK_ASSIGN_OR_RETURN(std::unique_ptr<Source> src, Source::open(src_dir, po.mtp));
  out.config = src->config;
  out.result.layout = src->layout;
  // --mtp keep of depths stored quantized (an earlier --mtp quantize): planned at their stored
  // specs, so they are copied byte for byte and config.json's quantization block describes them.
  const bool keep_quantized_mtp = a.mtp == "keep" && src->mtp_quantized;
  if (keep_quantized_mtp) po.mtp = true;
  INK_ASSIGN_OR_RETURN(out.plan, make_plan(src->config, po));
  *usage_error = false;
  if (keep_quantized_mtp)
    for (PlanItem& item : out.plan.items)
      if (Module* m = std::get_if<Module>(&item); m && m->group == Group::kMtp) {
        INK_ASSIGN_OR_RETURN(RowSource rows, RowSource::of(*src, *m));
        m->spec = rows.stored_spec();
        m->kept_why.clear();
      }

  std::optional<AutoBudget> budget;
  if (is_auto(a)) {  // checked before anything runs
    *usage_error = true;
    INK_ASSIGN_OR_RETURN(budget, auto_budget(*src, out.plan, a, dtype));
    *usage_error = false;
  }
  std::unique_ptr<CalibrationRun> calib;
  if (!a.calibration_text.empty()) {
    *usage_error = true;  // the text's errors are the caller's (as a bad option's)
    ImatrixCalibration co;
    co.text = a.calibration_text;
    co.window = a.calibration_window;
    co.max_tokens = a.calibration_tokens;
    co.threads = a.threads;
    co.cancel = cancel;
    if (on_event)
      co.progress = [&](int64_t windows, int64_t tokens) {
        QuantizeEvent e;
        e.kind = QuantizeEvent::Kind::kCalibrating;
        e.windows = windows;
        e.tokens = tokens;
        on_event(e);
      };
    INK_ASSIGN_OR_RETURN(calib, calibrate_importance(src_dir, co));
    out.result.calibration_tokens = calib->tokens;
    out.result.calibration_windows = calib->windows;
    *usage_error = false;
  }
  std::optional<Imatrix> imatrix;
  if (calib) {
    imatrix = imatrix_for_plan(*src, out.plan, *calib);
    imatrix->meta["calibration"] = fs::path(a.calibration_text).filename().string();
    if (!a.imatrix.empty()) INK_RETURN_IF_ERROR(save_imatrix(*imatrix, a.imatrix));
  } else if (!a.imatrix.empty()) {
    *usage_error = true;
    INK_ASSIGN_OR_RETURN(Imatrix m, load_imatrix(a.imatrix));
    INK_RETURN_IF_ERROR(check_imatrix(m, out.plan, a.imatrix));
    imatrix = std::move(m);
    *usage_error = false;
  }
  if (imatrix) out.result.coverage = coverage_line(*imatrix, out.plan);
  const bool search = a.search || imatrix.has_value();
  if (is_auto(a)) {
    AutoContext ac;
    ac.options = &a;
    ac.dtype = dtype;
    ac.search = search;
    ac.imatrix = imatrix ? &*imatrix : nullptr;
    ac.on_event = on_event;
    ac.cancel = cancel;
    INK_RETURN_IF_ERROR(plan_auto(*src, out.plan, *budget, ac, &out.result, usage_error));
  }
  if (!write) {
    describe(out.plan, &out.result);
    out.result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  RunOptions o;
  o.search = search;
  o.imatrix = imatrix ? &*imatrix : nullptr;
  if (imatrix) {
    o.imatrix_id = a.imatrix.empty() ? a.calibration_text : a.imatrix;
    std::error_code sz_ec;
    o.imatrix_id += ":" + std::to_string(fs::file_size(o.imatrix_id, sz_ec));
  }
  o.dst = dst;
  o.force = a.force;
  o.threads = a.threads;
  o.max_shard_bytes = a.max_shard_bytes;
  o.keep_mtp = a.mtp != "drop";
  o.dtype = dtype;
  o.cancel = cancel;
  if (on_event) {
    o.progress = [&](const RunProgress& p) {
      QuantizeEvent e;
      e.kind = QuantizeEvent::Kind::kWriting;
      e.bytes = p.bytes;
      e.total_bytes = p.total_bytes;
      e.tensors = p.tensors;
      e.total_tensors = p.total_tensors;
      on_event(e);
    };
    o.notice = [&](const std::string& line) {
      QuantizeEvent e;
      e.kind = QuantizeEvent::Kind::kNotice;
      e.message = line;
      on_event(e);
    };
  }
  INK_ASSIGN_OR_RETURN(RunOutcome r, run_quantize(*src, out.plan, o));
  out.result.cancelled = r == RunOutcome::kInterrupted;
  if (a.mtp == "keep" && !keep_quantized_mtp) {
    uint64_t mtp = 0;
    for (const TensorInfo* t : src->mtp) mtp += t->nbytes;
    out.mtp_bytes = mtp;
  }
  describe(out.plan, &out.result);
  out.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace inkling::quant

namespace inkling {

Result<QuantizeResult> quantize_model(const std::string& src, const std::string& dst,
                                      const QuantizeOptions& options,
                                      const std::function<void(const QuantizeEvent&)>& on_event,
                                      const std::atomic<bool>* cancel) {
  bool usage = false;
  INK_ASSIGN_OR_RETURN(quant::Outcome o,
                       quant::quantize_outcome(src, dst, options, on_event, cancel, &usage));
  return std::move(o.result);
}

Result<QuantizeResult> plan_quantization(const std::string& src, const QuantizeOptions& options) {
  bool usage = false;
  INK_ASSIGN_OR_RETURN(quant::Outcome o, quant::plan_outcome(src, options, &usage, {}, nullptr));
  return std::move(o.result);
}

}  // namespace inkling
