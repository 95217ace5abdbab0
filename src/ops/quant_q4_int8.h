// Fast-numerics 4-bit products with x in int8, as llama.cpp's Q4_0 x Q8_0: MLX affine 4-bit and
// NVFP4 weights on AVX2 CPUs (every x86-64-v3 host), and NVFP4 on AVX-512 CPUs without
// AVX512-BF16 (Ice Lake servers), in a 512-bit form where the CPU has AVX512-VNNI. (Affine 4-bit
// there takes quant_affine_vnni.h; AVX512-BF16 hosts take quant_q4_bf16dot.h.)
//
// x is split once per call, per token and block of 32 columns, into int8 parts with one f32 factor
// d = M / 127 (M = max |x| of the block, Q8_0's scale): a = round(x / d) (1 part), and with 2 parts
// also c = round(256 (x / d - a)) clamped to +-127, so x ~= d (a + c / 256) within d / 256 (the
// factor is then d / 256 for 256 a + c). Blocks with M below kQ4Int8Tiny count as zero; a
// non-finite M gives a NaN factor (the row becomes NaN).
//
// A span is 64 columns, 32 bytes of codes (a byte holds an even column in its low nibble and the
// next in its high one). Its low nibbles form vector A (byte j: column 2j for j < 16, 32 + 2(j-16)
// beyond: the even columns of both blocks) and its high nibbles vector B (the odd ones, +1); x's
// parts are stored per span in that order, A's 32 bytes then B's. VPMADDUBSW multiplies the codes
// (affine: q in 0..15; NVFP4: |e2m1| times 2 from a VPSHUFB table, its sign moved onto x by
// VPSIGNB) with the parts, A's and B's pair sums are added in int16 and VPMADDWD makes 8 int32
// lanes (part a weighted 256 with 2 parts): lane l holds A's and B's bytes 4l..4l+3, columns of
// x block l / 4, of NVFP4 block l / 2 of the span. The sums are exact. Then, in f32 with FMA, for
// span s: acc[s % 2] = fma(f32(lanes), w_l * d_l, acc[s % 2]), d_l the x factor of lane l's
// block, w_l the weight factor of lane l's columns (affine: the group scale; NVFP4: f32(e4m3) *
// scale2 / 2, the table holding twice each value); y = sum8(acc[0] + acc[1]) (+ B for affine: bias
// times the f32 sum of x over the group, 8 lanes of fma over whole octets of groups, sum8, then
// fma of the rest), with sum8 the fixed reduction ((v0+v4)+(v2+v6)) +
// ((v1+v5)+(v3+v7)). The scalar twin repeats these steps. Per (row, token) the same instructions
// run on the same values whatever the token count and the rows: row-count invariant
// (ops/formats.h), so batched decode and MTP verify rows are bitwise the one-token row.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

constexpr float kQ4Int8Tiny = 0x1p-100f;

// True when this binary has the kernel and the CPU runs AVX2 + FMA.
bool q4_int8_available();
// Whether the registry binds it (fast numerics on hosts without the AVX-512 fast kernels):
// available and not turned off by set_q4_int8_enabled(false) or INKLING_NO_Q4INT8=1.
bool q4_int8_enabled();
void set_q4_int8_enabled(bool on);
// The kernel's 512-bit form (quant_q4_int8_wide.cpp): two spans per register, VPDPBUSD for the
// byte products, NVFP4's signs moved onto x under a mask; the same integer lane sums and the same
// f32 steps per lane (the low half of the accumulator is the even-span chain, the high half the
// odd one), so it is bitwise the AVX2 form and the twin. Used by every call below when the CPU
// has AVX512F/BW/VL + AVX512-VNNI, unless set_q4_int8_wide_enabled(false) or
// INKLING_NO_Q4INT8_512=1.
bool q4_int8_wide_enabled();
void set_q4_int8_wide_enabled(bool on);

// Affine 4-bit views with a group of 32, 64 or 128 and NVFP4 views, columns a multiple of 64,
// 1..16 tokens.
bool q4_int8_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1), t < n_tok, x in `parts`
// (1 or 2) int8 parts. Requires available() and handles(w, n_tok). Single-threaded.
void q4_int8_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy, int parts);
// One part and two. The registry binds two in both fast grades (ops/formats.cpp: on the 4-bit
// slice one part decoded no faster, and was 7000x further from exact on the demo model).
void q4_int8_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                  int64_t r1, float* y, int64_t ldy);
void q4_int8_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy);

// One token's split (cols a multiple of 64): a and c (c only with 2 parts) in the span order
// above, d per block of 32, and the f32 sums of x per `group` columns (gsum, cols / group of them;
// group 0: none), each as 8 lanes (lane k: the columns k mod 8, in order) reduced by sum8. The
// kernel's own AVX2 split gives the same bits.
void q4_int8_split(const float* x, int64_t cols, int parts, int64_t group, int8_t* a, int8_t* c,
                   float* d, float* gsum);

// The scalar twin: the same split, plain integer sums per lane, the same f32 steps (std::fma) in
// the same order: bitwise equal to q4_int8_parts_rows on every input. Any host.
void q4_int8_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy, int parts);

// Column of position i (< 64) of a span's parts, relative to the span.
constexpr int q4_int8_col(int i) {
  const int j = i % 32;
  return (j < 16 ? 2 * j : 32 + 2 * (j - 16)) + i / 32;
}

// The fixed order both reduce 8 f32 lanes in.
inline float q4_int8_sum8(const float* v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

}  // namespace inkling
