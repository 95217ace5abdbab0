// Image and audio input. An Engine turns a PNG/JPEG file or a 16 kHz WAV into tower rows
// (MediaEmbedding); a prompt carries one placeholder token per image/audio part (as the chat
// template renders them), expand_media_placeholders() repeats each to its row count, and
// Session::prefill_media() runs the prompt with the rows written over the placeholders.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inkling/engine.h"
#include "inkling/status.h"

namespace inkling {

enum class MediaKind : uint8_t { kImage, kAudio };

struct MediaOptions {
  // Long-edge upscale factor before tiling: nullopt = the model's preprocessor_config.json, else
  // 2.0 (the serving engines' default); 0 disables it. The result's long edge is capped at
  // max_upscaled_long_edge (or the model's value when 0).
  std::optional<double> upscale;
  int64_t max_upscaled_long_edge = 0;
  int64_t max_image_pixels = int64_t(64) << 20;  // decoded file, width x height
  int64_t max_image_tiles = 4096;                // after the upscale (2048x2048: 2704)
  double max_audio_seconds = 600;
  // Run the vision tower on the engine's worker threads. Their pool serves one caller at a
  // time: a program encoding while another thread runs the model (a server) passes false.
  bool use_engine_threads = true;
};

struct MediaEmbedding {
  MediaKind kind = MediaKind::kImage;
  int64_t rows = 0;         // tiles or audio frames: the placeholder's expanded count
  std::vector<float> data;  // [rows, hidden]
  std::string description;  // "image 53x37 -> 106x74, 2x3 tiles", "audio 1.01 s, 21 frames"
};

// Decodes and encodes one file's bytes (`name` only labels errors).
Result<MediaEmbedding> encode_image(const Engine& engine, std::span<const uint8_t> bytes,
                                    const std::string& name, const MediaOptions& options = {});
Result<MediaEmbedding> encode_audio(const Engine& engine, std::span<const uint8_t> bytes,
                                    const std::string& name, const MediaOptions& options = {});

// Replaces the k-th placeholder (image or audio token id) of `tokens` with media[k].rows
// copies. The placeholders must match media in number and kind, in order.
Result<std::vector<int32_t>> expand_media_placeholders(const Engine& engine,
                                                       std::span<const int32_t> tokens,
                                                       std::span<const MediaEmbedding> media);

// Session::prefill with media: the i-th placeholder position (in order, across all media) takes
// the next tower row. The number of placeholders must equal the total rows, and their kinds
// must match. `all_logits` as in Session::prefill_rows.
Result<std::span<const float>> prefill_media(const Engine& engine, Session& session,
                                             std::span<const int32_t> tokens,
                                             std::span<const MediaEmbedding> media,
                                             std::vector<float>* all_logits = nullptr);

}  // namespace inkling
