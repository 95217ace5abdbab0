// --image / --audio / --upscale for the CLI: the files are encoded by the engine and placed at
// the prompt's image/audio placeholders (or, when it has none, as chat-template-style parts in
// front of it: images, then recordings).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inkling/media.h"

namespace inkling::cli {

struct MediaArgs {
  std::vector<std::string> images, audios;
  double upscale = -1;  // < 0: the model's preprocessor_config.json (else 2.0); 0: off
  bool any() const { return !images.empty() || !audios.empty(); }
};

void add_media_options(CLI::App& app, MediaArgs* a);

struct PromptMedia {
  std::vector<int32_t> ids;  // placeholders expanded to the row counts
  std::vector<MediaEmbedding> media;
};

// k-th image placeholder <- k-th --image, k-th audio placeholder <- k-th --audio.
Result<PromptMedia> attach_media(const Engine& engine, std::vector<int32_t> ids, const MediaArgs& a,
                                 bool verbose);

// Reads and encodes one file (an image when `image`, else a WAV).
Result<MediaEmbedding> encode_file(const Engine& engine, bool image, const std::string& path,
                                   const MediaOptions& opts);

// Expands the placeholders of `ids` (one per attachment, in order) and sets rows[i] to the tower
// row of each expanded position (null elsewhere), as Session::prefill_rows takes them.
Status media_rows(const Engine& engine, std::vector<int32_t>& ids,
                  std::span<const MediaEmbedding> media, std::vector<const float*>* rows);

}  // namespace inkling::cli
