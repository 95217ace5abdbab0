// Checkpoint layouts -> one canonical tensor set (the "sanitize" step). A pure function over
// (name, tensor view) pairs: renames, drops towers/MTP, and expresses fused or transposed
// tensors as strided views of the same bytes (no copies). Idempotent: canonical names map to
// themselves. Canonical names are transformers' InklingForCausalLM names, with routed experts'
// gate_up_proj split into mlp.experts.gate_proj / up_proj and conv weights viewed as [C, K];
// quantization sidecars become sidecar_name(weight, kind) next to their (packed) weight.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/safetensors.h"
#include "inkling/status.h"

namespace inkling {

// How a canonical tensor was derived from its checkpoint tensor (for error messages).
enum class Derivation : uint8_t { kSame, kInterleavedHalf, kContiguousHalf, kConvSqueeze };

struct TensorRef {
  DType dtype = DType::F32;
  const uint8_t* data = nullptr;
  std::vector<int64_t> shape, strides;  // strides in elements
  std::string origin;                   // checkpoint name
  std::vector<int64_t> origin_shape;
  Derivation derivation = Derivation::kSame;
};

using TensorMap = std::map<std::string, TensorRef>;

struct SanitizeReport {
  std::string layout;                // "original (model.llm.*)", "transformers", ...
  std::vector<std::string> dropped;  // tower / MTP / metadata tensors ignored
};

// A contiguous view of a safetensors tensor.
TensorRef ref_from_info(const TensorInfo& t);
TensorMap refs_from_store(const TensorStore& store);

Result<TensorMap> sanitize(const TensorMap& in, SanitizeReport* report);

// The multi-token-prediction tensors model.mtp.layers.<d>.* (or mtp.layers.<d>.*, as a separate
// mtp.safetensors may spell them), which sanitize() drops, under canonical names "mtp.<d>.":
// the depth's own embed_norm / hidden_norm / input_proj, and its transformer_block renamed like
// a trunk layer ("mtp.0.self_attn.q_proj.weight", "mtp.0.mlp.gate_proj.weight", ...).
Result<TensorMap> sanitize_mtp(const TensorMap& in);

std::string shape_str(const std::vector<int64_t>& s);

// Splits dim -2 of a fused gate/up tensor `r` into two views: interleaved rows (g0,u0,g1,u1,...)
// or contiguous halves. Errors name r's checkpoint tensor.
Status split_rows(const TensorRef& r, bool interleaved, TensorRef* first, TensorRef* second);

// Canonical names of a weight's quantization sidecars: MLX `scales` / `biases`, ModelOpt block
// `scales` (checkpoint `.scale`) and per-tensor `scale2`, Inkling 2's NVFP4 per-expert `amax` and
// `outer_scale_denominator` (scale2 = amax / denominator). For "x.weight" they are "x.<kind>"
// (MLX siblings); for a bare parameter such as "...mlp.experts.gate_proj" they are "<name>.<kind>".
enum class Sidecar : uint8_t { kScales, kBiases, kScale2, kAmax, kDenominator };
std::string sidecar_name(const std::string& weight, Sidecar kind);

}  // namespace inkling
