// MLX affine products (1, 2, 3, 4, 5, 6, 8 bits) for 1..16 tokens on CPUs with AVX512-VNNI and
// AVX512-VBMI (Zen 4, Ice Lake server / Sapphire Rapids and later). The registry binds it for 4 and
// 8 bits, and for the other widths where the exact AVX512-BF16 kernel is not available. Per
// group, y = s * sum(q x) + b * sum(x); the code sums sum(q x) are done in integers: x is split,
// per lane set of 4 or 8 columns (below), into int8 parts with a power-of-two block scale, x ~= 2^E
// (a + 2^-8 c [+ 2^-16 d]), and VPDPBUSD multiplies the u8 codes with the s8 parts (64 products per
// instruction, twice VDPBF16PS's 32). The integer sums are exact; each group's sum is converted to
// f32 (one rounding where the parts share one int32, affine_vnni_fused), scaled by 2^(E-8) and the
// group scale, and accumulated in a fixed order, so the scalar twin below gives the same bits. The
// bias term b * sum(x) uses f32 group sums of x (16 lanes, then a fixed reduction). The only
// rounding beyond f32 accumulation is the split of x (DESIGN rule 12): with 3 parts each element is
// within 2^(E-16) of x, where 2^E ~ max |x| of its lane set / 64..126, i.e. within ~2^-22 of that
// maximum (f32 itself has 2^-24). 2 parts (2^(E-9)) measured 1.2-2.2e-4 of max |logit| on the test
// models, over the 1e-4 parity tolerance; 3 parts stay near-exact.
//
// Layout. A chunk of a row's codes becomes byte vectors of codes: 64 columns (8 bits: the bytes as
// stored; 1/2/3/5/6 bits: 8 * bits bytes, VPERMB gives qword i the bytes of columns 8i..8i+7 and
// VPMULTISHIFTQB + AND put code j in byte j), or 128 (4 bits: the low nibbles are the even
// columns, the high nibbles the odd ones, one AND / shift + AND each). i32 lane k of a VPDPBUSD
// adds the 4 bytes 4k..4k+3. A span is max(chunk, group) columns: its integer sums are converted
// once, so lane k of a span accumulates the columns (chunk j, code vector v, byte 4k + m), m < 4:
// 4 columns (groups 32/64 with 64-column chunks), or 8 (group 128: two chunks; 4 bits: two nibble
// vectors). Those columns share one exponent E (their "lane set"); they always lie in one group.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// Parts of the split of x used by the exact kernel (3: a + 2^-8 c + 2^-16 d).
constexpr int kVnniParts = 3;
// Fast numerics (include/inkling/numerics.h) take one part with a free scale per lane set:
// x ~= (M / 127) a, a = round(x 127 / M), M = max |x| of the lane set (4 or 8 neighbouring
// columns: finer than llama.cpp's Q8_0 block of 32, so an outlier costs only its neighbours'
// precision). Lane sets with M below kVnniTiny (denormal range) are taken as zero.
constexpr float kVnniTiny = 0x1p-100f;

// True when this binary has the kernel and the CPU can run it (AVX512F/BW/DQ/VL + VNNI + VBMI:
// Zen 4, Ice Lake / Sapphire Rapids and later; not Cascade / Cooper Lake, which keep the kernels
// before this one). VBMI unpacks the widths other than 4 and 8.
bool affine_vnni_available();

// Whether the registry binds it: available and not turned off by set_affine_vnni_enabled(false)
// or the environment variable INKLING_NO_VNNI=1 (then today's kernels run: AVX512-BF16 for 4
// bits, the Highway byte kernel for 8).
bool affine_vnni_enabled();
void set_affine_vnni_enabled(bool on);

// Affine views of 1, 2, 3, 4, 5, 6 or 8 bits with a group of 32, 64 or 128 columns dividing the
// row, scales and biases, for 1..16 tokens (kFewMaxTokens).
bool affine_vnni_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1), t < n_tok. Requires
// available() and handles(w, n_tok). Single-threaded. Per (row, token) the same instructions on
// the same values whatever n_tok and the rows (row-count invariance, ops/formats.h).
void affine_vnni_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy);

// The fast-numerics kernel: one int8 part per column (see kVnniTiny), one VPDPBUSD per code
// vector, the same order of f32 steps; row-count invariant like the exact one.
void affine_vnni_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy);

// Fast numerics for the matrices every token passes (attention, dense, shared experts, head: see
// ops/formats.h KernelMode::kFastFine): two int8 parts, x ~= 2^E (a + 2^-8 c), i.e. within
// 2^(E-9) ~ max |x| of the lane set / 2^15, one VPDPBUSD less per code vector than exact.
void affine_vnni_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy);

// Either kernel by its number of parts (1, 2 or 3): benchmarks and tests.
void affine_vnni_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy, int parts);

// The scalar twin: the same split (affine_vnni_split), plain integer sums per lane set, the same
// f32 steps (std::fma where the kernel fuses) and the same final reduction: bitwise equal to
// affine_vnni_rows on every input (parts 3), or affine_vnni_fast_rows (parts 1). Any host.
void affine_vnni_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                          int64_t r1, float* y, int64_t ldy, int parts = kVnniParts);

// Whether the kernel sums a lane's three part sums in one int32, 65536 A + 256 C + D, converted
// to f32 once and multiplied by 2^(E-16) (the lane's factor times 2^-8): when (columns per lane
// set) x (largest code) <= 256, as |a| <= 127 and |c|, |d| <= 128 keep the sum below 2^31
// (256 x 8355968 < 2^31 - 1). 1-3 bits, 4 bits (8 columns x 15), 5 bits, 6 bits but for group 128;
// not 8 bits, whose part D is converted on its own and added times 2^-8 (one FMA).
constexpr bool affine_vnni_fused(int bits, int64_t span) {
  return (span / 16) * ((int64_t(1) << bits) - 1) <= 256;
}

// Columns per span of a view: max(chunk, group), a chunk being 128 columns for 4 bits (64 bytes of
// codes), 64 for every other width (8 * bits bytes).
int64_t affine_vnni_span(int bits, int group);

// Column of a span's lane set: lane k (< 16), member j (< span / 16), for a span starting at 0.
int64_t affine_vnni_lane_col(int bits, int64_t span, int k, int j);

// The split of one token's x (cols columns, natural order) into `parts` (1, 2 or 3) int8 arrays
// a, c, d (d unused with 2 parts) and per span and lane the factor 2^(E-8) (fac[span * 16 + k]).
// Per lane set: M = max |x|; E is the smallest exponent with round(M 2^-E) <= 126 (at least -140;
// 0 when M is 0); a = round(x 2^-E), c = round(256 (x 2^-E - a)) (c = 128 is carried into a as
// c = -128), d = round(256 (256 (x 2^-E - a) - c)) clamped to 127. Non-finite M: parts 0 and a
// NaN factor (the products become NaN). Columns past cols (a partial last span) get 0.
// parts 1: a = round(x * (127 / M)) and factor M / 127, both in f32 (zero below kVnniTiny).
void affine_vnni_split(const float* x, int64_t cols, int bits, int group, int parts, int8_t* a,
                       int8_t* c, int8_t* d, float* fac);

// The fixed order the kernel and its twin reduce 16 f32 lanes in.
inline float vnni_sum16(const float* v) {
  float t[8];
  for (int k = 0; k < 8; ++k) t[k] = v[k] + v[k + 8];
  for (int k = 0; k < 4; ++k) t[k] = t[k] + t[k + 4];
  for (int k = 0; k < 2; ++k) t[k] = t[k] + t[k + 2];
  return t[0] + t[1];
}

}  // namespace inkling
