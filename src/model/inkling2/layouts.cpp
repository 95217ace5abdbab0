// sanitize_inkling2(): the renames of spec/inkling2.md section 7.1 as tables, plus the index offset
// of the original attention-residual queries (attn_queries.i belongs to layer i + 1).
#include "model/inkling2/layouts.h"

#include <cstring>

namespace inkling {

namespace {

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Original per-layer names (after "layers.N.") -> transformers names.
struct Rename {
  const char* og;
  const char* hf;
};
constexpr Rename kLayer[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"q_input_norm.weight", "q_input_layernorm.weight"},
    {"k_input_norm.weight", "k_input_layernorm.weight"},
    {"v_input_norm.weight", "v_input_layernorm.weight"},
    {"mlp_norm.weight", "post_attention_layernorm.weight"},
    {"attn.wq_du.weight", "self_attn.q_proj.linear.weight"},
    {"attn.q_l2_clip.scale", "self_attn.q_proj.norm.scale"},
    {"attn.wk_dv.weight", "self_attn.k_proj.linear.weight"},
    {"attn.wv_dv.weight", "self_attn.v_proj.linear.weight"},
    {"attn.k_sconv.weight", "self_attn.k_proj.sconv.conv1d.weight"},
    {"attn.v_sconv.weight", "self_attn.v_proj.sconv.conv1d.weight"},
    {"attn.k_sconv.static_w", "self_attn.k_proj.sconv.static_weight"},
    {"attn.v_sconv.static_w", "self_attn.v_proj.sconv.static_weight"},
    {"attn.k_sconv.weight_proj", "self_attn.k_proj.sconv.weight_proj.weight"},
    {"attn.v_sconv.weight_proj", "self_attn.v_proj.sconv.weight_proj.weight"},
    {"attn.wr_du.weight", "self_attn.relative_position_bias.linear.weight"},
    {"attn.rel_l2_clip.scale", "self_attn.relative_position_bias.norm.scale"},
    {"attn.rel_logits_proj.proj", "self_attn.relative_position_bias.proj"},
    {"attn.attn_sink_proj.weight", "self_attn.sink_proj.weight"},
    {"attn.gate_attn.weight", "self_attn.o_proj.gate_proj.weight"},
    {"attn.wo_ud.weight", "self_attn.o_proj.linear.weight"},
    {"attn_sconv.weight", "post_attention_convolution.conv1d.weight"},
    {"mlp_sconv.weight", "post_mlp_convolution.conv1d.weight"},
    {"mlp.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"mlp.experts.w2_weight", "mlp.experts.down_proj"},
    {"controllers.attn.down_weight", "q_message_gate.down_proj.weight"},
    {"controllers.attn.forget_weight", "q_message_gate.forget_gate_proj.weight"},
    {"controllers.attn.gain_weight", "q_message_gate.message_gate_proj.weight"},
    {"controllers.k.down_weight", "k_message_gate.down_proj.weight"},
    {"controllers.k.forget_weight", "k_message_gate.forget_gate_proj.weight"},
    {"controllers.k.gain_weight", "k_message_gate.message_gate_proj.weight"},
    {"controllers.v.down_weight", "v_message_gate.down_proj.weight"},
    {"controllers.v.forget_weight", "v_message_gate.forget_gate_proj.weight"},
    {"controllers.v.gain_weight", "v_message_gate.message_gate_proj.weight"},
    {"controllers.mlp.down_weight", "mlp_message_gate.down_proj.weight"},
    {"controllers.mlp.forget_weight", "mlp_message_gate.forget_gate_proj.weight"},
    {"controllers.mlp.gain_weight", "mlp_message_gate.message_gate_proj.weight"},
};
constexpr Rename kTop[] = {
    {"embed.weight", "model.embed_tokens.weight"},
    {"embed_norm.weight", "model.embed_norm.weight"},
    {"unembed.weight", "lm_head.weight"},
    {"norm.weight", "model.norm.weight"},
    {"attn_res.output_query", "model.final_input.query"},
    {"middle_cycle_cross_pass_queries", "model.message_input.og_queries"},
    {"middle_cycle_cross_pass_kv_queries", "model.message_input.og_kv_queries"},
};

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Splits "layers.N.rest" into N and rest.
bool split_layer(const std::string& s, long* n, std::string* rest) {
  if (!starts_with(s, "layers.")) return false;
  const size_t dot = s.find('.', 7);
  if (dot == std::string::npos || dot == 7) return false;
  if (!all_digits(s.substr(7, dot - 7))) return false;
  *n = std::stol(s.substr(7, dot - 7));
  *rest = s.substr(dot + 1);
  return true;
}

// Quantization companions in checkpoint spelling: the original release's experts
// ("w13_weight_scale" / "_amax" / "_outer_scale_denominator" beside "w13_weight"), transformers'
// FP8 experts ("gate_up_proj_scale_inv" beside "gate_up_proj") and MLX siblings ("x.scales" /
// "x.biases" beside "x.weight", or "p.scales" beside a bare expert parameter p). Sets *base to
// the quantized tensor's checkpoint name; false for ordinary tensors.
bool parse_companion(const std::string& n, std::string* base, Sidecar* kind) {
  struct Rule {
    const char* suffix;
    Sidecar kind;
    const char* base_suffix;
  };
  static const Rule kRules[] = {
      {"_weight_outer_scale_denominator", Sidecar::kDenominator, "_weight"},
      {"_weight_amax", Sidecar::kAmax, "_weight"},
      {"_weight_scale", Sidecar::kScales, "_weight"},
      {"_scale_inv", Sidecar::kScales, ""},
      {".scales", Sidecar::kScales, ".weight"},
      {".biases", Sidecar::kBiases, ".weight"},
  };
  for (const Rule& r : kRules) {
    const size_t len = std::strlen(r.suffix);
    if (!ends_with(n, r.suffix) || n.size() == len) continue;
    std::string stem = n.substr(0, n.size() - len);
    // MLX scales of a bare expert parameter sit under the parameter itself.
    const bool bare =
        ends_with(stem, "experts.w13_weight") || ends_with(stem, "experts.w2_weight") ||
        ends_with(stem, "experts.gate_up_proj") || ends_with(stem, "experts.down_proj") ||
        ends_with(stem, "experts.gate_proj") || ends_with(stem, "experts.up_proj");
    *base = bare && r.suffix[0] == '.' ? stem : stem + r.base_suffix;
    *kind = r.kind;
    return true;
  }
  return false;
}

}  // namespace

Result<TensorMap> sanitize_inkling2(const TensorMap& in, SanitizeReport* report) {
  TensorMap out;
  bool og = false, mm = false;
  auto put = [&](const std::string& name, TensorRef r) -> Status {
    auto [it, fresh] = out.emplace(name, std::move(r));
    if (!fresh)
      return Status::error("[load] " + it->second.origin + " and another tensor both map to '" +
                           name + "'");
    return Status::success();
  };
  for (const auto& [n0, ref] : in) {
    // Towers and drafters are not part of the text model.
    if (starts_with(n0, "model.visual.") || starts_with(n0, "model.vision_tower.") ||
        starts_with(n0, "model.multi_modal_projector.") || starts_with(n0, "model.merger.") ||
        starts_with(n0, "model.mtp.") || starts_with(n0, "mtp.")) {
      if (report) report->dropped.push_back(n0);
      continue;
    }
    std::string base = n0;
    Sidecar kind = Sidecar::kScales;
    const bool companion = parse_companion(n0, &base, &kind);
    std::string name;
    if (starts_with(base, "model.llm.")) {  // original layout
      og = true;
      const std::string s = base.substr(10);
      for (const Rename& r : kTop)
        if (s == r.og) name = r.hf;
      long i = 0;
      std::string rest;
      if (name.empty() && starts_with(s, "attn_res.attn_queries.") && all_digits(s.substr(22)))
        name = "model.layers." + std::to_string(std::stol(s.substr(22)) + 1) +
               ".attention_input.query";
      else if (name.empty() && starts_with(s, "attn_res.mlp_queries.") && all_digits(s.substr(21)))
        name = "model.layers." + s.substr(21) + ".mlp_input.query";
      else if (name.empty() && split_layer(s, &i, &rest)) {
        name = "model.layers." + std::to_string(i) + "." + rest;
        for (const Rename& r : kLayer)
          if (rest == r.og) name = "model.layers." + std::to_string(i) + "." + r.hf;
      }
      if (name.empty()) name = "model." + s;
    } else {  // transformers
      name = base;
      if (starts_with(name, "model.language_model.")) {
        mm = true;
        name = "model." + name.substr(21);
      }
      if (name == "model.embed_tokens.embed_norm.weight") name = "model.embed_norm.weight";
      // Routed experts stacked as mlx-lm's SwitchGLU (what `inkling quantize` writes):
      // mlp.switch_mlp.{gate,up,down}_proj.weight [E, rows, cols] (+ .scales / .biases).
      for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const std::string mlx = std::string(".mlp.switch_mlp.") + proj + ".weight";
        if (ends_with(name, mlx))
          name = name.substr(0, name.size() - mlx.size()) + ".mlp.experts." + proj;
      }
    }
    auto final_name = [&](const std::string& w) { return companion ? sidecar_name(w, kind) : w; };
    TensorRef r = ref;
    if (ends_with(name, "mlp.experts.w13_weight") || ends_with(name, "mlp.experts.gate_up_proj")) {
      // Scale rows (and MLX biases) split with their values; the per-expert NVFP4 factor
      // (amax / denominator) applies to both halves unchanged.
      const bool interleaved = ends_with(name, "w13_weight");
      const std::string stem = name.substr(0, name.rfind('.') + 1);
      TensorRef g = r, u = r;
      if (!companion || kind == Sidecar::kScales || kind == Sidecar::kBiases)
        INK_RETURN_IF_ERROR(split_rows(r, interleaved, &g, &u));
      INK_RETURN_IF_ERROR(put(final_name(stem + "gate_proj"), std::move(g)));
      INK_RETURN_IF_ERROR(put(final_name(stem + "up_proj"), std::move(u)));
      continue;
    }
    // Depthwise conv weights [C, 1, K] (torch) or [C, K, 1] (MLX) are the bytes of [C, K].
    if (!companion && ends_with(name, "conv1d.weight") && r.shape.size() == 3 &&
        (r.shape[1] == 1 || r.shape[2] == 1)) {
      const int64_t C = r.shape[0], K = r.shape[1] == 1 ? r.shape[2] : r.shape[1];
      r.shape = {C, K};
      r.strides = {K, 1};
      r.derivation = Derivation::kConvSqueeze;
    }
    INK_RETURN_IF_ERROR(put(final_name(name), std::move(r)));
  }
  if (report)
    report->layout = og   ? "Inkling 2 original (model.llm.*)"
                     : mm ? "Inkling 2 transformers multimodal (model.language_model.*)"
                          : "Inkling 2 transformers (model.*)";
  return out;
}

}  // namespace inkling
