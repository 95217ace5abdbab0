// Inkling 2's image preprocessing (transformers' Inkling2ImageProcessor): the checkerboard alpha
// composite and the padded tiling, with the processor's integer and float32 arithmetic.
#include <cstddef>

#include "media/image_prep.h"

namespace inkling {

void composite_checkerboard(RgbImage* img) {
  if (img->alpha.empty()) return;
  for (int64_t y = 0; y < img->height; ++y)
    for (int64_t x = 0; x < img->width; ++x) {
      const size_t i = size_t(y * img->width + x);
      const int a = img->alpha[i], bg = ((y / 8 + x / 8) % 2 == 0) ? 204 : 153;
      for (int c = 0; c < 3; ++c) {
        uint8_t& v = img->pixels[i * 3 + size_t(c)];
        v = uint8_t((int(v) * a + bg * (255 - a) + 127) / 255);
      }
    }
  img->alpha.clear();
}

ImageTiles tile_image_padded(const RgbImage& img, int64_t tile) {
  const float mean = 0.5f * 255.0f, std = 0.5f * 255.0f;  // the fused constants, as tile_image
  ImageTiles t;
  t.patch = tile, t.temporal = 1;
  t.rows = (img.height + tile - 1) / tile;
  t.cols = (img.width + tile - 1) / tile;
  t.pixel_values.resize(size_t(t.count() * tile * tile * 3));
  float* out = t.pixel_values.data();
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t q = 0; q < t.cols; ++q)
      for (int64_t y = 0; y < tile; ++y)
        for (int64_t x = 0; x < tile; ++x) {
          const int64_t iy = r * tile + y, ix = q * tile + x;
          const bool inside = iy < img.height && ix < img.width;
          const uint8_t* px = inside ? img.pixels.data() + (iy * img.width + ix) * 3 : nullptr;
          for (int c = 0; c < 3; ++c) *out++ = ((inside ? float(px[c]) : -1.0f) - mean) / std;
        }
  return t;
}

}  // namespace inkling
