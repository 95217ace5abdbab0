// Quantizing a checkpoint into an MLX affine folder, as a library call: what `inkling quantize`
// does, for programs that embed the engine (llama.cpp's llama_model_quantize under
// llama-quantize, likewise). The source is any folder the engine loads; the output is the
// mlx-vlm layout the engine and mlx-vlm read (docs/quantization.md). Streaming in bounded
// memory, resumable: an interrupted (cancelled) call leaves DST.partial, and the same call again
// resumes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct QuantizeOptions {
  std::string recipe = "uniform";      // uniform, experts-only, mlp-only, mixed, fit-128gb, ...
  int bits = 0, group_size = 0;        // the main spec; 0: the recipe's
  std::string modules;                 // comma list of groups to quantize ("" = the recipe's)
  std::vector<std::string> overrides;  // "PATTERN=SPEC", applied in order, last match wins
  std::string dtype;         // floats, scales, biases: "bf16" | "f16" | "f32" | "" (source's)
  std::string mtp = "keep";  // MTP depths: keep | drop | quantize
  // The weighted scale search instead of mx.quantize's min/max rule (bit for bit by default).
  bool search = false;
  // Calibration (implies search): UTF-8 text the source model runs over; its importance matrix
  // is written to `imatrix` when that is set. Without calibration_text, `imatrix` is read.
  std::string calibration_text, imatrix;
  int64_t calibration_window = 512, calibration_tokens = 65536;
  // recipe "auto": a width per unit (a module group of one layer; the embedding; the head) from
  // what each costs in KL when quantized alone, measured on calibration_text (or read from
  // `sensitivity`), with the least total cost that fits the budget: memory_gib GiB for weights,
  // KV cache at `context` tokens (f32) and scratch, or weights_gib GiB for the weights alone.
  double memory_gib = 0, weights_gib = 0;
  int64_t context = 32768;
  std::vector<int> auto_bits = {2, 3, 4, 5, 6, 8};  // the widths measured and chosen from
  std::vector<int> auto_groups = {64, 128};         // with each of these group sizes
  bool auto_float = true;                           // a unit may also stay as floats
  int64_t sensitivity_tokens = 2048;  // calibration tokens the costs are measured over
  std::string sensitivity;            // the cost table: written after measuring, else read (JSON)
  int threads = 0;                    // 0: every CPU
  uint64_t max_shard_bytes = 5'000'000'000;
  bool force = false;  // replace an existing DST (and a stale DST.partial)
};

// What a call reports while it works (on the calling thread).
struct QuantizeEvent {
  enum class Kind : uint8_t { kCalibrating, kMeasuring, kWriting, kNotice } kind = Kind::kWriting;
  int64_t windows = 0, tokens = 0;       // kCalibrating: done so far
  int64_t measured = 0, to_measure = 0;  // kMeasuring: (unit, width) pairs of recipe auto
  uint64_t bytes = 0, total_bytes = 0;   // kWriting: of this call's work
  int64_t tensors = 0, total_tensors = 0;
  std::string message;  // kNotice: one line for the user
};

struct QuantizedModule {
  std::string path;     // mlx-vlm module path
  std::string group;    // "attention", "experts", ...
  std::string storage;  // "q4/g64" or "float"
  int64_t parameters = 0;
  uint64_t bytes = 0;  // in the output
};

struct QuantizeResult {
  bool cancelled = false;  // stopped by the cancel flag: DST.partial is left to resume
  std::string layout;      // the source layout, e.g. "original (model.llm.*)"
  std::string recipe, main_spec;
  std::vector<QuantizedModule> modules;
  uint64_t bytes = 0;  // of every planned module
  double seconds = 0;
  int64_t calibration_tokens = 0, calibration_windows = 0;
  std::string coverage;  // with an importance matrix: matrices covered, tokens per expert
  // recipe "auto": each unit's choice and its measured cost, the budget the weights had, and
  // the sum of the chosen costs (the predicted KL, nats/token, taking the costs as additive).
  struct AutoUnit {
    std::string unit, storage;
    uint64_t bytes = 0;
    double kl = 0;
  };
  std::vector<AutoUnit> auto_units;
  uint64_t budget_bytes = 0;
  double predicted_kl = 0;
  int64_t sensitivity_tokens = 0;
  double sensitivity_seconds = 0;
};

// Quantizes SRC into DST. Errors are one line naming the option, file, tensor or field.
Result<QuantizeResult> quantize_model(
    const std::string& src, const std::string& dst, const QuantizeOptions& options,
    const std::function<void(const QuantizeEvent&)>& on_event = {},
    const std::atomic<bool>* cancel = nullptr);

// The plan alone, from config.json (a model folder or the file itself): the modules and their
// sizes, nothing written (`inkling quantize --dry-run`). Floats counted as bf16 unless `dtype`.
// Recipe "auto" needs the model folder: it calibrates and measures (or reads `sensitivity`).
Result<QuantizeResult> plan_quantization(const std::string& src, const QuantizeOptions& options);

}  // namespace inkling
