// plan_auto(): budget, costs, choice.
#include "quantize/quantize_auto.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "quantize/quantize_calibrate.h"
#include "quantize/run_memory.h"
#include "quantize/sensitivity.h"

namespace inkling::quant {

namespace {

// The specs a unit may take, as asked (widths x group sizes) and its shapes allow.
std::vector<QuantSpec> wanted_specs(const QuantizeOptions& a) {
  std::vector<QuantSpec> out;
  for (int g : a.auto_groups)
    for (int b : a.auto_bits) out.push_back(QuantSpec::affine(b, g));
  return out;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double b) {
  char s[32];
  if (b >= kGiB)
    std::snprintf(s, sizeof s, "%.3f GiB", b / kGiB);
  else
    std::snprintf(s, sizeof s, "%.3f MiB", b / (1024.0 * 1024.0));
  return s;
}

}  // namespace

Result<AutoBudget> auto_budget(const Source& src, Plan& plan, const QuantizeOptions& a,
                               std::optional<DType> dtype) {
  for (PlanItem& item : plan.items)
    if (Module* m = std::get_if<Module>(&item)) {
      INK_ASSIGN_OR_RETURN(RowSource rows, RowSource::of(src, *m));
      m->float_dtype = dtype.value_or(rows.natural_dtype());
    }
  AutoBudget b;
  b.units = auto_units(plan);
  if (b.units.empty())
    return Status::error("--recipe auto: this plan quantizes no matrix (see --modules)");
  // What no unit holds is written as planned.
  double fixed = 0;
  std::vector<bool> in_unit(plan.items.size(), false);
  for (const AutoUnit& u : b.units)
    for (size_t i : u.items) in_unit[i] = true;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    if (in_unit[i]) continue;
    if (const Module* m = std::get_if<Module>(&plan.items[i])) {
      fixed += double(module_bytes(*m, m->float_dtype));
    } else {
      const SmallTensor& t = std::get<SmallTensor>(plan.items[i]);
      auto it = src.tensors.find(t.source);
      const DType d = it != src.tensors.end() ? it->second.dtype : DType::F32;
      double n = 1;
      for (int64_t x : t.shape) n *= double(x);
      fixed += n * double(dtype_size(d));
    }
  }
  double budget = 0;
  if (a.weights_gib > 0) {
    budget = a.weights_gib * kGiB - fixed;
    b.what = "--weights-gb " + gib(a.weights_gib * kGiB) + " less " + gib(fixed) +
             " of tensors kept as stored";
  } else {
    const RunMemory mem = run_memory(src.config, a.context);
    budget = a.memory_gib * kGiB - mem.besides_weights() - fixed;
    b.what = "--memory-gb " + gib(a.memory_gib * kGiB) + " less " + gib(mem.besides_weights()) +
             " to run " + std::to_string(a.context) + " tokens (KV cache, conv states, scratch)" +
             " and " + gib(fixed) + " of tensors kept as stored";
  }
  if (budget <= 0) return Status::error(b.what + " leaves nothing for the quantized matrices");
  b.bytes = uint64_t(budget);
  // The smallest plan: every unit at its smallest option.
  std::vector<std::vector<AutoOption>> sizes(b.units.size());
  for (size_t u = 0; u < b.units.size(); ++u) {
    for (const QuantSpec& spec : wanted_specs(a))
      if (unit_takes(plan, b.units[u], spec))
        sizes[u].push_back({spec, unit_bytes(plan, b.units[u], spec), 0.0});
    if (a.auto_float) sizes[u].push_back({QuantSpec{}, unit_bytes(plan, b.units[u], {}), 0.0});
    if (sizes[u].empty())
      return Status::error("--auto-groups: the matrices of " + b.units[u].key +
                           " take none of these group sizes (and --auto-no-float keeps none)");
  }
  auto fits = choose_options(sizes, b.bytes, 1);
  if (!fits.ok()) return Status::error(b.what + ": " + fits.status().message());
  return b;
}

Status plan_auto(const Source& src, Plan& plan, const AutoBudget& budget, const AutoContext& ctx,
                 QuantizeResult* result, bool* usage_error) {
  const QuantizeOptions& a = *ctx.options;
  *usage_error = false;
  const std::vector<AutoUnit>& units = budget.units;

  SensitivityTable table;
  if (!a.calibration_text.empty()) {
    SensitivityOptions so;
    so.specs = wanted_specs(a);
    so.dtype = ctx.dtype;
    so.search = ctx.search;
    so.imatrix = ctx.imatrix;
    INK_ASSIGN_OR_RETURN(so.ids,
                         calibration_ids(src.dir, a.calibration_text, a.calibration_window));
    so.window = a.calibration_window;
    so.max_tokens = a.sensitivity_tokens;
    so.threads = a.threads;
    so.cancel = ctx.cancel;
    if (ctx.on_event)
      so.progress = [&](int64_t done, int64_t total) {
        QuantizeEvent e;
        e.kind = QuantizeEvent::Kind::kMeasuring;
        e.measured = done;
        e.to_measure = total;
        ctx.on_event(e);
      };
    INK_ASSIGN_OR_RETURN(table, measure_sensitivity(src, plan, units, so));
    if (!a.sensitivity.empty()) INK_RETURN_IF_ERROR(save_sensitivity(table, a.sensitivity));
  } else {
    *usage_error = true;
    INK_ASSIGN_OR_RETURN(table, load_sensitivity(a.sensitivity));
    INK_RETURN_IF_ERROR(check_sensitivity(table, units, a.sensitivity));
    *usage_error = false;
  }
  result->sensitivity_tokens = table.tokens;
  result->sensitivity_seconds = table.seconds;

  // Options per unit: each measured spec asked for that its shapes take, and floats.
  const std::vector<QuantSpec> wanted = wanted_specs(a);
  std::vector<std::vector<AutoOption>> options(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    const SensitivityTable::Row* row = table.find(units[u].key);
    for (size_t k = 0; k < table.specs.size(); ++k) {
      const QuantSpec& spec = table.specs[k];
      if (std::find(wanted.begin(), wanted.end(), spec) == wanted.end() || std::isnan(row->kl[k]) ||
          !unit_takes(plan, units[u], spec))
        continue;
      options[u].push_back({spec, unit_bytes(plan, units[u], spec), row->kl[k]});
    }
    if (a.auto_float) options[u].push_back({QuantSpec{}, unit_bytes(plan, units[u], {}), 0.0});
    if (options[u].empty()) {
      *usage_error = true;
      return Status::error("--auto-bits / --auto-groups: none of these specs was measured for " +
                           units[u].key + " in " + a.sensitivity);
    }
  }
  auto choice = choose_options(options, budget.bytes);
  if (!choice.ok()) {
    *usage_error = true;
    return Status::error(budget.what + ": " + choice.status().message());
  }
  apply_choice(plan, units, options, choice.value());
  result->budget_bytes = budget.bytes;
  result->predicted_kl = choice->cost;
  result->auto_units.clear();
  for (size_t u = 0; u < units.size(); ++u) {
    const AutoOption& o = options[u][choice->pick[u]];
    result->auto_units.push_back({units[u].key, o.spec.str(), o.bytes, o.cost});
  }
  return Status::success();
}

}  // namespace inkling::quant
