// load_media_config(): the tower fields of config.json (OG and transformers spellings) and the
// upscale policy of preprocessor_config.json (flat, or under "image_processor").
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/mapped_file.h"
#include "model/towers.h"

namespace inkling {

namespace {

using json = nlohmann::json;

Status read_int(const json& o, const char* key, int* out, const std::string& where, int lo,
                int hi) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return Status::success();
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
    return Status::error("[config] " + where + ": field '" + key + "' must be an integer in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = int(it->get<int64_t>());
  return Status::success();
}

Result<json> read_json(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return text.status().with_context("[config] ");
  INK_RETURN_IF_ERROR(check_json_depth(text.value(), "[config] " + path));
  json j = json::parse(text.value(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::error("[config] " + path + ": not a JSON object");
  return j;
}

// Inkling2VisionConfig's fields (spec/inkling2.md section 1.2) and their checks.
Status read_vit_config(const json& v, const std::string& w, VitConfig* vc) {
  INK_RETURN_IF_ERROR(read_int(v, "hidden_size", &vc->hidden, w, 4, 1 << 16));
  INK_RETURN_IF_ERROR(read_int(v, "num_attention_heads", &vc->heads, w, 1, 1024));
  INK_RETURN_IF_ERROR(read_int(v, "num_hidden_layers", &vc->layers, w, 0, 256));
  INK_RETURN_IF_ERROR(read_int(v, "num_channels", &vc->channels, w, 3, 3));
  INK_RETURN_IF_ERROR(read_int(v, "native_patch_size", &vc->patch, w, 1, 1024));
  INK_RETURN_IF_ERROR(read_int(v, "patch_size", &vc->patch, w, 1, 1024));
  INK_RETURN_IF_ERROR(read_int(v, "adapter_merge_size", &vc->merge, w, 1, 16));
  INK_RETURN_IF_ERROR(read_int(v, "spatial_merge_size", &vc->merge, w, 1, 16));
  INK_RETURN_IF_ERROR(read_int(v, "posemb_grid_size", &vc->grid, w, 1, 1024));
  INK_RETURN_IF_ERROR(read_int(v, "projection_hidden_dim", &vc->proj_hidden, w, 1, 1 << 18));
  INK_RETURN_IF_ERROR(read_int(v, "text_hidden_size", &vc->text_hidden, w, 1, 1 << 18));
  double ratio = 4.0;
  for (const char* k : {"mlp_ratio", "layer_norm_eps"}) {
    auto it = v.find(k);
    if (it == v.end() || it->is_null()) continue;
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 64)
      return Status::error("[config] " + w + ": field '" + k + "' must be a number in (0, 64]");
    (std::string(k) == "mlp_ratio" ? ratio : vc->eps) = it->get<double>();
  }
  vc->intermediate = int(double(vc->hidden) * ratio);
  INK_RETURN_IF_ERROR(read_int(v, "intermediate_size", &vc->intermediate, w, 1, 1 << 20));
  if (auto it = v.find("projector_bias"); it != v.end() && !it->is_null()) {
    if (!it->is_boolean())
      return Status::error("[config] " + w + ": field 'projector_bias' must be true or false");
    vc->projector_bias = it->get<bool>();
  }
  if (auto it = v.find("hidden_act"); it != v.end() && *it != "gelu")
    return Status::error("[config] " + w + ": hidden_act " + it->dump() +
                         " is not supported (the tower's GELU is exact: \"gelu\")");
  if (auto it = v.find("rope_parameters"); it != v.end() && it->is_object()) {
    if (auto t = it->find("rope_type"); t != it->end() && *t != "axial")
      return Status::error("[config] " + w + ": rope_parameters.rope_type " + t->dump() +
                           " is not supported (axial)");
    if (auto t = it->find("rope_theta"); t != it->end()) {
      if (!t->is_number() || !(t->get<double>() > 1))
        return Status::error("[config] " + w + ": rope_parameters.rope_theta must be > 1");
      vc->rope_theta = t->get<double>();
    }
  }
  if (vc->hidden % vc->heads != 0 || (vc->hidden / vc->heads) % 4 != 0)
    return Status::error("[config] " + w + ": hidden_size " + std::to_string(vc->hidden) +
                         " / num_attention_heads " + std::to_string(vc->heads) +
                         " must be a head size divisible by 4 (2-D axial RoPE)");
  return Status::success();
}

}  // namespace

Result<MediaConfig> load_media_config(const std::string& dir, bool inkling2) {
  MediaConfig mc;
  mc.inkling2 = inkling2;
  const std::string path = dir + "/config.json";
  INK_ASSIGN_OR_RETURN(json root, read_json(path));
  if (auto it = root.find("vision_config"); inkling2 && it != root.end() && it->is_object()) {
    mc.has_vision = true;
    INK_RETURN_IF_ERROR(read_vit_config(*it, path + " vision_config", &mc.vit));
    mc.patch = mc.vit.tile();
  }
  if (auto it = root.find("vision_config"); !inkling2 && it != root.end() && it->is_object()) {
    mc.has_vision = true;
    const std::string w = path + " vision_config";
    INK_RETURN_IF_ERROR(read_int(*it, "patch_size", &mc.patch, w, 1, 1024));
    INK_RETURN_IF_ERROR(read_int(*it, "temporal_patch_size", &mc.temporal, w, 1, 64));
    INK_RETURN_IF_ERROR(read_int(*it, "num_channels", &mc.channels, w, 3, 3));
    mc.vision_layers = 24;  // transformers' default when the field is absent
    INK_RETURN_IF_ERROR(read_int(*it, "num_hidden_layers", &mc.vision_layers, w, 1, 64));
    INK_RETURN_IF_ERROR(read_int(*it, "n_layers", &mc.vision_layers, w, 1, 64));
  }
  if (auto it = root.find("audio_config"); !inkling2 && it != root.end() && it->is_object()) {
    mc.has_audio = true;
    const std::string w = path + " audio_config";
    mc.mel_levels = 256;  // transformers' default when the field is absent
    INK_RETURN_IF_ERROR(read_int(*it, "n_mel_bins", &mc.mel_bins, w, 1, 4096));
    INK_RETURN_IF_ERROR(read_int(*it, "mel_vocab_size", &mc.mel_levels, w, 1, 65536));
  }
  int ids[5] = {mc.image_token, mc.audio_token, mc.image_bos, mc.audio_bos, mc.audio_end};
  const char* keys[5] = {"image_token_id", "audio_token_id", "image_bos_token_id",
                         "audio_bos_token_id", "audio_end_token_id"};
  for (int i = 0; i < 5; ++i)
    INK_RETURN_IF_ERROR(read_int(root, keys[i], &ids[i], path, 0, 1 << 30));
  mc.image_token = ids[0], mc.audio_token = ids[1], mc.image_bos = ids[2], mc.audio_bos = ids[3];
  mc.audio_end = ids[4];

  const std::string pre = dir + "/preprocessor_config.json";
  std::error_code ec;
  if (inkling2) {  // Inkling2ImageProcessor pads and never resizes; its tile is the tower's
    mc.upscale.frac.reset();
    mc.upscale_source = "Inkling 2's processor does not resize";
    if (!std::filesystem::exists(pre, ec)) return mc;
    INK_ASSIGN_OR_RETURN(json p, read_json(pre));
    if (auto it = p.find("image_processor"); it != p.end() && it->is_object()) p = *it;
    if (auto it = p.find("size"); it != p.end() && it->is_object() && mc.has_vision)
      for (const char* k : {"height", "width"})
        if (it->contains(k) && (*it)[k] != mc.vit.tile())
          return Status::error("[config] " + pre + ": size." + k + " " + (*it)[k].dump() +
                               " is not the tower's tile (patch_size x spatial_merge_size = " +
                               std::to_string(mc.vit.tile()) + ")");
    return mc;
  }
  if (std::filesystem::exists(pre, ec)) {
    INK_ASSIGN_OR_RETURN(json p, read_json(pre));
    if (auto it = p.find("image_processor"); it != p.end() && it->is_object()) p = *it;
    auto f = p.find("rescale_image_frac");
    if (f != p.end()) {
      if (f->is_null())
        mc.upscale.frac.reset();
      else if (f->is_number() && f->get<double>() > 0 && f->get<double>() <= 16)
        mc.upscale.frac = f->get<double>();
      else
        return Status::error("[config] " + pre +
                             ": field 'rescale_image_frac' must be null or a number in (0, 16]");
      mc.upscale_source = pre;
    }
    auto cap = p.find("rescale_image_max_upscaled_long_edge");
    if (cap != p.end() && !cap->is_null()) {
      if (!cap->is_number_integer() || cap->get<int64_t>() < 1 || cap->get<int64_t>() > 65536)
        return Status::error("[config] " + pre +
                             ": field 'rescale_image_max_upscaled_long_edge' must be an integer "
                             "in [1, 65536]");
      mc.upscale.max_long_edge = cap->get<int64_t>();
      mc.upscale_source = pre;
    }
  }
  return mc;
}

}  // namespace inkling
