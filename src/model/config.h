// Inkling text-model configuration: parsed once from config.json (top-level InklingConfig with a
// text_config, or a bare text config), every alias and default resolved, validated, then trusted.
//
// clang-format off
// Glossary of dimensions used across src/model and src/ops (name, symbol, meaning):
//   hidden       H    residual width
//   n_heads      nH   query heads of a layer
//   n_kv_heads   nKV  key/value heads of a layer
//   head_dim     hd   width of one head
//   d_rel             width of a head's relative vector
//   window       W    sliding-window length (keys, including the query's own position)
//   rel_extent   R    relative extent of global layers (sliding layers: R = W)
//   conv_k       K    taps of the short convolutions
//   n_routed     E    routed experts
//   n_shared     S    shared experts
//   top_k        k    experts chosen per token
//   moe_width    I    width of one expert
//   dense_width  Id   width of the dense MLP
// clang-format on
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct LayerSpec {
  bool sliding = true;  // layer_types[i] == "hybrid_sliding"
  bool dense = false;   // mlp_layer_types[i] == "dense"
  int n_heads = 0;      // swa_num_attention_heads or num_attention_heads
  int n_kv_heads = 0;   // swa_num_key_value_heads or num_key_value_heads
  int head_dim = 0;     // swa_head_dim or head_dim
  int rel_extent = 0;   // R: window on sliding layers, rel_extent on global layers
};

// Multi-token-prediction (MTP) draft depths, from mtp_config (OG, top level) or the HF spellings
// num_mtp_layers / mtp_local_layer_ids / mtp_hidden_states_first / chain_hidden_post_norm.
// Depth d is one ordinary decoder layer (dense MLP of dense_width): banded depths take the
// sliding geometry with a window of local_extent, global depths the global geometry.
struct MtpConfig {
  std::vector<LayerSpec> depths;  // num_nextn_predict_layers entries (empty: no MTP)
  bool hidden_first = true;       // hidden_states_first: concat(hidden, embedding) order
  int local_extent = 0;           // local_extent (default: sliding_window_size)
};

// Model families (each with its own layouts, weights and forward: model/ for Inkling, model/<name>/
// for the rest); the engine core above them is family-agnostic.
enum class Family : uint8_t { kInkling, kInkling2 };
const char* family_name(Family f);

// Inkling 2 (Mini: inkling2_loop, Small: inkling2; spec/inkling2.md) fields beyond Inkling's.
struct Inkling2Config {
  int block = 6;                         // n_layers_per_attn_res_block
  double qk_clip = 22.627416997969522;   // qk_l2_clip_threshold
  double rel_clip = 8.0;                 // rel_l2_clip_threshold
  double gate_cap = 4.0, up_cap = 25.0;  // mlp_gate_softcap, mlp_up_softcap
  double logit_cap = 30.0;               // final_logit_softcapping
  // The looped core of Mini: layers [loop_start, loop_end) run loop_passes times; passes after the
  // first restart from the prelude's output and take gated messages (rank loop_rank).
  int loop_start = 0, loop_end = 0, loop_passes = 1, loop_rank = 64;
  bool looped() const { return loop_end > loop_start; }
};

struct ModelConfig {
  Family family = Family::kInkling;
  Inkling2Config v2;                // family kInkling2 only
  std::string model_type;           // top-level model_type as found ("inkling_mm_model", ...)
  std::string format;               // "og" (Thinking Machines spelling) or "hf" (transformers)
  int64_t vocab_size = 201024;      // rows of embed / lm_head (padded vocabulary)
  int64_t unpadded_vocab = 0;       // logits are sliced to this many columns (== vocab when unset)
  int hidden = 6144;                // hidden_size
  int n_layers = 66;                // num_hidden_layers
  int n_heads = 64;                 // num_attention_heads (global layers)
  int n_kv_heads = 8;               // num_key_value_heads (global layers)
  int head_dim = 128;               // head_dim (global layers)
  int swa_n_heads = 64;             // swa_num_attention_heads (sliding layers)
  int swa_n_kv_heads = 16;          // swa_num_key_value_heads
  int swa_head_dim = 128;           // swa_head_dim
  int window = 512;                 // sliding_window_size (alias sliding_window)
  int d_rel = 16;                   // d_rel
  int rel_extent = 1024;            // rel_extent (global layers)
  std::optional<double> log_floor;  // log_scaling_n_floor; nullopt = tau disabled
  double log_alpha = 0.1;           // log_scaling_alpha
  double rms_eps = 1e-6;            // rms_norm_eps
  int64_t max_positions = 0;        // max_position_embeddings (alias model_max_length); 0 = unset.
                                    // No RoPE: informational, used as the default context limit
  int conv_k = 4;                   // conv_kernel_size (alias sconv_kernel_size)
  int dense_width = 24576;          // dense SwiGLU width (see width resolution in config.cpp)
  int moe_width = 3072;             // routed/shared expert width
  int n_routed = 256;               // n_routed_experts (alias num_local_experts)
  int top_k = 6;                    // num_experts_per_tok
  int n_shared = 2;                 // n_shared_experts
  double route_scale = 8.0;         // route_scale
  double mup_divisor = 24.0;        // logits_mup_width_multiplier (alias embedding_multiplier)
  std::vector<int32_t> eos_ids;     // eos_token_id (int or list); top level wins over text_config
  std::vector<LayerSpec> layers;
  MtpConfig mtp;  // draft depths (spec/inkling-mtp.md)

  bool has_moe() const;
  // Layer visits of one token in the order the forward runs them: n_layers, plus (passes - 1) x
  // the looped core of Inkling 2 Mini. Cache slots [0, n_layers) are the physical layers' first
  // visits, then the core's later passes, pass by pass (transformers' cache layer order).
  struct Visit {
    int layer = 0, slot = 0, pass = 0;  // pass: 0 outside the core, else 1..loop_passes
  };
  std::vector<Visit> schedule() const;
  // MoE layer visits per token (a looped core's MoE layers count once per pass): the expert
  // exchanges of one decode token under expert parallelism.
  int moe_visits() const;
  // The geometry of every cache slot (what a sequence keeps per slot: KV rows and conv states).
  std::vector<LayerSpec> cache_slots() const;
};

// Parses config.json text. `source` names the file in messages ("[config] <source>: field ...").
Result<ModelConfig> parse_config(const std::string& json_text, const std::string& source);
Result<ModelConfig> load_config(const std::string& model_dir);

}  // namespace inkling
