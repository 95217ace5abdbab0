// Test helpers: a self-deleting temporary folder, safetensors images written byte by byte, and
// a tiny but complete Inkling checkpoint (config.json + model.safetensors) in either the
// original (model.llm.*) or the transformers (InklingForCausalLM) layout. Header-only; included
// by relative path from tests/<area>/*.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace inkling::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/inkling_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A safetensors image: 8-byte little-endian header length, header JSON, data.
inline std::string safetensors_image(const std::string& header_json, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header_json.size();
  std::memcpy(out.data(), &n, 8);
  return out + header_json + data;
}

// Builds a well-formed safetensors image tensor by tensor (data packed in insertion order).
class SafetensorsBuilder {
 public:
  SafetensorsBuilder& add(const std::string& name, const std::string& dtype,
                          const std::vector<int64_t>& shape, const std::string& bytes) {
    header_[name] = {{"dtype", dtype},
                     {"shape", shape},
                     {"data_offsets", {data_.size(), data_.size() + bytes.size()}}};
    data_ += bytes;
    return *this;
  }
  SafetensorsBuilder& add_f32(const std::string& name, const std::vector<int64_t>& shape,
                              const std::vector<float>& values) {
    std::string bytes(values.size() * 4, '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return add(name, "F32", shape, bytes);
  }
  SafetensorsBuilder& metadata(const std::string& key, const std::string& value) {
    header_["__metadata__"][key] = value;
    return *this;
  }
  std::string header() const { return header_.dump(); }
  const std::string& data() const { return data_; }
  std::string build() const { return safetensors_image(header(), data_); }
  void write(const std::string& path) const { write_file(path, build()); }

 private:
  nlohmann::ordered_json header_ = nlohmann::ordered_json::object();
  std::string data_;
};

// ---- A tiny complete checkpoint ------------------------------------------------------------
// Two layers: layer 0 sliding + dense, layer 1 global + MoE. Distinct sliding/global head
// counts, GQA on the global layer, rel_extent != window, unpadded < vocab.
struct TinyDims {
  int64_t V = 32, Vu = 30, H = 8, K = 3, W = 4, R = 6, d_rel = 2;
  int64_t swa_nh = 2, swa_nkv = 2, swa_hd = 4;  // layer 0 (sliding)
  int64_t nh = 4, nkv = 2, hd = 4;              // layer 1 (global)
  int64_t Id = 12, I = 4, E = 4, k = 2, S = 1;
};

inline nlohmann::json tiny_config_json(bool og_spelling = false) {
  const TinyDims d;
  nlohmann::json c = {{"vocab_size", d.V},
                      {"unpadded_vocab_size", d.Vu},
                      {"hidden_size", d.H},
                      {"num_hidden_layers", 2},
                      {"num_attention_heads", d.nh},
                      {"num_key_value_heads", d.nkv},
                      {"head_dim", d.hd},
                      {"swa_num_attention_heads", d.swa_nh},
                      {"swa_num_key_value_heads", d.swa_nkv},
                      {"swa_head_dim", d.swa_hd},
                      {"sliding_window_size", d.W},
                      {"d_rel", d.d_rel},
                      {"rel_extent", d.R},
                      {"n_routed_experts", d.E},
                      {"num_experts_per_tok", d.k},
                      {"n_shared_experts", d.S},
                      {"route_scale", 2.0},
                      {"logits_mup_width_multiplier", 2.0},
                      {"rms_norm_eps", 1e-6},
                      {"eos_token_id", 29}};
  if (og_spelling) {
    c["sconv_kernel_size"] = d.K;
    c["intermediate_size"] = d.I;
    c["dense_intermediate_size"] = d.Id;
    c["local_layer_ids"] = {0};
    c["dense_mlp_idx"] = 1;
    return {{"model_type", "inkling_mm_model"}, {"text_config", c}, {"eos_token_id", 29}};
  }
  c["model_type"] = "inkling_text";
  c["conv_kernel_size"] = d.K;
  c["intermediate_size"] = d.Id;
  c["moe_intermediate_size"] = d.I;
  c["layer_types"] = {"hybrid_sliding", "hybrid"};
  c["mlp_layer_types"] = {"dense", "sparse"};
  return c;
}

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// Every checkpoint tensor of the tiny model, in the original layout (og) or transformers'
// InklingForCausalLM layout.
inline std::vector<TensorSpec> tiny_tensor_specs(bool og) {
  const TinyDims d;
  std::vector<TensorSpec> t;
  const std::string top = og ? "model.llm." : "model.";
  t.push_back({og ? "model.llm.embed.weight" : "model.embed_tokens.weight", {d.V, d.H}});
  t.push_back({og ? "model.llm.unembed.weight" : "lm_head.weight", {d.V, d.H}});
  t.push_back({top + "embed_norm.weight", {d.H}});
  t.push_back({top + "norm.weight", {d.H}});
  for (int i = 0; i < 2; ++i) {
    const std::string p = top + "layers." + std::to_string(i) + ".";
    const bool sliding = i == 0;
    const int64_t nh = sliding ? d.swa_nh : d.nh, nkv = sliding ? d.swa_nkv : d.nkv;
    const int64_t hd = sliding ? d.swa_hd : d.hd, R = sliding ? d.W : d.R;
    if (og) {
      t.push_back({p + "attn_norm.weight", {d.H}});
      t.push_back({p + "mlp_norm.weight", {d.H}});
      t.push_back({p + "attn.wq_du.weight", {nh * hd, d.H}});
      t.push_back({p + "attn.wk_dv.weight", {nkv * hd, d.H}});
      t.push_back({p + "attn.wv_dv.weight", {nkv * hd, d.H}});
      t.push_back({p + "attn.wr_du.weight", {nh * d.d_rel, d.H}});
      t.push_back({p + "attn.wo_ud.weight", {d.H, nh * hd}});
      t.push_back({p + "attn.q_norm.weight", {hd}});
      t.push_back({p + "attn.k_norm.weight", {hd}});
      t.push_back({p + "attn.k_sconv.weight", {nkv * hd, 1, d.K}});
      t.push_back({p + "attn.v_sconv.weight", {nkv * hd, 1, d.K}});
      t.push_back({p + "attn.rel_logits_proj.proj", {d.d_rel, R}});
      t.push_back({p + "attn_sconv.weight", {d.H, 1, d.K}});
      t.push_back({p + "mlp_sconv.weight", {d.H, 1, d.K}});
      if (i == 0) {
        t.push_back({p + "mlp.w13_dn.weight", {2 * d.Id, d.H}});
        t.push_back({p + "mlp.w2_md.weight", {d.H, d.Id}});
        t.push_back({p + "mlp.global_scale", {1}});
      } else {
        t.push_back({p + "mlp.gate.weight", {d.E + d.S, d.H}});
        t.push_back({p + "mlp.gate.bias", {d.E}});
        t.push_back({p + "mlp.gate.global_scale", {1}});
        t.push_back({p + "mlp.experts.w13_weight", {d.E, 2 * d.I, d.H}});
        t.push_back({p + "mlp.experts.w2_weight", {d.E, d.H, d.I}});
        t.push_back({p + "mlp.shared_experts.shared_w13_weight", {d.S, 2 * d.I, d.H}});
        t.push_back({p + "mlp.shared_experts.shared_w2_weight", {d.S, d.H, d.I}});
      }
    } else {
      t.push_back({p + "input_layernorm.weight", {d.H}});
      t.push_back({p + "post_attention_layernorm.weight", {d.H}});
      t.push_back({p + "self_attn.q_proj.weight", {nh * hd, d.H}});
      t.push_back({p + "self_attn.k_proj.weight", {nkv * hd, d.H}});
      t.push_back({p + "self_attn.v_proj.weight", {nkv * hd, d.H}});
      t.push_back({p + "self_attn.r_proj.weight", {nh * d.d_rel, d.H}});
      t.push_back({p + "self_attn.o_proj.weight", {d.H, nh * hd}});
      t.push_back({p + "self_attn.q_norm.weight", {hd}});
      t.push_back({p + "self_attn.k_norm.weight", {hd}});
      t.push_back({p + "self_attn.k_sconv.conv1d.weight", {nkv * hd, 1, d.K}});
      t.push_back({p + "self_attn.v_sconv.conv1d.weight", {nkv * hd, 1, d.K}});
      t.push_back({p + "self_attn.rel_logits_proj.proj", {d.d_rel, R}});
      t.push_back({p + "attn_sconv.conv1d.weight", {d.H, 1, d.K}});
      t.push_back({p + "mlp_sconv.conv1d.weight", {d.H, 1, d.K}});
      if (i == 0) {
        t.push_back({p + "mlp.gate_proj.weight", {d.Id, d.H}});
        t.push_back({p + "mlp.up_proj.weight", {d.Id, d.H}});
        t.push_back({p + "mlp.down_proj.weight", {d.H, d.Id}});
        t.push_back({p + "mlp.global_scale", {1}});
      } else {
        t.push_back({p + "mlp.gate.weight", {d.E + d.S, d.H}});
        t.push_back({p + "mlp.gate.e_score_correction_bias", {d.E}});
        t.push_back({p + "mlp.gate.global_scale", {1}});
        t.push_back({p + "mlp.experts.gate_up_proj", {d.E, 2 * d.I, d.H}});
        t.push_back({p + "mlp.experts.down_proj", {d.E, d.H, d.I}});
        t.push_back({p + "mlp.shared_experts.gate_proj", {d.S, d.I, d.H}});
        t.push_back({p + "mlp.shared_experts.up_proj", {d.S, d.I, d.H}});
        t.push_back({p + "mlp.shared_experts.down_proj", {d.S, d.H, d.I}});
      }
    }
  }
  return t;
}

inline int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  return n;
}

// Deterministic small values in [-0.5, 0.5) (norm weights and scales near 1).
inline std::vector<float> tiny_values(const TensorSpec& s, uint32_t seed) {
  std::vector<float> v(size_t(numel(s.shape)));
  uint32_t x = seed * 2654435761u + 12345u;
  const bool near_one =
      s.name.find("norm") != std::string::npos || s.name.find("global_scale") != std::string::npos;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    const float r = float(x >> 8) / float(1u << 24) - 0.5f;
    f = near_one ? 1.0f + 0.2f * r : r;
  }
  return v;
}

// The tiny checkpoint's tensors as a safetensors builder (F32). `skip` omits a tensor;
// `reshape` (name, shape) writes that tensor with another shape (same element count or not).
inline SafetensorsBuilder tiny_safetensors(bool og, const std::string& skip = "",
                                           const std::string& reshape_name = "",
                                           const std::vector<int64_t>& reshape = {}) {
  SafetensorsBuilder b;
  uint32_t seed = 1;
  for (const auto& s : tiny_tensor_specs(og)) {
    ++seed;
    if (s.name == skip) continue;
    TensorSpec spec = s;
    if (s.name == reshape_name) spec.shape = reshape;
    b.add_f32(spec.name, spec.shape, tiny_values(spec, seed));
  }
  return b;
}

// Writes config.json + model.safetensors of the tiny model into `dir`.
inline void write_tiny_model(const std::string& dir, bool og = false) {
  write_file(dir + "/config.json", tiny_config_json(og).dump(2));
  tiny_safetensors(og).write(dir + "/model.safetensors");
}

}  // namespace inkling::testing
