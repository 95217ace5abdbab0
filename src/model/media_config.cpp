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

}  // namespace

Result<MediaConfig> load_media_config(const std::string& dir, int hidden) {
  (void)hidden;
  MediaConfig mc;
  const std::string path = dir + "/config.json";
  INK_ASSIGN_OR_RETURN(json root, read_json(path));
  if (auto it = root.find("vision_config"); it != root.end() && it->is_object()) {
    mc.has_vision = true;
    const std::string w = path + " vision_config";
    INK_RETURN_IF_ERROR(read_int(*it, "patch_size", &mc.patch, w, 1, 1024));
    INK_RETURN_IF_ERROR(read_int(*it, "temporal_patch_size", &mc.temporal, w, 1, 64));
    INK_RETURN_IF_ERROR(read_int(*it, "num_channels", &mc.channels, w, 3, 3));
    mc.vision_layers = 24;  // transformers' default when the field is absent
    INK_RETURN_IF_ERROR(read_int(*it, "num_hidden_layers", &mc.vision_layers, w, 1, 64));
    INK_RETURN_IF_ERROR(read_int(*it, "n_layers", &mc.vision_layers, w, 1, 64));
  }
  if (auto it = root.find("audio_config"); it != root.end() && it->is_object()) {
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
