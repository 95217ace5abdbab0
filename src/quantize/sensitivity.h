// What each unit of the `auto` recipe costs (quantize/auto_plan.h): the source model runs over
// windows of the calibration text in fast numerics, once as stored (the reference) and once per
// unit and width with that unit's matrices alone quantized exactly as the real run would write
// them (same rule, same search and importance weights) and swapped into the running model; the
// cost is the mean KL(reference || quantized) of the next-token distributions over every
// position. The distributions are compared over the reference's top kSensitivityTop tokens of
// each position with the rest lumped into one outcome: a lower bound of the full KL, equal to it
// when the rest holds no mass, that keeps the reference in a few MB whatever the vocabulary.
// The table is saved and reused (--sensitivity FILE), checked against the plan's units.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "quantize/auto_plan.h"
#include "quantize/imatrix.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

inline constexpr int64_t kSensitivityTop = 1024;

struct SensitivityOptions {
  // The specs to measure: a unit is measured at those every one of its matrices takes (its row
  // lengths are multiples of the group), and gets no cost (NaN) at the others.
  std::vector<QuantSpec> specs;
  std::optional<DType> dtype;  // scales and biases (default: the source's)
  bool search = false;         // the weighted scale search (with imatrix: weighted by it)
  const Imatrix* imatrix = nullptr;
  std::vector<int32_t> ids;  // the calibration text's tokens
  int64_t window = 512;      // tokens per window (each a fresh sequence)
  int64_t max_tokens = 2048;
  int threads = 0;
  std::function<void(int64_t done, int64_t total)> progress;  // after each measured (unit, width)
  const std::atomic<bool>* cancel = nullptr;
};

struct SensitivityTable {
  std::string model_type;
  std::vector<QuantSpec> specs;
  int64_t tokens = 0, windows = 0;
  double seconds = 0;
  struct Row {
    std::string unit;
    std::vector<double> kl;  // per entry of specs; NaN: the unit's shapes do not take it
  };
  std::vector<Row> rows;  // in unit order

  const Row* find(const std::string& unit) const;
};

// Errors: a matrix of a unit that the running model does not hold where the plan reads it
// (named), a NaN in a source row, cancellation.
Result<SensitivityTable> measure_sensitivity(const Source& src, const Plan& plan,
                                             const std::vector<AutoUnit>& units,
                                             const SensitivityOptions& o);

// Whether every matrix of the unit takes groups of spec.group columns.
bool unit_takes(const Plan& plan, const AutoUnit& u, const QuantSpec& spec);

// JSON, written atomically (a spec a unit does not take: null). load checks the format;
// check_sensitivity that it describes exactly these units (another model's file is one error
// naming the first unit that differs).
Status save_sensitivity(const SensitivityTable& t, const std::string& path);
Result<SensitivityTable> load_sensitivity(const std::string& path);
Status check_sensitivity(const SensitivityTable& t, const std::vector<AutoUnit>& units,
                         const std::string& path);

}  // namespace inkling::quant
