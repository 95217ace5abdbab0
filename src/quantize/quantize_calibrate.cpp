// Calibration: windows of the text through the engine under an ImportanceCollector, then the
// statistics gathered per planned matrix (by the file position of its source views).
#include "quantize/quantize_calibrate.h"

#include <algorithm>
#include <chrono>

#include "base/mapped_file.h"
#include "inkling/engine.h"
#include "inkling/tokenizer.h"

namespace inkling::quant {

Result<std::vector<int32_t>> calibration_ids(const std::string& model_dir, const std::string& path,
                                             int64_t window) {
  const std::string where = "[calibrate] " + path + ": ";
  auto text = read_text_file(path);
  if (!text.ok()) return text.status().with_context("[calibrate] ");
  if (text->empty()) return Status::error(where + "the calibration text is empty");
  auto tok = Tokenizer::load(model_dir);
  if (!tok.ok()) return tok.status().with_context("[calibrate] ");
  auto ids = tok.value()->encode_checked(text.value(), /*allow_special=*/false);
  if (!ids.ok()) return Status::error(where + "not UTF-8 text (" + ids.status().message() + ")");
  if (int64_t(ids->size()) < window)
    return Status::error(where + "shorter than one window: " + std::to_string(ids->size()) +
                         " tokens, the window is " + std::to_string(window) +
                         " (give more text or a smaller --calibrate-window)");
  return std::move(ids).value();
}

Result<std::unique_ptr<CalibrationRun>> calibrate_importance(const std::string& model_dir,
                                                             const ImatrixCalibration& o) {
  INK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, calibration_ids(model_dir, o.text, o.window));
  EngineOptions eo;
  eo.n_threads = o.threads;
  eo.numerics = Numerics::kFast;
  eo.prefill_chunk = std::min<int64_t>(o.window, 512);
  auto engine = Engine::load(model_dir, eo);
  if (!engine.ok()) return engine.status();
  auto run = std::make_unique<CalibrationRun>();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n = int64_t(ids.size());
  for (int64_t at = 0; at + o.window <= n && run->tokens + o.window <= o.max_tokens;
       at += o.window) {
    auto session = engine.value()->new_session();
    ProductObserverScope scope(&run->stats);
    auto r = session->prefill(std::span<const int32_t>(ids.data() + at, size_t(o.window)));
    if (!r.ok()) return r.status().with_context("[calibrate] ");
    run->tokens += o.window;
    ++run->windows;
    if (o.progress) o.progress(run->windows, run->tokens);
    if (o.cancel && o.cancel->load()) return Status::error("[calibrate] cancelled");
  }
  run->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

namespace {

// Mean x^2 of the columns of `v` into out[0, v.cols); false when no product read v's rows.
bool fill(const ImportanceCollector& c, const MatView& v, float* out, int64_t* tokens) {
  const ProductStats* s = c.find(v);
  if (!s) return false;
  const double inv = s->tokens > 0 ? 1.0 / double(s->tokens) : 0.0;
  for (int64_t j = 0; j < v.cols; ++j) out[j] = float(s->sum_x2[size_t(j)] * inv);
  *tokens = s->tokens;
  return true;
}

}  // namespace

Imatrix imatrix_for_plan(const Source& src, const Plan& plan, const CalibrationRun& run) {
  Imatrix m;
  m.meta["tokens"] = std::to_string(run.tokens);
  m.meta["windows"] = std::to_string(run.windows);
  m.meta["model_type"] = family_name(src.config.family);
  for (const PlanItem& item : plan.items) {
    const Module* mod = std::get_if<Module>(&item);
    if (!mod) continue;
    auto rows = RowSource::of(src, *mod);
    if (!rows.ok()) continue;
    const auto& bands = rows->bands();
    ImatrixEntry e;
    e.cols = mod->cols;
    bool any = false;
    if (mod->n > 0) {  // stacked experts: one band (one view) each
      e.n = mod->n;
      e.mean_sq.assign(size_t(e.n * e.cols), 0.f);
      e.tokens.assign(size_t(e.n), 0);
      for (int64_t x = 0; x < e.n && size_t(x) < bands.size(); ++x) {
        const auto& part = bands[size_t(x)].parts.front();
        any |= fill(run.stats, part.view, e.mean_sq.data() + x * e.cols + part.col0,
                    &e.tokens[size_t(x)]);
      }
    } else {  // every band reads the same input: the first band's parts, side by side
      e.n = 1;
      e.mean_sq.assign(size_t(e.cols), 0.f);
      e.tokens.assign(1, 0);
      any = true;
      for (const auto& part : bands.front().parts) {
        int64_t t = 0;
        any &= fill(run.stats, part.view, e.mean_sq.data() + part.col0, &t);
        e.tokens[0] = std::max(e.tokens[0], t);
      }
    }
    if (any) m.entries.emplace(mod->path, std::move(e));
  }
  return m;
}

Status check_imatrix(const Imatrix& m, const Plan& plan, const std::string& path) {
  std::map<std::string, const Module*> mods;
  for (const PlanItem& item : plan.items)
    if (const Module* mod = std::get_if<Module>(&item)) mods.emplace(mod->path, mod);
  size_t covered = 0;
  for (const auto& [name, e] : m.entries) {
    auto it = mods.find(name);
    if (it == mods.end())
      return Status::error("[imatrix] " + path + ": " + name +
                           ": no such matrix in this model (an importance matrix of another "
                           "model?)");
    const Module& mod = *it->second;
    const int64_t n = mod.n > 0 ? mod.n : 1;
    if (e.n != n || e.cols != mod.cols)
      return Status::error("[imatrix] " + path + ": " + name + ": [" + std::to_string(e.n) + ", " +
                           std::to_string(e.cols) + "], this model's matrix needs [" +
                           std::to_string(n) + ", " + std::to_string(mod.cols) +
                           "] (an importance matrix of another model?)");
    ++covered;
  }
  if (covered == 0)
    return Status::error("[imatrix] " + path + ": covers none of this model's matrices");
  return Status::success();
}

std::string coverage_line(const Imatrix& m, const Plan& plan) {
  size_t planned = 0, covered = 0, experts = 0, starved = 0;
  std::vector<int64_t> per_expert;
  for (const PlanItem& item : plan.items) {
    const Module* mod = std::get_if<Module>(&item);
    if (!mod) continue;
    ++planned;
    auto it = m.entries.find(mod->path);
    if (it == m.entries.end()) continue;
    ++covered;
    if (mod->role != Role::kExpertGate) continue;  // count each layer's experts once
    for (int64_t t : it->second.tokens) {
      ++experts;
      starved += t == 0;
      per_expert.push_back(t);
    }
  }
  std::string line = "importance: " + std::to_string(covered) + " of " + std::to_string(planned) +
                     " matrices covered";
  if (!per_expert.empty()) {
    std::sort(per_expert.begin(), per_expert.end());
    line += "; tokens per routed expert min " + std::to_string(per_expert.front()) + " / median " +
            std::to_string(per_expert[per_expert.size() / 2]) + " / max " +
            std::to_string(per_expert.back()) + ", " + std::to_string(starved) + " of " +
            std::to_string(experts) + " saw none";
  }
  return line;
}

}  // namespace inkling::quant
