// The `auto` recipe's planner (`inkling quantize --recipe auto --memory-gb G`): the plan's
// quantizable matrices fall into units, a module group of one layer ("attention.3",
// "experts.3", "shared.3", "dense.0") or a group without layers ("embed", "head"); each unit has
// options (MLX affine at each measured width, or kept as floats) with their bytes and their cost
// in KL (quantize/sensitivity.h measures it, quantizing that unit alone); the planner picks one
// option per unit with the least total cost whose bytes fit the budget. The costs are taken as
// additive, as sensitivity-based mixed precision does (HAWQ, mlx-lm's dynamic quantization).
// Pure data: no model runs here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inkling/status.h"
#include "quantize/quantize_plan.h"

namespace inkling::quant {

struct AutoUnit {
  std::string key;  // "attention.3", "embed", ...
  Group group = Group::kAttention;
  int layer = -1;
  std::vector<size_t> items;  // indices into plan.items (Modules)
};

// The units of a plan: every Module the plan quantizes, except the MTP depths (which keep the
// plan's spec: they do not change the text model's output). In plan order.
std::vector<AutoUnit> auto_units(const Plan& plan);

struct AutoOption {
  QuantSpec spec;
  uint64_t bytes = 0;
  double cost = 0;  // KL (nats/token) the unit alone costs at this spec
};

struct AutoChoice {
  std::vector<size_t> pick;  // per unit: the chosen option's index
  uint64_t bytes = 0;
  double cost = 0;
};

// The option per unit with the least total cost within `budget` bytes: dynamic programming over
// the budget in at most `resolution` steps, each option's bytes rounded up to a step, so the
// choice never exceeds the budget (and is optimal for bytes on the step grid). Fails naming the
// smallest possible size when no choice fits. `options[u]` must not be empty.
Result<AutoChoice> choose_options(const std::vector<std::vector<AutoOption>>& options,
                                  uint64_t budget, int64_t resolution = 200000);

// Bytes of the unit's matrices at `spec` (floats, scales and biases as each module's dtype).
uint64_t unit_bytes(const Plan& plan, const AutoUnit& u, const QuantSpec& spec);

// Sets every module of every unit to its chosen spec, and the plan's main spec to the spec
// holding the most parameters (config.json's quantization block lists the rest per module).
void apply_choice(Plan& plan, const std::vector<AutoUnit>& units,
                  const std::vector<std::vector<AutoOption>>& options, const AutoChoice& choice);

}  // namespace inkling::quant
