// Inkling's image and audio towers (spec/inkling-multimodal.md): their config (vision_config,
// audio_config, the placeholder ids, preprocessor_config.json's upscale), their weights bound
// from either layout with shape checks, and their forward passes. Inkling 2's vision tower (a
// ViT, no audio tower) is model/inkling2/vision.h's; this file holds which one a model has. A tower
// whose tensors are absent or do not bind leaves the text model usable; using it then fails with
// the reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "inkling/numerics.h"
#include "media/image_prep.h"
#include "model/inkling2/vision.h"
#include "model/layouts.h"
#include "ops/weight_view.h"

namespace inkling {

struct MediaConfig {
  bool has_vision = false, has_audio = false;  // config.json has vision_config / audio_config
  bool inkling2 = false;  // an inkling2 / inkling2_loop config: the ViT, no audio tower
  VitConfig vit;          // Inkling 2's vision_config
  int patch = 40;         // vision_config.patch_size
  int temporal = 2;       // vision_config.temporal_patch_size
  int channels = 3;       // vision_config.num_channels
  int vision_layers = 4;  // vision_config.n_layers (num_hidden_layers)
  int mel_bins = 80;      // audio_config.n_mel_bins
  int mel_levels = 16;    // audio_config.mel_vocab_size
  int32_t image_token = 200054, audio_token = 200053;  // placeholders (image/audio_token_id)
  int32_t image_bos = 200005, audio_bos = 200020;      // markers before a span
  int32_t audio_end = 200043;                          // <|audio_end|> after an audio span
  UpscalePolicy upscale{2.0, 2048};  // preprocessor_config.json, else the serving engines' default
  std::string upscale_source = "default (serving engines: 2.0, long edge <= 2048)";
};

// Reads config.json (and preprocessor_config.json when present) of a model folder; `inkling2`:
// the text config is Inkling 2's (its vision_config is a ViT's, and it has no audio tower).
Result<MediaConfig> load_media_config(const std::string& model_dir, bool inkling2);

struct VisionLayerWeights {
  MatView proj;             // [out, t_fold * hw_fold^2 * in_channels]
  std::vector<float> norm;  // [out] (empty on the last layer: no norm, no GELU)
  int t_fold = 1, hw_fold = 1;
};

struct Towers {
  std::vector<VisionLayerWeights> vision;  // empty: no vision tower
  std::vector<float> vision_norm;          // [H] final_norm
  VitWeights vit;                          // Inkling 2's tower (vit.layers empty: none)
  MatView audio_table;                     // [mel_bins * mel_levels, H]
  std::vector<float> audio_norm;           // [H]
  std::string vision_error, audio_error;   // why a tower is unusable ("" = bound or absent)
  std::vector<std::string> bound;          // checkpoint names the towers read
  bool vision_ok() const { return !vision.empty() || vit.patch_embed.kernels != nullptr; }
  bool audio_ok() const { return audio_table.data != nullptr; }
};

// Binds the towers from the checkpoint's tensors (original model.visual.* / model.audio.* or
// transformers' model.vision_tower.* / model.audio_tower.* names). Never fails: a tower that
// cannot be bound records its error message.
Towers bind_towers(const MediaConfig& mc, const TensorMap& checkpoint, int hidden);

// Rebinds the towers' matrices for numerics `n` as bind_numerics does the text model's (fast: the
// fine grade, bf16 activations against bf16 weights); the ViT's attention follows the mode too.
void bind_tower_numerics(Towers& t, Numerics n);

// pixel_values [tiles, T, patch, patch, C] -> rows [tiles, H].
void vision_forward(const MediaConfig& mc, const Towers& t, const float* pixel_values,
                    int64_t tiles, int hidden, float* out, ThreadPool* pool);
// dMel ids [frames, mel_bins] -> rows [frames, H].
void audio_forward(const MediaConfig& mc, const Towers& t, const int32_t* ids, int64_t frames,
                   int hidden, float* out);

}  // namespace inkling
