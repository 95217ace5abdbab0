// encode_image_rows / encode_audio_rows, and the public helpers of inkling/media.h that place
// tower rows into a prompt (placeholder expansion, prefill_media).
#include "model/media_encode.h"

#include "media/audio.h"
#include "media/image.h"
#include "media/image_prep.h"

namespace inkling {

namespace {

// Inkling 2: transparency onto the checkerboard, padded tiles, the ViT (one LM row per tile).
Result<MediaEmbedding> encode_vit(const Model& m, ThreadPool* pool, RgbImage img,
                                  const std::string& name, const MediaOptions& o) {
  if (o.upscale && *o.upscale > 0)
    return Status::error("[image] " + name +
                         ": Inkling 2's processor does not resize images (no --upscale)");
  const int64_t P = m.media.vit.tile();
  const int64_t rows = (img.height + P - 1) / P, cols = (img.width + P - 1) / P;
  if (rows * cols > o.max_image_tiles)
    return Status::error("[image] " + name + ": " + std::to_string(img.width) + "x" +
                         std::to_string(img.height) + " pixels make " +
                         std::to_string(rows * cols) + " tiles of " + std::to_string(P) + "x" +
                         std::to_string(P) + ", over the limit of " +
                         std::to_string(o.max_image_tiles) + " (send a smaller image)");
  MediaEmbedding e;
  e.kind = MediaKind::kImage;
  e.description = "image " + std::to_string(img.width) + "x" + std::to_string(img.height);
  if (!img.alpha.empty()) e.description += " with transparency";
  composite_checkerboard(&img);
  const ImageTiles t = tile_image_padded(img, P);
  e.rows = t.count();
  e.description += ", " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + " tiles";
  e.data.resize(size_t(e.rows * m.config.hidden));
  vit_forward(m.media.vit, m.towers.vit, t.pixel_values.data(), t.rows, t.cols, e.data.data(),
              o.use_engine_threads ? pool : nullptr);
  return e;
}

}  // namespace

Result<MediaEmbedding> encode_image_rows(const Model& m, ThreadPool* pool,
                                         std::span<const uint8_t> bytes, const std::string& name,
                                         const MediaOptions& o) {
  if (!m.towers.vision_ok())
    return Status::error("[image] " + name + ": this model has no usable vision tower" +
                         (m.towers.vision_error.empty() ? "" : ": " + m.towers.vision_error));
  ImageLimits limits;
  limits.max_pixels = o.max_image_pixels;
  limits.keep_alpha = m.media.inkling2;
  INK_ASSIGN_OR_RETURN(RgbImage img, decode_image(bytes, name, limits));
  if (m.media.inkling2) return encode_vit(m, pool, std::move(img), name, o);
  UpscalePolicy up = m.media.upscale;
  if (o.upscale) up.frac = *o.upscale > 0 ? o.upscale : std::nullopt;
  if (o.max_upscaled_long_edge > 0) up.max_long_edge = o.max_upscaled_long_edge;
  int64_t h = 0, w = 0;
  upscaled_size(img.height, img.width, up, &h, &w);
  const int64_t P = m.media.patch;
  const int64_t tiles = ((h + P - 1) / P) * (w / P + 1);
  if (tiles > o.max_image_tiles)
    return Status::error("[image] " + name + ": " + std::to_string(w) + "x" + std::to_string(h) +
                         " pixels make " + std::to_string(tiles) + " tiles, over the limit of " +
                         std::to_string(o.max_image_tiles) + " (lower the upscale factor)");
  MediaEmbedding e;
  e.kind = MediaKind::kImage;
  e.description = "image " + std::to_string(img.width) + "x" + std::to_string(img.height);
  if (h != img.height || w != img.width) {
    img = resize_lanczos(img, h, w);
    e.description += " -> " + std::to_string(w) + "x" + std::to_string(h);
  }
  const ImageTiles t = tile_image(img, P, m.media.temporal);
  e.rows = t.count();
  e.description += ", " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + " tiles";
  e.data.resize(size_t(e.rows * m.config.hidden));
  vision_forward(m.media, m.towers, t.pixel_values.data(), e.rows, m.config.hidden, e.data.data(),
                 o.use_engine_threads ? pool : nullptr);
  return e;
}

Result<MediaEmbedding> encode_audio_rows(const Model& m, std::span<const uint8_t> bytes,
                                         const std::string& name, const MediaOptions& o) {
  if (m.media.inkling2)
    return Status::error("[audio] " + name + ": Inkling 2 takes no audio (it has no audio tower)");
  if (!m.towers.audio_ok())
    return Status::error("[audio] " + name + ": this model has no usable audio tower" +
                         (m.towers.audio_error.empty() ? "" : ": " + m.towers.audio_error));
  if (m.media.mel_bins != 80 || m.media.mel_levels != 16)
    return Status::error("[audio] " + name + ": audio_config n_mel_bins " +
                         std::to_string(m.media.mel_bins) + " / mel_vocab_size " +
                         std::to_string(m.media.mel_levels) +
                         " is not supported (the feature extractor makes 80 bins of 16 levels)");
  AudioLimits limits;
  limits.max_seconds = o.max_audio_seconds;
  INK_ASSIGN_OR_RETURN(MonoAudio a, decode_wav(bytes, name, limits));
  const MelFeatures f = dmel_features(a.samples);
  MediaEmbedding e;
  e.kind = MediaKind::kAudio;
  e.rows = f.frames;
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.2f", double(a.samples.size()) / double(a.sample_rate));
  e.description = std::string("audio ") + secs + " s, " + std::to_string(f.frames) + " frames";
  e.data.resize(size_t(e.rows * m.config.hidden));
  audio_forward(m.media, m.towers, f.ids.data(), f.frames, m.config.hidden, e.data.data());
  return e;
}

Result<MediaEmbedding> encode_image(const Engine& engine, std::span<const uint8_t> bytes,
                                    const std::string& name, const MediaOptions& options) {
  return engine.encode_image(bytes, name, options);
}

Result<MediaEmbedding> encode_audio(const Engine& engine, std::span<const uint8_t> bytes,
                                    const std::string& name, const MediaOptions& options) {
  return engine.encode_audio(bytes, name, options);
}

Result<std::vector<int32_t>> expand_media_placeholders(const Engine& engine,
                                                       std::span<const int32_t> tokens,
                                                       std::span<const MediaEmbedding> media) {
  const ModelInfo& info = engine.info();
  std::vector<int32_t> out;
  size_t k = 0;
  for (int32_t t : tokens) {
    const bool image = t == info.image_token_id, audio = t == info.audio_token_id;
    if (!image && !audio) {
      out.push_back(t);
      continue;
    }
    if (k >= media.size())
      return Status::error("[media] the prompt has more image/audio placeholders than the " +
                           std::to_string(media.size()) + " attached files");
    const MediaEmbedding& e = media[k];
    if ((e.kind == MediaKind::kImage) != image)
      return Status::error("[media] placeholder " + std::to_string(k + 1) + " is " +
                           (image ? "an image" : "an audio") + " part but attachment " +
                           std::to_string(k + 1) + " is " +
                           (e.kind == MediaKind::kImage ? "an image" : "audio"));
    out.insert(out.end(), size_t(e.rows), t);
    ++k;
  }
  if (k != media.size())
    return Status::error("[media] " + std::to_string(media.size()) +
                         " files are attached but the prompt has " + std::to_string(k) +
                         " image/audio placeholders");
  return out;
}

Result<std::span<const float>> prefill_media(const Engine& engine, Session& session,
                                             std::span<const int32_t> tokens,
                                             std::span<const MediaEmbedding> media,
                                             std::vector<float>* all_logits) {
  const int64_t H = engine.info().hidden;
  std::vector<const float*> rows(tokens.size(), nullptr);
  int64_t total = 0;
  for (const MediaEmbedding& e : media) {
    if (e.rows < 0 || int64_t(e.data.size()) != e.rows * H)
      return Status::error("[media] an attachment holds " + std::to_string(e.data.size()) +
                           " values, not rows x hidden = " + std::to_string(e.rows) + " x " +
                           std::to_string(H));
    total += e.rows;
  }
  // The rows go, in order, to every position holding an image or audio placeholder.
  size_t k = 0;
  int64_t r = 0, placed = 0;
  const int32_t image_id = engine.info().image_token_id, audio_id = engine.info().audio_token_id;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != image_id && tokens[i] != audio_id) continue;
    while (k < media.size() && r >= media[k].rows) ++k, r = 0;
    if (k >= media.size()) {
      ++placed;
      continue;
    }
    const bool image = tokens[i] == image_id;
    if ((media[k].kind == MediaKind::kImage) != image)
      return Status::error("[media] placeholder at position " + std::to_string(i) + " is " +
                           (image ? "an image" : "an audio") +
                           " token but the next tower rows are " +
                           (media[k].kind == MediaKind::kImage ? "an image's" : "audio"));
    rows[i] = media[k].data.data() + r * H;
    ++r, ++placed;
  }
  if (placed != total)
    return Status::error("[media] the prompt has " + std::to_string(placed) +
                         " image/audio placeholder tokens but the attachments have " +
                         std::to_string(total) + " rows (tiles + audio frames)");
  return session.prefill_rows(tokens, rows, all_logits);
}

}  // namespace inkling
