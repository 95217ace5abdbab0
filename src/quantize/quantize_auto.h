// Recipe `auto` end to end: the weights' budget (--memory-gb less the KV cache at --context,
// conv states and scratch, or --weights-gb; less the tensors no unit holds), each unit's costs
// (measured on the calibration text, or read from --sensitivity FILE), the choice, applied to the
// plan and reported in the result.
#pragma once

#include <atomic>
#include <functional>

#include "inkling/quantize.h"
#include "quantize/auto_plan.h"
#include "quantize/imatrix.h"
#include "quantize/quantize_plan.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

struct AutoContext {
  const QuantizeOptions* options = nullptr;
  std::optional<DType> dtype;
  bool search = false;
  const Imatrix* imatrix = nullptr;
  std::function<void(const QuantizeEvent&)> on_event;
  const std::atomic<bool>* cancel = nullptr;
};

// The units and the bytes they may take, checked before anything runs (usage errors naming the
// option: no budget left for the weights, one even the smallest widths do not fit). Sets the
// plan's float dtypes as the writer will.
struct AutoBudget {
  std::vector<AutoUnit> units;
  uint64_t bytes = 0;
  std::string what;  // how the budget came about, for messages
};
Result<AutoBudget> auto_budget(const Source& src, Plan& plan, const QuantizeOptions& a,
                               std::optional<DType> dtype);

// The costs (measured, or read from a.sensitivity) and the choice, applied to the plan. Errors:
// a sensitivity file of another model (*usage_error), a failed measurement.
Status plan_auto(const Source& src, Plan& plan, const AutoBudget& budget, const AutoContext& ctx,
                 QuantizeResult* result, bool* usage_error);

}  // namespace inkling::quant
