// What the checkpoint's configuration says about quantization: config.json `quantization` /
// `quantization_config` (MLX: defaults plus per-module overrides) and hf_quant_config.json
// (ModelOpt NVFP4: exclude list). Binding combines this with the sidecar tensors per matrix.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

// kMxfp8: an HF `mxfp8` / `fp8` quantization_config or ModelOpt MXFP8; kMixed: ModelOpt
// MIXED_PRECISION (Inkling 2 Mini's NVFP4 + MXFP8 experts). For both the companion tensors
// decide each matrix's format.
enum class QuantMode : uint8_t { kNone, kAffine, kNvfp4, kMxfp4, kMxfp8, kMixed, kOther };

const char* quant_mode_name(QuantMode m);

// One module's quantization as the configuration states it.
struct ModuleQuant {
  bool stated = false;  // false: the configuration says nothing specific (shapes decide)
  bool quantized = false;
  QuantMode mode = QuantMode::kNone;
  int bits = 0, group = 0;  // 0 = not given
  std::string why;          // which entry decided ("quantization.bits", "override 'x'", ...)
};

struct QuantConfig {
  // Defaults of the config.json dict (MLX) or of hf_quant_config.json (ModelOpt).
  QuantMode mode = QuantMode::kNone;
  int bits = 0, group = 0;
  std::string source;  // "config.json quantization", "hf_quant_config.json", ...
  // MLX per-module overrides keyed by module path: nullopt = `false` (left unquantized).
  struct Override {
    QuantMode mode = QuantMode::kAffine;
    int bits = 0, group = 0;
  };
  std::map<std::string, std::optional<Override>> overrides;
  // ModelOpt: module paths (or `*` patterns) that stay unquantized.
  std::vector<std::string> exclude;

  bool present() const { return mode != QuantMode::kNone; }
  // `module` is the checkpoint's module path (tensor name without .weight / .scales ...).
  ModuleQuant lookup(const std::string& module) const;
};

// `config_json` is config.json's text (required); `hf_quant_json` hf_quant_config.json's text
// (empty when the file is absent). `dir` only names files in messages.
Result<QuantConfig> parse_quant_config(const std::string& config_json,
                                       const std::string& hf_quant_json, const std::string& dir);
Result<QuantConfig> load_quant_config(const std::string& model_dir);

}  // namespace inkling
