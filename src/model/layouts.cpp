// sanitize(): the rename table for the original Thinking Machines layout (model.llm.*), the
// transformers layouts (model.language_model.* and InklingForCausalLM's model.*), and the
// views that undo the gate/up row interleave of fused w13 tensors.
#include "model/layouts.h"

#include <cstring>
#include <set>

namespace inkling {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

TensorRef ref_from_info(const TensorInfo& t) {
  TensorRef r;
  r.dtype = t.dtype;
  r.data = t.data;
  r.shape = t.shape;
  r.strides.assign(t.shape.size(), 1);
  for (int i = int(t.shape.size()) - 2; i >= 0; --i)
    r.strides[size_t(i)] = r.strides[size_t(i) + 1] * t.shape[size_t(i) + 1];
  r.origin = t.name;
  r.origin_shape = t.shape;
  return r;
}

TensorMap refs_from_store(const TensorStore& store) {
  TensorMap m;
  for (const auto& [name, info] : store.all()) m.emplace(name, ref_from_info(*info));
  return m;
}

namespace {

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool is_dropped(const std::string& n) {
  static const char* kPrefixes[] = {"model.mtp.",
                                    "mtp.",
                                    "model.visual.",
                                    "model.audio.",
                                    "model.vision_tower.",
                                    "model.audio_tower.",
                                    "model.multi_modal_projector.",
                                    "vision_tower.",
                                    "audio_tower.",
                                    "visual.",
                                    "audio."};
  for (const char* p : kPrefixes)
    if (starts_with(n, p)) return true;
  return n.find("training_args") != std::string::npos;
}

// Layer-local renames to transformers' names: the original layout (attn.wq_du, ...), MLX's
// pre-converted and mlx-vlm names (switch_mlp, gate_weight, rel_proj, conv.weight, ...). The
// sources never collide, so one table serves every prefix.
const std::pair<const char*, const char*> kLayerRenames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"mlp_norm.weight", "post_attention_layernorm.weight"},
    {"attn.wq_du.weight", "self_attn.q_proj.weight"},
    {"attn.wk_dv.weight", "self_attn.k_proj.weight"},
    {"attn.wv_dv.weight", "self_attn.v_proj.weight"},
    {"attn.wr_du.weight", "self_attn.r_proj.weight"},
    {"attn.wo_ud.weight", "self_attn.o_proj.weight"},
    {"attn.q_norm.weight", "self_attn.q_norm.weight"},
    {"attn.k_norm.weight", "self_attn.k_norm.weight"},
    {"attn.k_sconv.weight", "self_attn.k_sconv.conv1d.weight"},
    {"attn.v_sconv.weight", "self_attn.v_sconv.conv1d.weight"},
    {"attn.rel_logits_proj.proj", "self_attn.rel_logits_proj.proj"},
    {"attn_sconv.weight", "attn_sconv.conv1d.weight"},
    {"mlp_sconv.weight", "mlp_sconv.conv1d.weight"},
    {"mlp.w2_md.weight", "mlp.down_proj.weight"},
    {"mlp.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"mlp.experts.w2_weight", "mlp.experts.down_proj"},
    {"mlp.shared_experts.shared_w2_weight", "mlp.shared_experts.down_proj"},
    // MLX (mlx-community pre-converted and mlx-vlm's own names)
    {"self_attn.rel_proj", "self_attn.rel_logits_proj.proj"},
    {"self_attn.k_sconv.conv.weight", "self_attn.k_sconv.conv1d.weight"},
    {"self_attn.v_sconv.conv.weight", "self_attn.v_sconv.conv1d.weight"},
    {"attn_sconv.conv.weight", "attn_sconv.conv1d.weight"},
    {"mlp_sconv.conv.weight", "mlp_sconv.conv1d.weight"},
    {"mlp.experts.gate_proj.weight", "mlp.experts.gate_proj"},
    {"mlp.experts.up_proj.weight", "mlp.experts.up_proj"},
    {"mlp.experts.down_proj.weight", "mlp.experts.down_proj"},
    {"mlp.switch_mlp.gate_proj.weight", "mlp.experts.gate_proj"},
    {"mlp.switch_mlp.up_proj.weight", "mlp.experts.up_proj"},
    {"mlp.switch_mlp.down_proj.weight", "mlp.experts.down_proj"},
    {"mlp.switch_mlp.gate_scale", "mlp.experts.gate_scale"},
    {"mlp.switch_mlp.out_scale", "mlp.experts.out_scale"},
    {"mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.gate_proj"},
    {"mlp.shared_experts.up_proj.weight", "mlp.shared_experts.up_proj"},
    {"mlp.shared_experts.down_proj.weight", "mlp.shared_experts.down_proj"},
    {"mlp.gate_weight", "mlp.gate.weight"},
    {"mlp.e_score_correction_bias", "mlp.gate.e_score_correction_bias"},
};

// Splits "<prefix>layers.<i>.<rest>" (prefix already canonical "model.") into its parts.
bool split_layer(const std::string& name, std::string* layer, std::string* rest) {
  static const std::string kPre = "model.layers.";
  if (!starts_with(name, kPre)) return false;
  const size_t dot = name.find('.', kPre.size());
  if (dot == std::string::npos || dot == kPre.size()) return false;
  for (size_t i = kPre.size(); i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  *layer = name.substr(0, dot + 1);
  *rest = name.substr(dot + 1);
  return true;
}

enum class Source : uint8_t { kOther, kOg, kMultimodal, kMlxVlm, kCausalLm };

// Prefix step: every spelling of the top level and of the layer prefix -> "model." / "lm_head.".
std::string canonical_prefix(const std::string& n, Source* src) {
  static const std::pair<const char*, const char*> kTop[] = {
      {"model.llm.embed.", "model.embed_tokens."},
      {"model.llm.embed_norm.", "model.embed_norm."},
      {"model.llm.norm.", "model.norm."},
      {"model.llm.unembed.", "lm_head."}};
  for (const auto& [a, b] : kTop)
    if (starts_with(n, a)) return *src = Source::kOg, b + n.substr(std::strlen(a));
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"model.llm.layers.", "model.layers."},
      {"model.language_model.", "model."},
      {"language_model.model.", "model."},
      {"language_model.lm_head.", "lm_head."}};
  const Source kinds[] = {Source::kOg, Source::kMultimodal, Source::kMlxVlm, Source::kMlxVlm};
  for (size_t i = 0; i < 4; ++i)
    if (starts_with(n, kPrefixes[i].first)) {
      *src = kinds[i];
      return kPrefixes[i].second + n.substr(std::strlen(kPrefixes[i].first));
    }
  if (starts_with(n, "model.llm."))
    *src = Source::kOg;
  else if (starts_with(n, "model.") || starts_with(n, "lm_head."))
    *src = Source::kCausalLm;
  return n;
}

// Canonical name of a (non-sidecar) tensor. `moe_layers` holds the layer prefixes whose router
// uses mlx-vlm's names, where "mlp.global_scale" is the router's scale, not a dense one.
std::string canonical_name(const std::string& n, const std::set<std::string>& moe_layers,
                           Source* src) {
  std::string name = canonical_prefix(n, src);
  if (name == "model.embed_tokens.embed_norm.weight") return "model.embed_norm.weight";
  std::string layer, rest;
  if (!split_layer(name, &layer, &rest)) return name;
  for (const auto& [a, b] : kLayerRenames)
    if (rest == a) return layer + b;
  if (rest == "mlp.global_scale" && moe_layers.count(layer)) return layer + "mlp.gate.global_scale";
  return name;
}

// Quantization sidecars in checkpoint spelling: MLX "x.scales"/"x.biases" beside "x.weight";
// ModelOpt "p.scale"/"p.scale2" under the parameter p (transformers-ModelOpt: "x.weight_scale",
// "x.weight_scale_2"). Returns false for ordinary tensors.
bool parse_sidecar(const std::string& n, std::string* base, Sidecar* kind) {
  struct Rule {
    const char* suffix;
    Sidecar kind;
    const char* base_suffix;
  };
  static const Rule kRules[] = {{".scales", Sidecar::kScales, ".weight"},
                                {".biases", Sidecar::kBiases, ".weight"},
                                {".weight_scale_2", Sidecar::kScale2, ".weight"},
                                {".weight_scale", Sidecar::kScales, ".weight"},
                                {".scale2", Sidecar::kScale2, ""},
                                {".scale", Sidecar::kScales, ""}};
  for (const Rule& r : kRules)
    if (ends_with(n, r.suffix) && n.size() > std::strlen(r.suffix)) {
      *base = n.substr(0, n.size() - std::strlen(r.suffix)) + r.base_suffix;
      *kind = r.kind;
      return true;
    }
  return false;
}

}  // namespace

// Splits dim -2 of `r` into two halves: interleaved rows (g0,u0,g1,u1,...) or contiguous halves.
Status split_rows(const TensorRef& r, bool interleaved, TensorRef* first, TensorRef* second) {
  if (r.shape.size() < 2 || r.shape[r.shape.size() - 2] % 2 != 0)
    return Status::error("[load] " + r.origin +
                         ": expected a fused gate/up tensor with an even row count, got " +
                         shape_str(r.shape));
  const size_t d = r.shape.size() - 2;
  *first = r;
  first->shape[d] /= 2;
  const Derivation how = interleaved ? Derivation::kInterleavedHalf : Derivation::kContiguousHalf;
  first->derivation = how;
  *second = *first;
  const size_t esz = dtype_size(r.dtype);
  if (interleaved) {
    first->strides[d] = second->strides[d] = r.strides[d] * 2;
    second->data = r.data + size_t(r.strides[d]) * esz;
  } else {
    second->data = r.data + size_t(r.strides[d] * first->shape[d]) * esz;
  }
  return Status::success();
}

std::string sidecar_name(const std::string& weight, Sidecar kind) {
  static const char* kNames[] = {".scales", ".biases", ".scale2", ".amax",
                                 ".outer_scale_denominator"};
  const std::string stem =
      ends_with(weight, ".weight") ? weight.substr(0, weight.size() - 7) : weight;
  return stem + kNames[size_t(kind)];
}

Result<TensorMap> sanitize(const TensorMap& in, SanitizeReport* report) {
  TensorMap out;
  bool seen[5] = {};
  auto put = [&](const std::string& name, TensorRef r) -> Status {
    auto [it, fresh] = out.emplace(name, std::move(r));
    if (!fresh)
      return Status::error("[load] " + it->second.origin + " and another tensor both map to '" +
                           name + "'");
    return Status::success();
  };
  // Layers whose MoE router carries mlx-vlm's names (mlp.gate_weight).
  std::set<std::string> moe_layers;
  for (const auto& [n, ref] : in) {
    Source src;
    std::string layer, rest;
    if (split_layer(canonical_prefix(n, &src), &layer, &rest) && rest == "mlp.gate_weight")
      moe_layers.insert(layer);
  }
  for (const auto& [name0, ref] : in) {
    if (is_dropped(name0) || ends_with(name0, ".input_amax") ||
        ends_with(name0, ".original_shape") || ends_with(name0, ".input_scale")) {
      if (report) report->dropped.push_back(name0);
      continue;
    }
    std::string base = name0;
    Sidecar kind = Sidecar::kScales;
    const bool sidecar = parse_sidecar(name0, &base, &kind);
    Source src = Source::kOther;
    const std::string name = canonical_name(base, moe_layers, &src);
    seen[size_t(src)] = true;
    auto final_name = [&](const std::string& weight) {
      return sidecar ? sidecar_name(weight, kind) : weight;
    };

    // Fused gate/up tensors (and their block scales / MLX scales and biases) become two views;
    // a per-tensor scale2 applies to both halves unchanged.
    struct Fused {
      const char* suffix;
      const char* gate;
      const char* up;
      bool interleaved;
    };
    static const Fused kFused[] = {
        {"mlp.w13_dn.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", true},
        {"mlp.experts.w13_weight", "mlp.experts.gate_proj", "mlp.experts.up_proj", true},
        {"mlp.shared_experts.shared_w13_weight", "mlp.shared_experts.gate_proj",
         "mlp.shared_experts.up_proj", true},
        {"mlp.experts.gate_up_proj", "mlp.experts.gate_proj", "mlp.experts.up_proj", false},
    };
    bool fused = false;
    for (const auto& f : kFused) {
      if (!ends_with(name, f.suffix)) continue;
      const std::string stem = name.substr(0, name.size() - std::string(f.suffix).size());
      TensorRef g = ref, u = ref;
      if (!(sidecar && kind == Sidecar::kScale2))
        INK_RETURN_IF_ERROR(split_rows(ref, f.interleaved, &g, &u));
      INK_RETURN_IF_ERROR(put(final_name(stem + f.gate), std::move(g)));
      INK_RETURN_IF_ERROR(put(final_name(stem + f.up), std::move(u)));
      fused = true;
      break;
    }
    if (fused) continue;

    TensorRef r = ref;
    // Depthwise conv weights: [C, 1, K] (torch) or [C, K, 1] (MLX) are both the bytes of [C, K].
    if (!sidecar && ends_with(name, "sconv.conv1d.weight") && r.shape.size() == 3 &&
        (r.shape[1] == 1 || r.shape[2] == 1)) {
      const int64_t C = r.shape[0], K = r.shape[1] == 1 ? r.shape[2] : r.shape[1];
      r.shape = {C, K};
      r.strides = {K, 1};
      r.derivation = Derivation::kConvSqueeze;
    }
    INK_RETURN_IF_ERROR(put(final_name(name), std::move(r)));
  }
  if (report) {
    report->layout = seen[size_t(Source::kOg)] ? "original (model.llm.*)"
                     : seen[size_t(Source::kMultimodal)]
                         ? "transformers multimodal (model.language_model.*)"
                     : seen[size_t(Source::kMlxVlm)]   ? "mlx-vlm (language_model.model.*)"
                     : seen[size_t(Source::kCausalLm)] ? "transformers (InklingForCausalLM)"
                                                       : "unknown";
  }
  return out;
}

Result<TensorMap> sanitize_mtp(const TensorMap& in) {
  TensorMap blocks, out;
  for (const auto& [name, ref] : in) {
    std::string rest;
    for (const char* p : {"model.mtp.layers.", "mtp.layers."})
      if (starts_with(name, p)) rest = name.substr(std::strlen(p));
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 ||
        rest.find_first_not_of("0123456789") != dot)  // not "<d>.<tensor>"
      continue;
    const std::string d = rest.substr(0, dot), tail = rest.substr(dot + 1);
    const std::string block = "transformer_block.";
    if (starts_with(tail, block))
      blocks.emplace("model.layers." + d + "." + tail.substr(block.size()), ref);
    else
      out.emplace("mtp." + d + "." + tail, ref);
  }
  // The decoder layer of each depth goes through the trunk's rename table (fused w13, convs).
  INK_ASSIGN_OR_RETURN(TensorMap layers, sanitize(blocks, nullptr));
  for (auto& [name, ref] : layers) {
    const std::string pre = "model.layers.";
    if (!starts_with(name, pre)) continue;
    auto [it, fresh] = out.emplace("mtp." + name.substr(pre.size()), ref);
    if (!fresh)
      return Status::error("[load] " + ref.origin + " and " + it->second.origin + " both map to '" +
                           it->first + "'");
  }
  return out;
}

}  // namespace inkling
