// Portable kernels for dense weights (F32, BF16, F16): loops with 16 independent accumulators
// that the compiler vectorises without -ffast-math. They run F16 weights (which have no Highway
// kernel) and are the rows every dense kernel widens to.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// Converts n elements of a weight row of dtype t to f32.
void row_to_f32(const uint8_t* row, DType t, int64_t n, float* out);

// One dot product of f32 x with a weight row of dtype t (n elements).
float dot_row(const float* x, const uint8_t* row, DType t, int64_t n);

// Dense row dequantizer (registry: dequantize-row): row r as f32.
void dense_dequant_row(const MatView& w, int64_t r, float* out);

// RowsKernel: one dot_row per (row, token). Single tokens, and F32 weights.
void dense_dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                    int64_t r1, float* y, int64_t ldy);

// RowsKernel: each row widened once to f32, then reused for every token.
void dense_widen_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
