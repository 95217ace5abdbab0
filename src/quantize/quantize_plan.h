// The output of `inkling quantize`, derived from the config alone: every tensor of the output
// layout in file order (mlx-vlm's for Inkling v1, transformers' names for Inkling 2), each matrix
// (module) with the spec the recipe, --modules and the overrides give it. The dry run prints its
// sizes; the real run binds sources to it.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "model/config.h"
#include "quantize/quantize_recipe.h"

namespace inkling::quant {

// Which weight of the model a module holds (binding looks its source views up by this).
enum class Role : uint8_t {
  kEmbed,
  kHead,
  kQkvr,
  kO,
  kDenseGate,
  kDenseUp,
  kDenseDown,
  kRouter,
  kExpertGate,
  kExpertUp,
  kExpertDown,
  kSharedGate,
  kSharedUp,
  kSharedDown,
  // MTP depth `Module::depth` (stored under the release's names, spec/inkling-mtp.md)
  kMtpInput,
  kMtpQ,
  kMtpK,
  kMtpV,
  kMtpR,
  kMtpO,
  kMtpGateUp,  // mlp.w13_dn: gate and up rows interleaved (g0, u0, g1, u1, ...), as released
  kMtpDown,
  // Inkling 2's attention (separate q / k / v / relative-bias linears, the sink logits, the
  // output gate, the full layers' dynamic-conv tap projections)
  kQ,
  kK,
  kV,
  kR,
  kSink,
  kOGate,
  kKDyn,
  kVDyn
};

// One matrix of the output (a Linear / Embedding / SwitchLinear of mlx-vlm).
struct Module {
  std::string path;  // mlx-vlm module path: "language_model.model.layers.3.self_attn.qkvr_proj"
  Group group = Group::kAttention;
  Role role = Role::kQkvr;
  int layer = -1;
  int depth = -1;  // MTP modules: the draft depth
  int64_t n = 0;   // > 0: stacked experts, [n, rows, cols]
  int64_t rows = 0, cols = 0;
  int64_t split = 0;     // flattened shared down_proj: columns per expert (the group must
                         // divide it so each expert's groups stay its own), else 0
  QuantSpec spec;        // what is written
  std::string kept_why;  // why a requested quantization was not possible (shape)
  DType float_dtype = DType::BF16;  // floats, scales and biases (the real run sets it per source)

  bool bare = false;  // the tensor is named `path` itself (mlp.gate_weight), not path.weight

  std::string tensor_name() const { return bare ? path : path + ".weight"; }
  int64_t total_rows() const { return (n > 0 ? n : 1) * rows; }
  std::vector<int64_t> shape(int64_t last) const;  // [n?, rows, last]
};

// A small tensor (norms, convs, biases, scalars), copied as stored.
struct SmallTensor {
  std::string name;             // output name
  std::string source;           // canonical source name; empty: generated (all ones, F32)
  std::vector<int64_t> shape;   // output shape
  bool f32_in_release = false;  // F32 in the published checkpoints (router bias and scale)
  DType dtype = DType::BF16;    // as stored (the real run sets it from the source)
};

using PlanItem = std::variant<Module, SmallTensor>;

struct PlanOptions {
  const Recipe* recipe = nullptr;
  int bits = 0, group = 0;                    // the main spec
  std::optional<std::vector<Group>> modules;  // --modules
  std::vector<Override> overrides;
  bool mtp = false;  // --mtp quantize: plan the MTP depths' tensors (matrices at the mtp group's
                     // spec) after the text model's
};

struct Plan {
  std::vector<PlanItem> items;  // file order
  QuantSpec main;
  std::string recipe;
};

// Fails (usage error) when an override matches no module or asks to quantize the router.
Result<Plan> make_plan(const ModelConfig& c, const PlanOptions& o);

// Whether the module's shape takes groups of `group` columns: its row length, and a flattened
// shared down_proj's width per expert, are multiples of it.
inline bool group_fits(const Module& m, int group) {
  return group > 0 && m.cols % group == 0 && (m.split == 0 || m.split % group == 0);
}

// Bytes of a module's output tensors with float_dtype for floats, scales and biases.
uint64_t module_bytes(const Module& m, DType float_dtype);

// The config.json "quantization" block mlx-vlm and the engine read: defaults = the main spec,
// plus an entry for each module stored otherwise (false when kept as floats) or that mlx-vlm
// would otherwise skip (its loader ignores modules whose element count is not a multiple of 64
// unless the block names them).
nlohmann::ordered_json quantization_json(const Plan& plan);

}  // namespace inkling::quant
