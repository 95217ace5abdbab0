// The canonical weights as a struct of named views, bound once at load from the sanitized
// tensor map with every shape checked against the config. Large matrices are views into the
// mapped checkpoint in their stored format (f32/bf16/f16, MLX affine, NVFP4: never dequantized
// copies); small vectors (norms, convs, biases) are f32 copies.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/layouts.h"
#include "model/quant_config.h"
#include "ops/matmul.h"

namespace inkling {

struct AttentionWeights {
  MatView q, k, v, r, o;        // [nH*hd, H], [nKV*hd, H] x2, [nH*d_rel, H], [H, nH*hd]
  std::vector<float> q_norm;    // [hd]
  std::vector<float> k_norm;    // [hd]
  std::vector<float> k_conv;    // [nKV*hd, K]
  std::vector<float> v_conv;    // [nKV*hd, K]
  std::vector<float> rel_proj;  // [d_rel, R]
};

struct SwiGluWeights {
  MatView gate, up, down;  // [W, H], [W, H], [H, W]
};

struct MoeWeights {
  MatView router;                     // [E+S, H]: routed rows, then the shared "sink" rows
  std::vector<float> router_bias;     // [E] e_score_correction_bias (selection only)
  float router_scale = 1;             // router global_scale
  std::vector<SwiGluWeights> routed;  // E experts, width I
  std::vector<SwiGluWeights> shared;  // S experts, width I
};

struct LayerWeights {
  std::vector<float> attn_norm, mlp_norm;  // [H]
  std::vector<float> attn_conv, mlp_conv;  // [H, K]
  AttentionWeights attn;
  SwiGluWeights dense;    // dense layers
  float dense_scale = 1;  // dense mlp.global_scale
  MoeWeights moe;         // MoE layers
};

struct Weights {
  MatView embed;                  // [V, H]
  MatView lm_head;                // [V, H]
  std::vector<float> embed_norm;  // [H]
  std::vector<float> final_norm;  // [H]
  std::vector<LayerWeights> layers;
  std::vector<std::string> unused;  // canonical tensors nothing bound
  // Storage of the bound matrices by format ("BF16", "affine q4/g64", "nvfp4"): checkpoint
  // tensors (codes + sidecars counted once) and their bytes in the mapping.
  struct Storage {
    int64_t tensors = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Storage> storage;
};

// `quant` says what config.json / hf_quant_config.json state about quantization; the sidecar
// tensors (scales, biases, scale2) and shapes decide the rest (see docs/quantization.md).
Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors,
                             const QuantConfig& quant);
Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors);

}  // namespace inkling
