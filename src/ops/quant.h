// Dequantization of one row of a quantized weight view (MLX affine, NVFP4) into f32: the
// definition every fused quantized kernel is tested against.
#pragma once

#include <cstdint>

#include "ops/matmul.h"

namespace inkling {

// E2M1 code (bit 3 sign, bits 0-2 magnitude index) -> value.
float e2m1_to_f32(uint8_t code);

// Writes the w.cols values of row r to out. Affine: scale * q + bias (f32 arithmetic on the
// stored scale/bias). NVFP4: e2m1 * (f32(e4m3 scale) * scale2).
void dequant_row(const MatView& w, int64_t r, float* out);

}  // namespace inkling
