// Decoded images and their decoders: PNG (libpng) and JPEG (libjpeg-turbo) bytes -> 8-bit RGB,
// converted as PIL's Image.convert("RGB") does (grey replicated, palette expanded, alpha
// dropped, 16-bit samples reduced to their high byte), or with ImageLimits::keep_alpha as
// Image.convert("RGBA") does for an image with transparency (alpha channel or tRNS), the alpha
// plane kept beside the RGB pixels. Other formats and malformed files fail
// with one message naming the file; nothing here trusts a header's dimensions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3], row-major
  std::vector<uint8_t> alpha;   // [height, width] with keep_alpha and transparency, else empty
};

struct ImageLimits {
  int64_t max_pixels = int64_t(64) << 20;  // width x height of the decoded file
  int64_t max_side = 32768;                // either side
  bool keep_alpha = false;  // fill RgbImage::alpha when the file has transparency (PNG only)
};

// `name` is used in messages only ("[image] photo.webp: ...").
Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const std::string& name,
                              const ImageLimits& limits = {});
Result<RgbImage> decode_png(std::span<const uint8_t> bytes, const std::string& name,
                            const ImageLimits& limits);
Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const std::string& name,
                             const ImageLimits& limits);

// "png", "jpeg", "gif", "webp", "bmp", ... from the magic bytes; "" when unknown.
std::string sniff_image_format(std::span<const uint8_t> bytes);

}  // namespace inkling
