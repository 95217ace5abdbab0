// sanitize(): the rename table for the original Thinking Machines layout (model.llm.*), the
// transformers layouts (model.language_model.* and InklingForCausalLM's model.*), and the
// views that undo the gate/up row interleave of fused w13 tensors.
#include "model/layouts.h"

#include <regex>

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

// Layer-local renames from the original layout to transformers' names.
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
};

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

}  // namespace

Result<TensorMap> sanitize(const TensorMap& in, SanitizeReport* report) {
  TensorMap out;
  bool saw_og = false, saw_mm = false, saw_hf = false;
  auto put = [&](const std::string& name, TensorRef r) -> Status {
    auto [it, fresh] = out.emplace(name, std::move(r));
    if (!fresh)
      return Status::error("[load] " + it->second.origin + " and another tensor both map to '" +
                           name + "'");
    return Status::success();
  };
  static const std::regex kOgLayer(R"(^model\.llm\.layers\.(\d+)\.(.+)$)");
  for (const auto& [name0, ref] : in) {
    if (is_dropped(name0)) {
      if (report) report->dropped.push_back(name0);
      continue;
    }
    std::string name = name0;
    // Prefixes -> InklingForCausalLM's.
    if (starts_with(name, "model.llm.")) {
      saw_og = true;
      static const std::pair<const char*, const char*> kTop[] = {
          {"model.llm.embed.weight", "model.embed_tokens.weight"},
          {"model.llm.embed_norm.weight", "model.embed_norm.weight"},
          {"model.llm.norm.weight", "model.norm.weight"},
          {"model.llm.unembed.weight", "lm_head.weight"}};
      bool top = false;
      for (const auto& [a, b] : kTop)
        if (name == a) name = b, top = true;
      std::smatch m;
      if (!top && std::regex_match(name0, m, kOgLayer)) {
        std::string rest = m[2];
        for (const auto& [a, b] : kLayerRenames)
          if (rest == a) rest = b;
        name = "model.layers." + std::string(m[1]) + "." + rest;
      }
    } else if (starts_with(name, "model.language_model.")) {
      saw_mm = true;
      name = "model." + name.substr(std::string("model.language_model.").size());
    } else if (starts_with(name, "model.") || name == "lm_head.weight") {
      saw_hf = true;
    }
    if (name == "model.embed_tokens.embed_norm.weight") name = "model.embed_norm.weight";

    // Fused gate/up tensors become two views.
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
      TensorRef g, u;
      INK_RETURN_IF_ERROR(split_rows(ref, f.interleaved, &g, &u));
      INK_RETURN_IF_ERROR(put(stem + f.gate, std::move(g)));
      INK_RETURN_IF_ERROR(put(stem + f.up, std::move(u)));
      fused = true;
      break;
    }
    if (fused) continue;

    TensorRef r = ref;
    // Depthwise conv weights: [C, 1, K] (torch) or [C, K, 1] (MLX) are both the bytes of [C, K].
    if (ends_with(name, "sconv.conv1d.weight") && r.shape.size() == 3 &&
        (r.shape[1] == 1 || r.shape[2] == 1)) {
      const int64_t C = r.shape[0], K = r.shape[1] == 1 ? r.shape[2] : r.shape[1];
      r.shape = {C, K};
      r.strides = {K, 1};
      r.derivation = Derivation::kConvSqueeze;
    }
    INK_RETURN_IF_ERROR(put(name, std::move(r)));
  }
  if (report) {
    report->layout = saw_og   ? "original (model.llm.*)"
                     : saw_mm ? "transformers multimodal (model.language_model.*)"
                     : saw_hf ? "transformers (InklingForCausalLM)"
                              : "unknown";
  }
  return out;
}

}  // namespace inkling
