// Fuzzes the image decoders (src/media: PNG via libpng, JPEG via libjpeg) and, for what decodes,
// the upscale and tiling, on arbitrary bytes; and Inkling 2's path (alpha kept, composited onto
// the checkerboard, padded tiles). Small limits keep each input cheap.
#include <cstdint>
#include <span>

#include "media/image.h"
#include "media/image_prep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inkling::ImageLimits limits;
  limits.max_pixels = 1 << 16;
  limits.max_side = 1024;
  auto img = inkling::decode_image(std::span<const uint8_t>(data, size), "fuzz", limits);
  if (!img.ok()) return 0;
  int64_t h = 0, w = 0;
  inkling::upscaled_size(img->height, img->width, inkling::UpscalePolicy{1.5, 96}, &h, &w);
  auto t = inkling::tile_image(inkling::resize_lanczos(*img, h, w), 8, 2);
  (void)t;
  limits.keep_alpha = true;
  auto rgba = inkling::decode_image(std::span<const uint8_t>(data, size), "fuzz", limits);
  if (!rgba.ok()) return 0;
  inkling::composite_checkerboard(&*rgba);
  auto padded = inkling::tile_image_padded(*rgba, 8);
  (void)padded;
  return 0;
}
