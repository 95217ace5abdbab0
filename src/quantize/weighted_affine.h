// Importance-weighted MLX affine quantization: the same format as affine_quantize_row() (codes,
// scales and biases mx.dequantize reads unchanged), with each group's scale and bias chosen to
// minimise the weighted squared error sum_j imp_j * (w_j - deq_j)^2 of the values the reader
// actually computes (deq = f32(s) * q + f32(b), s and b rounded to the scale dtype). With the
// per-column mean of x^2 over calibration tokens as imp (an importance matrix), that error is the
// diagonal estimate of the product's output error E[(dW x)^2]; with imp = null it is plain MSE.
#pragma once

#include <cstdint>

#include "base/dtype.h"

namespace inkling {

// One group's dequantized error for scale s and bias b (rounded to scale_dtype first) with each
// code the nearest of 0..2^bits-1: sum_j imp_j (w_j - deq_j)^2 (imp null: weight 1). Writes the
// codes to q (may be null). Infinite when the rounded scale is zero or not finite.
double affine_group_error(const float* w, const float* imp, int n, int bits, float s, float b,
                          DType scale_dtype, uint8_t* q);

// The scale and bias of one group, best of: mx.quantize's own choice and a search over clipped
// ranges, each refitted by weighted least squares on its codes (llama.cpp's make_qkx2 idea).
// Never worse than mx.quantize's choice by affine_group_error. s and b are returned unrounded;
// store them rounded to scale_dtype. False when a value is NaN or infinite.
bool affine_group_search(const float* w, const float* imp, int n, int bits, DType scale_dtype,
                         float* s, float* b);
// affine_group_search()'s scalar twin (the candidate ranges one after the other): the same s and
// b bit for bit (tests/quantize).
bool affine_group_search_scalar(const float* w, const float* imp, int n, int bits,
                                DType scale_dtype, float* s_out, float* b_out);

// affine_quantize_row() with each group chosen by affine_group_search(); imp: [cols] or null.
bool affine_quantize_row_weighted(const float* w, const float* imp, int64_t cols, int bits,
                                  int group, DType scale_dtype, uint8_t* codes, uint8_t* scales,
                                  uint8_t* biases);

}  // namespace inkling
