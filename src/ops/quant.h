// Dequantization of one row of a quantized weight view (MLX affine, NVFP4, MXFP8) into f32: the
// definition every fused quantized kernel is tested against. Also column slices of views.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/dtype.h"
#include "ops/weight_view.h"

namespace inkling {

// E2M1 code (bit 3 sign, bits 0-2 magnitude index) -> value.
float e2m1_to_f32(uint8_t code);

// Writes the w.cols values of row r to out, through the row dequantizer the format registry
// holds for w. Dense: the stored elements as f32 (ops/dense_scalar.h).
void dequant_row(const MatView& w, int64_t r, float* out);

// Affine, any width 1..8: q = bits [c * bits, (c + 1) * bits) of the row's little-endian bit
// stream (MLX's packing for every width), w = scale * q + bias in f32 on the stored scale and bias
// upcast, rounded after the product and after the sum (mx.dequantize on f32 scales and biases).
void affine_dequant_row(const MatView& w, int64_t r, float* out);
// NVFP4: e2m1 * (f32(e4m3 scale) * scale2), the block factor rounded once, as ModelOpt's
// dequantize associates it.
void nvfp4_dequant_row(const MatView& w, int64_t r, float* out);
// MXFP8: e4m3 * 2^(e8m0 - 127) per block of 32 columns (exact but for subnormal results).
void mxfp8_dequant_row(const MatView& w, int64_t r, float* out);

// The factor the SIMD MXFP8 kernels apply to a block summed over E4M3 values read as 2^-8 times
// their value (ops/e4m3-inl.h): 2^(e - 119) = f1 * f2, as one factor (f2 = 1) unless that would
// overflow (e >= 247), then as 2^8 and 2^(e - 127). Powers of two: exact in either order.
inline void mxfp8_block_factor(uint8_t e, float* f1, float* f2) {
  if (e < 247) {
    *f1 = bits_to_f32(uint32_t(e + 8) << 23);  // 2^(e - 119): a normal float for every e < 247
    *f2 = 1.f;
  } else {
    *f1 = 256.f;
    *f2 = e8m0_to_f32(e);
  }
}

// One MXFP8 weight, e4m3(code) * 2^(e - 127), as bf16 bits, the way the AVX512-BF16 kernel builds
// it (ops/dense_bf16dot.h): the E4M3 value's bf16 bits (normals by moving the fields, the seven
// subnormals from a table) with e - 127 added to a nonzero value's exponent field, saturated; the
// sign last. Exact wherever the product is a normal bf16 (every code for 10 <= e <= 246); smaller
// results read as zero (a bf16 denormal, which VDPBF16PS reads as zero, or +-0), results beyond
// bf16's range as inf or NaN, and the NaN codes 0x7f / 0xff as +-480 * 2^(e - 127), as the exact
// SIMD kernel reads them (ops/e4m3-inl.h).
inline uint16_t mxfp8_bf16_bits(uint8_t code, uint8_t e) {
  static constexpr uint16_t kSub[8] = {0x0000, 0x3B00, 0x3B80, 0x3BC0,
                                       0x3C00, 0x3C20, 0x3C40, 0x3C60};  // m * 2^-9
  const int mag = code & 0x7f;
  int t = mag < 8 ? kSub[mag] : (mag << 4) + (120 << 7);
  if (mag != 0) t = std::clamp(t + ((int(e) - 127) << 7), -32768, 32767);
  return uint16_t(std::max(t, 0) | ((code & 0x80) << 8));
}

// An MXFP8 view the registry binds (every kernel, exact and fast): whole blocks of 32 columns,
// U8 / E8M0 exponents.
inline bool mxfp8_whole_blocks(const MatView& w) {
  return w.format == WeightFormat::kMxfp8 && w.group == 32 && w.cols % 32 == 0 &&
         (w.scale_dtype == DType::U8 || w.scale_dtype == DType::F8_E8M0);
}

// Row r of a bf16 or MXFP8 view as the bf16 numbers the fast kernels multiply (w.cols of them:
// bf16 as stored, MXFP8 by mxfp8_bf16_bits): what their scalar twins read.
void bf16_row_bits(const MatView& w, int64_t r, uint16_t* out);

// Columns [c0, c0 + n) of every row as a view of their own (same row strides). For quantized
// views c0 and n must be multiples of the group (block) size, so codes and scales split cleanly.
// The slice has no bound kernels (bind_kernels() it again where that matters).
MatView slice_cols(const MatView& w, int64_t c0, int64_t n);

}  // namespace inkling
