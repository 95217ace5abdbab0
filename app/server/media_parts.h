// Image/audio content parts of a chat request -> tower rows: data: URLs and input_audio base64
// are decoded; local paths (or file:// URLs) are read only inside --media-dir; http(s) URLs are
// never fetched. Every failure is a 400 naming the part.
#pragma once

#include <optional>
#include <vector>

#include "api_types.h"
#include "inkling/media.h"

namespace inkling::server {

struct Context;

std::optional<ApiError> load_media_parts(const Context& ctx, const std::vector<MediaPart>& parts,
                                         std::vector<MediaEmbedding>* out);

// Expands the prompt's placeholders and fills the job's media/rows (scheduler.h: JobParams).
std::optional<ApiError> attach_media_rows(const Context& ctx, std::vector<MediaEmbedding> media,
                                          std::vector<int32_t>* ids,
                                          std::shared_ptr<const std::vector<MediaEmbedding>>* keep,
                                          std::vector<const float*>* rows,
                                          std::vector<int32_t>* key);

}  // namespace inkling::server
