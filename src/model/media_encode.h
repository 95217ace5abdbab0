// File bytes -> tower rows for one image or recording (decode, preprocess, tower forward), with
// the size limits of MediaOptions. Engine::encode_image / encode_audio call these.
#pragma once

#include <span>
#include <string>

#include "inkling/media.h"
#include "model/model.h"

namespace inkling {

Result<MediaEmbedding> encode_image_rows(const Model& m, ThreadPool* pool,
                                         std::span<const uint8_t> bytes, const std::string& name,
                                         const MediaOptions& options);
Result<MediaEmbedding> encode_audio_rows(const Model& m, std::span<const uint8_t> bytes,
                                         const std::string& name, const MediaOptions& options);

}  // namespace inkling
