// Inkling's image preprocessing after decoding (spec/inkling-multimodal.md, transformers'
// InklingImageProcessor): the optional long-edge upscale, tiles of patch x patch with one extra
// column and -1 padding, fused rescale + OpenAI-CLIP normalisation, duplication in time.
#pragma once

#include <optional>
#include <vector>

#include "media/image.h"

namespace inkling {

struct UpscalePolicy {
  std::optional<double> frac;    // rescale_image_frac; nullopt = no resize
  int64_t max_long_edge = 2048;  // rescale_image_max_upscaled_long_edge (growth cap only)
};

// The processor's target size: long edge x frac, capped at max(max_long_edge, long edge),
// half-up rounding of each side. Returns the input size when there is nothing to do.
void upscaled_size(int64_t height, int64_t width, const UpscalePolicy& p, int64_t* out_h,
                   int64_t* out_w);

// Separable Lanczos-3 resampling of 8-bit RGB, Pillow's algorithm (Resample.c: filter support
// scaled when shrinking, coefficients normalised in double then 22-bit fixed point, horizontal
// pass then vertical, each rounded to 8 bits). transformers resizes with torchvision's uint8
// LANCZOS kernel, which differs from Pillow by at most 2 levels on ~1% of pixels.
RgbImage resize_lanczos(const RgbImage& in, int64_t out_h, int64_t out_w);

struct ImageTiles {
  int64_t rows = 0, cols = 0;  // tile grid: ceil(H / patch) x (W / patch + 1)
  int64_t patch = 0, temporal = 0;
  std::vector<float> pixel_values;  // [rows * cols, temporal, patch, patch, 3]
  int64_t count() const { return rows * cols; }
};

// Tiles an RGB image as the processor does: row-major, the grid's extra column and the
// uncovered part of the last row/column padded with -1 before (x / 255 - mean) / std.
ImageTiles tile_image(const RgbImage& img, int64_t patch, int64_t temporal);

}  // namespace inkling
