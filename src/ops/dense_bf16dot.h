// Fast-numerics products of bf16 (and MXFP8, below) weights for 1..16 tokens (decode, batched
// decode, speculative verification) on CPUs with AVX512-BF16 (Zen 4, Sapphire Rapids and later): x
// is rounded once per call to bf16 (round to nearest even, as torch's bf16 cast) and VDPBF16PS
// multiplies it with the stored weights, 32 columns per instruction, no widening. Each (row, token)
// dot runs four chains over 32-column chunks (chunk j into chain j % 4, the last partial chunk zero
// padded), then (c0 + c1) + (c2 + c3) and a fixed 16-lane reduction (vnni_sum16 order), so a row's
// result is bitwise the same alone or with up to 15 other tokens (row-count invariance,
// ops/formats.h).
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel and the CPU has AVX512-BF16; follows q4_bf16dot_enabled()
// (INKLING_NO_BF16DOT=1 turns it off, as every AVX512-BF16 kernel).
bool dense_bf16dot_available();

// Dense bf16 views, 1..16 tokens.
bool dense_bf16dot_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c bf16(x[t * ldx + c]) * W[r, c] for rows [r0, r1). Requires available()
// and handles(). Single-threaded.
void dense_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy);

// The scalar twin: the same rounding of x, VDPBF16PS emulated step by step (odd product first,
// inputs DAZ, sums FTZ: tile_gemm::dot_pair), the same chains and reduction. Bitwise equal to
// dense_bf16dot_rows. Any host.
void dense_bf16dot_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy);

// MXFP8 weights (E4M3 codes, an E8M0 power of two per 32 columns: Inkling 2's experts) in fast
// numerics, on the same tiles: each 32-column block becomes 32 bf16 numbers in registers, the
// block's power of two added to their exponents (ops/quant.h mxfp8_bf16_bits: exact for every
// stored value whose product is a normal bf16), so one VDPBF16PS per 32 weights and token, where
// the exact kernel widens the codes to f32 and spends two FMAs and a block factor.
bool mxfp8_bf16dot_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c bf16(x[t * ldx + c]) * mxfp8_bf16_bits(W[r, c]) for rows [r0, r1), in
// dense_bf16dot_rows' chains and reduction. Requires dense_bf16dot_available() and handles().
void mxfp8_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy);

// Its scalar twin, bitwise equal. Any host.
void mxfp8_bf16dot_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
