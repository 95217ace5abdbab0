// What `inkling quantize` prints about a plan: the size of each module group in the output and
// the memory a run of it needs (weights, KV cache at a context length in f32 and bf16, session
// scratch). The dry run prints it from config.json alone; a real run prints it at the end.
#pragma once

#include <cstdint>
#include <optional>

#include "inkling/quantize.h"
#include "model/config.h"
#include "quantize/quantize_plan.h"

namespace inkling::cli {

struct ReportOptions {
  int64_t context = 32768;            // tokens of KV cache to count
  double memory_gib = 0;              // > 0: say whether the total fits this much memory
  std::optional<uint64_t> mtp_bytes;  // MTP tensors copied (disk only); nullopt: unknown
};

// Prints the table and the memory lines to stdout; returns the weight bytes.
uint64_t print_report(const ModelConfig& c, const quant::Plan& plan, const ReportOptions& o);

// Recipe auto's choice per unit, its measured cost, the budget and the predicted KL (nothing for
// other recipes).
void print_auto(const QuantizeResult& r);

}  // namespace inkling::cli
