// The size check both decoders make on a header's dimensions before allocating anything.
#pragma once

#include <string>

#include "media/image.h"

namespace inkling {

inline Status check_image_size(int64_t width, int64_t height, const std::string& name,
                               const ImageLimits& limits) {
  if (width <= 0 || height <= 0)
    return Status::error("[image] " + name + ": empty image (" + std::to_string(width) + "x" +
                         std::to_string(height) + ")");
  if (width > limits.max_side || height > limits.max_side || width * height > limits.max_pixels)
    return Status::error("[image] " + name + ": " + std::to_string(width) + "x" +
                         std::to_string(height) + " pixels exceeds the limit (" +
                         std::to_string(limits.max_pixels) + " pixels, " +
                         std::to_string(limits.max_side) + " per side)");
  return Status::success();
}

}  // namespace inkling
