// Highway kernels for the dense (f32 / bf16 weight) matrix products, compiled for every x86
// target (AVX-512, AVX2, SSE4) and chosen at run time. Activations and results are f32; bf16
// weights are widened in registers (matvec) or once per cache tile (gemm), never stored widened.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "ops/weight_view.h"

namespace inkling {

// True for the weight dtypes these kernels handle (F32, BF16).
bool hwy_dense_supported(DType t);

// Columns per gemm weight tile.
constexpr int64_t kGemmTileColumns = 256;

// True when hwy_gemm_rows takes this 4-bit view (MLX affine with a group a multiple of 8, or
// NVFP4; columns a multiple of 8 vector lanes): each weight tile is dequantized once and reused
// by every token.
bool hwy_gemm_q4_supported(const MatView& w);

// True when hwy_gemm_rows takes this MLX affine view of another width (1, 2, 3, 5, 6 or 8 bits,
// group 32, 64 or 128): tiles dequantized once in the word-lane layout of ops/affine_words.h.
bool hwy_gemm_affine_supported(const MatView& w);

// True when hwy_gemm_rows takes this MXFP8 view (blocks of 32, columns a multiple of 32): tiles
// dequantized once (E4M3 widened through f16, times the block's power of two).
bool hwy_gemm_mxfp8_supported(const MatView& w);

// y[t * ldy + r] = x[t] . W[r] for r in [r0, r1), for 1..16 tokens (decode, verification,
// batched decode, small expert groups): one token streams one row at a time; several run register
// tiles of rows x tokens over column blocks, each (row, token) summed in the one-token order.
void hwy_matvec_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                     int64_t r1, float* y, int64_t ldy);

// Same product, cache-blocked for many tokens: x is transposed once into [K, T] panels, each
// (rows x 256 columns) weight tile is widened (bf16) or dequantized (4-bit when
// hwy_gemm_q4_supported, other affine widths when hwy_gemm_affine_supported) once and reused by
// every token, and a register-blocked micro-kernel (8 rows x 2 vectors of tokens on AVX-512)
// accumulates in f32.
void hwy_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
