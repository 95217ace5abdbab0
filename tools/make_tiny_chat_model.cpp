// make_tiny_chat_model: writes a tiny random Inkling checkpoint with the REAL vocabulary size
// (201024 rows, 200058 usable ids, EOS 200006) in the original `model.llm.*` layout, BF16, plus
// the Inkling tokenizer files, so the server can be driven end to end without a real model.
// Usage: make_tiny_chat_model OUT_DIR TOKENIZER_DIR [--hidden N] [--seed N] [--towers 1]
//        [--inkling2 1]
// --towers 1 adds small image and audio towers (8x8 tiles, 16-level dMel) for media tests.
// --inkling2 1 writes an Inkling 2 model instead (2 layers: sliding + full, 4 experts top 2) with
// a small ViT (width 16, 2 heads, 1 layer, the released 20x20 patches and 2x2 merge).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  float normal() {
    const double u1 = std::max(uniform(), 1e-12), u2 = uniform();
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even
  return uint16_t(u >> 16);
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint16_t> data;
};

class Writer {
 public:
  explicit Writer(uint64_t seed) : rng_{seed} {}
  // kind: 'n' normal*scale, 'c' constant=scale, 'u' uniform [scale, 2*scale)
  void add(const std::string& name, std::vector<int64_t> shape, char kind, float scale) {
    Tensor t{name, std::move(shape), {}};
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    t.data.resize(size_t(n));
    for (auto& v : t.data) {
      float x = kind == 'n'   ? rng_.normal() * scale
                : kind == 'c' ? scale
                              : float(scale * (1.0 + rng_.uniform()));
      v = to_bf16(x);
    }
    tensors_.push_back(std::move(t));
  }
  bool write(const fs::path& path) const {
    nlohmann::ordered_json header;
    header["__metadata__"] = {{"format", "pt"}};
    size_t off = 0;
    for (const auto& t : tensors_) {
      const size_t bytes = t.data.size() * 2;
      header[t.name] = {
          {"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
      off += bytes;
    }
    std::string h = header.dump();
    while (h.size() % 8) h += ' ';
    std::ofstream f(path, std::ios::binary);
    const uint64_t hn = h.size();
    f.write(reinterpret_cast<const char*>(&hn), 8);
    f.write(h.data(), std::streamsize(h.size()));
    for (const auto& t : tensors_)
      f.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size() * 2));
    return bool(f);
  }

 private:
  Rng rng_;
  std::vector<Tensor> tensors_;
};

// Inkling 2 (spec/inkling2.md): the original layout's names (model.llm.*, model.visual.*).
void write_inkling2(Writer& w, int64_t H, const fs::path& out) {
  const int64_t V = 201024, Vu = 200058, nh = 4, kv = 2, hd = 8, drel = 4, window = 64,
                extent = 128, I = 16, E = 4, K = 4;
  const int64_t D = 16, F = 64, P = 32, G = 4, patch = 20;  // the ViT
  nlohmann::ordered_json text = {{"model_type", "inkling2_text"},
                                 {"vocab_size", V},
                                 {"unpadded_vocab_size", Vu},
                                 {"hidden_size", H},
                                 {"num_hidden_layers", 2},
                                 {"layer_types", {"hybrid_sliding", "hybrid"}},
                                 {"n_layers_per_attn_res_block", 2},
                                 {"num_attention_heads", nh},
                                 {"num_key_value_heads", kv},
                                 {"head_dim", hd},
                                 {"swa_num_attention_heads", nh},
                                 {"swa_num_key_value_heads", kv},
                                 {"swa_head_dim", hd},
                                 {"sliding_window_size", window},
                                 {"d_rel", drel},
                                 {"rel_extent", extent},
                                 {"log_scaling_n_floor", 128000},
                                 {"log_scaling_alpha", 0.1},
                                 {"conv_kernel_size", K},
                                 {"moe_intermediate_size", I},
                                 {"n_routed_experts", E},
                                 {"num_experts_per_tok", 2},
                                 {"route_scale", 2.5},
                                 {"scoring_func", "sigmoid"},
                                 {"hidden_act", "silu"},
                                 {"qk_l2_clip_threshold", 2.5},
                                 {"rel_l2_clip_threshold", 1.2},
                                 {"mlp_gate_softcap", 4.0},
                                 {"mlp_up_softcap", 25.0},
                                 {"final_logit_softcapping", 30.0},
                                 {"rms_norm_eps", 1e-6},
                                 {"max_position_embeddings", 8192},
                                 {"eos_token_id", 200006}};
  nlohmann::ordered_json vision = {{"model_type", "inkling2_vision"}, {"hidden_size", D},
                                   {"intermediate_size", F},          {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},        {"patch_size", patch},
                                   {"spatial_merge_size", 2},         {"posemb_grid_size", G},
                                   {"projection_hidden_dim", P},      {"text_hidden_size", H}};
  nlohmann::ordered_json cfg = {{"architectures", {"Inkling2ForConditionalGeneration"}},
                                {"model_type", "inkling2"},
                                {"eos_token_id", 200006},
                                {"image_token_id", 200054},
                                {"torch_dtype", "bfloat16"},
                                {"text_config", text},
                                {"vision_config", vision}};
  std::ofstream(out / "config.json") << cfg.dump(1) << "\n";
  const float lin = 1.0f / std::sqrt(float(H));
  const std::string p = "model.llm.";
  w.add(p + "embed.weight", {V, H}, 'n', 1.0f);
  w.add(p + "embed_norm.weight", {H}, 'c', 1.0f);
  w.add(p + "attn_res.attn_queries.0", {3, H}, 'n', 0.02f);
  for (int l = 0; l < 2; ++l)
    w.add(p + "attn_res.mlp_queries." + std::to_string(l), {H}, 'n', 0.02f);
  w.add(p + "attn_res.output_query", {H}, 'n', 0.02f);
  for (int l = 0; l < 2; ++l) {
    const std::string L = p + "layers." + std::to_string(l) + ".", a = L + "attn.";
    const bool sliding = l == 0;
    w.add(a + "wq_du.weight", {nh * hd, H}, 'n', lin);
    w.add(a + "wk_dv.weight", {kv * hd, H}, 'n', lin);
    w.add(a + "wv_dv.weight", {kv * hd, H}, 'n', lin);
    w.add(a + "wr_du.weight", {nh * drel, H}, 'n', lin);
    w.add(a + "wo_ud.weight", {H, nh * hd}, 'n', 1.0f / std::sqrt(float(nh * hd)));
    w.add(a + "gate_attn.weight", {nh * hd, H}, 'n', lin);
    w.add(a + "attn_sink_proj.weight", {nh, H}, 'n', lin);
    w.add(a + "q_l2_clip.scale", {nh, hd}, 'c', 1.0f);
    w.add(a + "rel_l2_clip.scale", {nh, drel}, 'c', 1.0f);
    w.add(a + "rel_logits_proj.proj", {drel, sliding ? window : extent}, 'n', 0.5f);
    w.add(L + "attn_sconv.weight", {H, 1, K}, 'n', 0.3f);
    w.add(L + "mlp_sconv.weight", {H, 1, K}, 'n', 0.3f);
    w.add(L + "mlp_norm.weight", {H}, 'c', 1.0f);
    if (sliding) {
      w.add(L + "attn_norm.weight", {H}, 'c', 1.0f);
      w.add(a + "k_sconv.weight", {kv * hd, 1, K}, 'n', 0.3f);
      w.add(a + "v_sconv.weight", {kv * hd, 1, K}, 'n', 0.3f);
    } else {
      for (const char* n : {"q", "k", "v"}) w.add(L + n + "_input_norm.weight", {H}, 'c', 1.0f);
      for (const char* n : {"k", "v"}) {
        w.add(a + n + "_sconv.static_w", {K, kv * hd}, 'n', 0.3f);
        w.add(a + n + "_sconv.weight_proj", {kv * K, H}, 'n', 0.1f * lin);
      }
    }
    w.add(L + "mlp.gate.weight", {E, H}, 'n', lin);
    w.add(L + "mlp.gate.bias", {E}, 'n', 0.1f);
    w.add(L + "mlp.experts.w13_weight", {E, 2 * I, H}, 'n', lin);
    w.add(L + "mlp.experts.w2_weight", {E, H, I}, 'n', 1.0f / std::sqrt(float(I)));
  }
  w.add(p + "norm.weight", {H}, 'c', 1.0f);
  w.add(p + "unembed.weight", {V, H}, 'n', 3.0f * lin);
  const std::string e = "model.visual.backbone.embeddings.", b = "model.visual.backbone.";
  const int64_t in = 3 * patch * patch;
  w.add(e + "patch_embedding.weight", {D, in}, 'n', 1.0f / std::sqrt(float(in)));
  w.add(e + "position_embedding", {G * G, D}, 'n', 0.3f);
  w.add(e + "class_embedding", {D}, 'n', 0.3f);
  w.add(e + "cls_position_embedding", {D}, 'n', 0.3f);
  w.add(b + "ln_pre.weight", {D}, 'c', 1.0f);
  w.add(b + "ln_pre.bias", {D}, 'n', 0.1f);
  const std::string l = b + "layers.0.";
  for (const char* n : {"ln_1", "ln_2"}) {
    w.add(l + n + ".weight", {D}, 'c', 1.0f);
    w.add(l + n + ".bias", {D}, 'n', 0.1f);
  }
  w.add(l + "ls_1.gamma", {D}, 'c', 0.1f);
  w.add(l + "ls_2.gamma", {D}, 'c', 0.1f);
  for (const char* n : {"q", "k", "v", "out"}) {
    w.add(l + "self_attn." + n + "_proj.weight", {D, D}, 'n', 1.0f / std::sqrt(float(D)));
    w.add(l + "self_attn." + n + "_proj.bias", {D}, 'n', 0.1f);
  }
  w.add(l + "mlp.c_fc.weight", {F, D}, 'n', 1.0f / std::sqrt(float(D)));
  w.add(l + "mlp.c_fc.bias", {F}, 'n', 0.1f);
  w.add(l + "mlp.c_proj.weight", {D, F}, 'n', 1.0f / std::sqrt(float(F)));
  w.add(l + "mlp.c_proj.bias", {D}, 'n', 0.1f);
  w.add("model.visual.proj_in.weight", {P, 4 * D}, 'n', 1.0f / std::sqrt(float(4 * D)));
  w.add("model.visual.proj_out.weight", {H, P}, 'n', 1.0f / std::sqrt(float(P)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR TOKENIZER_DIR [--hidden N] [--seed N]\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1], tok = argv[2];
  int64_t H = 32;
  uint64_t seed = 1234;
  bool towers = false, inkling2 = false;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--inkling2") inkling2 = std::string(argv[i + 1]) == "1";
    if (std::string(argv[i]) == "--towers") towers = std::string(argv[i + 1]) == "1";
    if (std::string(argv[i]) == "--hidden") H = std::stoll(argv[i + 1]);
    if (std::string(argv[i]) == "--seed") seed = std::stoull(argv[i + 1]);
  }
  const int64_t V = 201024, Vu = 200058, heads = 4, kv = 2, hd = 8, drel = 4, window = 64,
                rel_extent = 128, inter = 16, dense_inter = 32, E = 4, n_shared = 1;
  std::error_code ec;
  fs::create_directories(out, ec);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}) {
    fs::remove(out / f, ec);
    fs::copy_file(tok / f, out / f, ec);
    if (!ec) fs::permissions(out / f, fs::perms::owner_write, fs::perm_options::add, ec);
    if (ec) {
      std::fprintf(stderr, "error: copy %s: %s\n", (tok / f).c_str(), ec.message().c_str());
      return 1;
    }
  }
  if (inkling2) {
    Writer w(seed);
    write_inkling2(w, H, out);
    if (!w.write(out / "model.safetensors")) {
      std::fprintf(stderr, "error: cannot write %s\n", (out / "model.safetensors").c_str());
      return 1;
    }
    std::printf("%s\n", out.c_str());
    return 0;
  }
  nlohmann::ordered_json text = {{"vocab_size", V},
                                 {"unpadded_vocab_size", Vu},
                                 {"hidden_size", H},
                                 {"num_hidden_layers", 2},
                                 {"num_attention_heads", heads},
                                 {"num_key_value_heads", kv},
                                 {"head_dim", hd},
                                 {"swa_num_attention_heads", heads},
                                 {"swa_num_key_value_heads", kv},
                                 {"swa_head_dim", hd},
                                 {"sliding_window_size", window},
                                 {"d_rel", drel},
                                 {"rel_extent", rel_extent},
                                 {"log_scaling_n_floor", 128000},
                                 {"log_scaling_alpha", 0.1},
                                 {"local_layer_ids", {0}},
                                 {"dense_mlp_idx", 1},
                                 {"model_max_length", 8192},
                                 {"rms_norm_eps", 1e-6},
                                 {"sconv_kernel_size", 4},
                                 {"intermediate_size", inter},
                                 {"dense_intermediate_size", dense_inter},
                                 {"hidden_act", "silu"},
                                 {"n_routed_experts", E},
                                 {"num_experts_per_tok", 2},
                                 {"n_shared_experts", n_shared},
                                 {"shared_expert_sink", true},
                                 {"route_scale", 2.5},
                                 {"logits_mup_width_multiplier", 1.0},
                                 {"use_embed_norm", true},
                                 {"use_sconv", true},
                                 {"use_gate_bias", true},
                                 {"use_global_scale", true},
                                 {"norm_after_topk", true},
                                 {"gate_activation", "sigmoid"},
                                 {"q_bias", false},
                                 {"o_bias", false},
                                 {"final_logit_softcapping", nullptr},
                                 {"tie_word_embeddings", false},
                                 {"torch_dtype", "bfloat16"},
                                 {"bos_token_id", 199999},
                                 {"eos_token_id", 200006}};
  nlohmann::ordered_json cfg = {{"architectures", {"InklingForConditionalGeneration"}},
                                {"model_type", "inkling_mm_model"},
                                {"eos_token_id", 200006},
                                {"vocab_size", V},
                                {"torch_dtype", "bfloat16"},
                                {"text_config", text}};
  if (towers) {
    cfg["vision_config"] = {{"patch_size", 8}, {"temporal_patch_size", 2}, {"n_layers", 4}};
    cfg["audio_config"] = {{"n_mel_bins", 80}, {"mel_vocab_size", 16}};
  }
  std::ofstream(out / "config.json") << cfg.dump(1) << "\n";

  Writer w(seed);
  const float lin = 1.0f / std::sqrt(float(H));
  const std::string p = "model.llm.";
  w.add(p + "embed.weight", {V, H}, 'n', 1.0f);
  w.add(p + "embed_norm.weight", {H}, 'c', 1.0f);
  for (int l = 0; l < 2; ++l) {
    const std::string L = p + "layers." + std::to_string(l) + ".";
    const bool local = l == 0;
    w.add(L + "attn_norm.weight", {H}, 'c', 1.0f);
    w.add(L + "mlp_norm.weight", {H}, 'c', 1.0f);
    w.add(L + "attn.wq_du.weight", {heads * hd, H}, 'n', lin);
    w.add(L + "attn.wk_dv.weight", {kv * hd, H}, 'n', lin);
    w.add(L + "attn.wv_dv.weight", {kv * hd, H}, 'n', lin);
    w.add(L + "attn.wr_du.weight", {heads * drel, H}, 'n', lin);
    w.add(L + "attn.wo_ud.weight", {H, heads * hd}, 'n', 1.0f / std::sqrt(float(heads * hd)));
    w.add(L + "attn.q_norm.weight", {hd}, 'c', 1.0f);
    w.add(L + "attn.k_norm.weight", {hd}, 'c', 1.0f);
    w.add(L + "attn.k_sconv.weight", {kv * hd, 1, 4}, 'n', 0.3f);
    w.add(L + "attn.v_sconv.weight", {kv * hd, 1, 4}, 'n', 0.3f);
    w.add(L + "attn.rel_logits_proj.proj", {drel, local ? window : rel_extent}, 'n', 0.7f);
    w.add(L + "attn_sconv.weight", {H, 1, 4}, 'n', 0.3f);
    w.add(L + "mlp_sconv.weight", {H, 1, 4}, 'n', 0.3f);
    if (local) {
      w.add(L + "mlp.w13_dn.weight", {2 * dense_inter, H}, 'n', lin);
      w.add(L + "mlp.w2_md.weight", {H, dense_inter}, 'n', 1.0f / std::sqrt(float(dense_inter)));
      w.add(L + "mlp.global_scale", {1}, 'c', 1.0f);
    } else {
      w.add(L + "mlp.experts.w13_weight", {E, 2 * inter, H}, 'n', lin);
      w.add(L + "mlp.experts.w2_weight", {E, H, inter}, 'n', 1.0f / std::sqrt(float(inter)));
      w.add(L + "mlp.gate.bias", {E}, 'n', 0.15f);
      w.add(L + "mlp.gate.global_scale", {1}, 'c', 1.0f);
      w.add(L + "mlp.gate.weight", {E + n_shared, H}, 'n', lin);
      w.add(L + "mlp.shared_experts.shared_w13_weight", {n_shared, 2 * inter, H}, 'n', lin);
      w.add(L + "mlp.shared_experts.shared_w2_weight", {n_shared, H, inter}, 'n',
            1.0f / std::sqrt(float(inter)));
    }
  }
  w.add(p + "norm.weight", {H}, 'c', 1.0f);
  w.add(p + "unembed.weight", {V, H}, 'n', 3.0f * lin);
  if (towers) {  // folds 2, 2, 2 over 8x8 tiles, then time (as transformers plans patch 8)
    const int64_t in[4] = {12, 256, 256, 384}, outw[4] = {64, 64, 192, H};
    for (int i = 0; i < 4; ++i) {
      const std::string v = "model.visual.layers.";
      w.add(v + "linear_" + std::to_string(i) + ".weight", {outw[i], in[i]}, 'n',
            1.0f / std::sqrt(float(in[i])));
      if (i < 3) w.add(v + "norm_" + std::to_string(i) + ".weight", {outw[i]}, 'c', 1.0f);
    }
    w.add("model.visual.final_norm.weight", {H}, 'c', 1.0f);
    w.add("model.audio.encoder.weight", {80 * 16, H}, 'n', 0.3f);
    w.add("model.audio.final_norm.weight", {H}, 'c', 1.0f);
  }
  if (!w.write(out / "model.safetensors")) {
    std::fprintf(stderr, "error: cannot write %s\n", (out / "model.safetensors").c_str());
    return 1;
  }
  std::printf("%s\n", out.c_str());
  return 0;
}
