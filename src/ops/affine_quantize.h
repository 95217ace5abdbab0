// MLX affine quantization of one row, exactly as mx.quantize computes it (spec section 5.1), for
// every width MLX packs (2, 3, 4, 5, 6, 8 bits): the writer side of the "affine qN" formats. The
// row dequantizer that reads them back is the format registry's (ops/formats.h, ops/quant.h).
#pragma once

#include <cstdint>

#include "base/dtype.h"

namespace inkling {

// Widths and groups MLX's affine mode quantizes to.
bool affine_bits_supported(int bits);    // 2, 3, 4, 5, 6, 8
bool affine_group_supported(int group);  // 32, 64, 128

// Bytes of one row of `cols` columns: packed codes (cols * bits / 8; a whole number of U32 words
// when cols is a multiple of 32) and scales (or biases) of scale_dtype.
int64_t affine_code_bytes(int64_t cols, int bits);
int64_t affine_scale_bytes(int64_t cols, int group, DType scale_dtype);

// Quantizes w[0, cols) (cols a multiple of `group`, a group MLX supports) the way mx.quantize does
// for an array whose values are w and whose dtype is scale_dtype (F32, BF16 or F16): per group of
// `group` columns, min and max in f32; s = max((max - min) / (2^bits - 1), 1e-7), negated unless
// |min| > |max|; edge = min or max accordingly; q0 = rint(edge / s); when q0 != 0, s = edge / q0
// and bias = edge, else bias = 0; q = clamp(rint((w - bias) / s), 0, 2^bits - 1). Codes are written
// as one little-endian bit stream (element c at bits [c * bits, (c + 1) * bits), which for 2/4/8
// bits is MLX's "low bits first within each U32 word" too); scales and biases are rounded to
// scale_dtype (round to nearest even) after quantizing with their f32 values, as MLX does.
// Returns false, leaving the outputs unspecified, when a value of the row is NaN or infinite.
bool affine_quantize_row(const float* w, int64_t cols, int bits, int group, DType scale_dtype,
                         uint8_t* codes, uint8_t* scales, uint8_t* biases);

// mx.quantize's scale and bias of one group of n values (the first steps above); false when a
// value is NaN or infinite.
bool affine_group_mlx(const float* x, int n, int bits, float* scale, float* bias);
// The code of x for (scale, bias): clamp(rint((x - bias) / scale), 0, 2^bits - 1), NaN -> 0.
uint8_t affine_code(float x, float scale, float bias, int bits);
// Packs codes q[0, cols) as the little-endian bit stream above.
void affine_pack_codes(const uint8_t* q, int64_t cols, int bits, uint8_t* codes);

// The code of element c of a packed row (any width 1..8): the reverse of the bit stream above.
uint32_t affine_code_at(const uint8_t* codes, int64_t c, int bits);

// f32 -> IEEE half, round to nearest even (overflow to infinity, subnormals kept).
uint16_t f32_to_f16(float f);

// Stores v as one element of dtype t (F32, BF16 or F16) at dst (unaligned is fine).
void store_float(DType t, float v, uint8_t* dst);

}  // namespace inkling
