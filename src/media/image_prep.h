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
  int64_t rows = 0, cols = 0;  // tile grid: ceil(H / patch) x (W / patch + 1) (Inkling 2: no +1)
  int64_t patch = 0, temporal = 0;
  std::vector<float> pixel_values;  // [rows * cols, temporal, patch, patch, 3]
  int64_t count() const { return rows * cols; }
};

// Tiles an RGB image as the processor does: row-major, the grid's extra column and the
// uncovered part of the last row/column padded with -1 before (x / 255 - mean) / std.
ImageTiles tile_image(const RgbImage& img, int64_t patch, int64_t temporal);

// Inkling 2's processor (transformers' Inkling2ImageProcessor): transparency composited onto an
// 8-pixel checkerboard (204 where (y / 8 + x / 8) is even, else 153) in integer math,
// (c * a + bg * (255 - a) + 127) / 255; clears img->alpha. No-op without an alpha plane.
void composite_checkerboard(RgbImage* img);

// Inkling 2's tiling: no resize, the image padded right and bottom to whole tile x tile tiles
// with -1, then (x - 127.5) / 127.5 (mean = std = 0.5 fused with 1/255); tiles in row-major
// order, each [tile, tile, 3]. rows = ceil(H / tile), cols = ceil(W / tile), temporal = 1.
ImageTiles tile_image_padded(const RgbImage& img, int64_t tile);

}  // namespace inkling
