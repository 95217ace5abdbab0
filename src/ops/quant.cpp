// Scalar row dequantization for the quantized weight formats (the definitions every quantized
// kernel is tested against), and column slices of views.
#include "ops/quant.h"

#include <cmath>
#include <cstring>

#include "inkling/status.h"
#include "ops/formats.h"

namespace inkling {

float e2m1_to_f32(uint8_t code) {
  static constexpr float kMag[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  const float v = kMag[code & 7];
  return (code & 8) ? -v : v;
}

void dequant_row(const MatView& w, int64_t r, float* out) {
  kernels_of(w).dequant_row(w, r, out);
}

void affine_dequant_row(const MatView& w, int64_t r, float* out) {
  // MLX packs a row as one little-endian bit stream: element c is bits [c * bits, (c + 1) * bits)
  // of the row, so with bits not dividing 32 (3, 5, 6) a code may straddle two u32 words.
  const uint8_t* codes = w.row(r);
  const int64_t srow = r * w.scale_stride;
  const uint32_t mask = (1u << w.bits) - 1u;
  auto word = [&](int64_t i) {
    uint32_t v;
    std::memcpy(&v, codes + size_t(i) * 4, 4);
    return v;
  };
  for (int64_t c = 0; c < w.cols; ++c) {
    const int64_t bit = c * w.bits, i = bit / 32;
    const int sh = int(bit % 32);
    uint32_t v = word(i) >> sh;
    if (sh + w.bits > 32) v |= word(i + 1) << (32 - sh);  // the straddling code's high bits
    const uint32_t q = v & mask;
    const size_t g = size_t(srow + c / w.group);
    const float s = load_as_f32(w.scale_dtype, w.scales, g),
                b = load_as_f32(w.scale_dtype, w.biases, g);
    out[c] = s * float(q) + b;  // two roundings, as mx.dequantize on f32 scales and biases
  }
}

void nvfp4_dequant_row(const MatView& w, int64_t r, float* out) {
  const uint8_t* codes = w.row(r);
  const int64_t srow = r * w.scale_stride;
  for (int64_t c = 0; c < w.cols; ++c) {
    const uint8_t byte = codes[c / 2];
    const uint8_t code = (c & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 15);
    const float block = e4m3_to_f32(w.scales[srow + c / 16]) * w.scale2;
    out[c] = e2m1_to_f32(code) * block;
  }
}

void mxfp8_dequant_row(const MatView& w, int64_t r, float* out) {
  const uint8_t* codes = w.row(r);
  const uint8_t* srow = w.scales + size_t(r * w.scale_stride);
  for (int64_t c = 0; c < w.cols; ++c) out[c] = e4m3_to_f32(codes[c]) * e8m0_to_f32(srow[c / 32]);
}

void bf16_row_bits(const MatView& w, int64_t r, uint16_t* out) {
  if (w.format == WeightFormat::kMxfp8) {
    const uint8_t* codes = w.row(r);
    const uint8_t* e = w.scales + size_t(r * w.scale_stride);
    for (int64_t c = 0; c < w.cols; ++c) out[c] = mxfp8_bf16_bits(codes[c], e[c / 32]);
    return;
  }
  const uint16_t* row = reinterpret_cast<const uint16_t*>(w.row(r));
  for (int64_t c = 0; c < w.cols; ++c) out[c] = load_unaligned(row + c);
}

MatView slice_cols(const MatView& w, int64_t c0, int64_t n) {
  MatView v = w;
  v.cols = n;
  v.kernels = nullptr;  // the kernel choice may depend on the columns
  v.tiles = nullptr, v.tile_stride = 0;
  switch (w.format) {
    case WeightFormat::kDense:
      v.data = w.data + size_t(c0) * dtype_size(w.dtype);
      return v;
    case WeightFormat::kAffine:
    case WeightFormat::kNvfp4:
    case WeightFormat::kMxfp8: {
      INK_CHECK(c0 % w.group == 0 && n % w.group == 0);
      v.data = w.data + size_t(c0 * w.bits / 8);
      const size_t soff = size_t(c0 / w.group) * dtype_size(w.scale_dtype);
      v.scales = w.scales + soff;
      if (w.biases) v.biases = w.biases + soff;
      return v;
    }
  }
  return v;
}

}  // namespace inkling
