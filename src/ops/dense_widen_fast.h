// Fast-numerics products of bf16 weights for 1..16 tokens (decode, batched decode, speculative
// verification) on AVX-512 CPUs without AVX512-BF16 (Ice Lake, Skylake-SP, Cascade Lake) or with a
// slow one (Intel's: bf16dot_preferred(), ops/quant_q4_bf16dot.h): x stays
// f32 (no rounding is needed where VDPBF16PS is missing: the gain is the order, not the width),
// each 32-column chunk of a row is widened to f32 once as its even and odd columns (a shift and a
// mask of one 64-byte load, against x permuted the same way once per call), and each (row, token)
// dot is ONE chain: acc = fma(w_even, x_even, acc); acc = fma(w_odd, x_odd, acc) per chunk in
// column order (the last partial chunk zero padded), then a fixed 16-lane reduction (lanes l and
// l + 8, then + 4, + 2, + 1). With one chain per (row, token) a tile holds 2 rows x 8 tokens or 4
// rows x 4 tokens in registers, so 16 tokens cost about 2 FMAs and a sixteenth of a widening per
// weight per token: the exact kernel's four chains per (row, token) fit 4 of those in registers
// and were load-bound (docs/performance.md). Every tile gives a (row, token) the same steps, so
// a row's result is bitwise the same alone or with up to 15 other tokens (row-count invariance).
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel, the CPU runs AVX512F/BW/DQ/VL and neither
// INKLING_NO_WIDEN_FAST=1 nor set_dense_widen_fast_enabled(false) turned it off (the registry then
// binds the exact kernel in fast numerics too).
bool dense_widen_fast_available();
void set_dense_widen_fast_enabled(bool on);

// Dense bf16 views, 1..16 tokens.
bool dense_widen_fast_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1), in the order above. Requires
// available() and handles(). Single-threaded.
void dense_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy);

// The scalar twin (std::fma, the same chain, padding and reduction): bitwise equal. Any host.
void dense_widen_fast_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                               int64_t r0, int64_t r1, float* y, int64_t ldy);

// MXFP8 weights (E4M3 codes, an E8M0 power of two per 32 columns) on the same tiles: each block
// made bf16 in registers (ops/quant.h mxfp8_bf16_bits; exact for every stored value whose product
// is a normal bf16), then widened as above, so a row's result is bitwise what the bf16 kernel
// gives that row converted to bf16. The fast MXFP8 kernel where VDPBF16PS is missing or slow.
bool mxfp8_widen_fast_handles(const MatView& w, int64_t n_tok);
void mxfp8_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy);
void mxfp8_widen_fast_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                               int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
