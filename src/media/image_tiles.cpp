// tile_image(): the processor's divide_to_patches + pad(-1) + fused rescale/normalise + time
// duplication, with its float32 arithmetic: mean' = f32(mean) * 255, std' = f32(std) * 255,
// value = (x - mean') / std' (torchvision normalize on the fused constants).
#include <algorithm>

#include "media/image_prep.h"

namespace inkling {

ImageTiles tile_image(const RgbImage& img, int64_t patch, int64_t temporal) {
  static const float kMean[3] = {0.48145466f, 0.4578275f, 0.40821073f};  // OPENAI_CLIP_MEAN
  static const float kStd[3] = {0.26862954f, 0.26130258f, 0.27577711f};  // OPENAI_CLIP_STD
  float mean[3], std[3];
  for (int c = 0; c < 3; ++c) mean[c] = kMean[c] * 255.0f, std[c] = kStd[c] * 255.0f;
  ImageTiles t;
  t.patch = patch, t.temporal = temporal;
  t.rows = (img.height + patch - 1) / patch;
  t.cols = img.width / patch + 1;
  const int64_t tile = patch * patch * 3;
  t.pixel_values.resize(size_t(t.count() * temporal * tile));
  float* out = t.pixel_values.data();
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t q = 0; q < t.cols; ++q) {
      float* first = out;
      for (int64_t y = 0; y < patch; ++y)
        for (int64_t x = 0; x < patch; ++x) {
          const int64_t iy = r * patch + y, ix = q * patch + x;
          const bool inside = iy < img.height && ix < img.width;
          const uint8_t* px = inside ? img.pixels.data() + (iy * img.width + ix) * 3 : nullptr;
          for (int c = 0; c < 3; ++c) {
            const float v = inside ? float(px[c]) : -1.0f;
            *out++ = (v - mean[c]) / std[c];
          }
        }
      for (int64_t s = 1; s < temporal; ++s, out += tile) std::copy_n(first, tile, out);
    }
  return t;
}

}  // namespace inkling
