// The library's quantize_model() / plan_quantization() (include/inkling/quantize.h), with what
// the command line also prints: the config and the plan (for its size report) and the MTP bytes
// copied. `usage_error` tells a caller's mistake (an option, a missing or bad source: exit 2)
// from a failure of the run itself (exit 1).
#pragma once

#include <optional>

#include "inkling/quantize.h"
#include "model/config.h"
#include "quantize/quantize_plan.h"

namespace inkling::quant {

struct Outcome {
  QuantizeResult result;
  ModelConfig config;
  Plan plan;
  std::optional<uint64_t> mtp_bytes;  // MTP tensors copied as stored (disk only); nullopt: none
                                      // or unknown
};

Result<Outcome> quantize_outcome(const std::string& src, const std::string& dst,
                                 const QuantizeOptions& o,
                                 const std::function<void(const QuantizeEvent&)>& on_event,
                                 const std::atomic<bool>* cancel, bool* usage_error,
                                 bool write = true);

// The plan without writing (--dry-run): from config.json alone, except recipe auto, which
// calibrates and measures the model (reporting on on_event) as a real run would.
Result<Outcome> plan_outcome(const std::string& src, const QuantizeOptions& o, bool* usage_error,
                             const std::function<void(const QuantizeEvent&)>& on_event = {},
                             const std::atomic<bool>* cancel = nullptr);

}  // namespace inkling::quant
