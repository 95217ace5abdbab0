// Fast-numerics prefill gemm (17+ tokens) for MLX affine 4-bit and NVFP4 weights on CPUs with
// AVX512-VNNI: x split as the int8 decode kernel splits it (quant_q4_int8.h: per token and block
// of 32 columns, one f32 factor d = M / 127, one int8 part, or two for x within d / 256), and
// integer block sums by VPDPBUSD over 16 weight rows at once against one token's 4 parts
// broadcast (oneDNN's u8 x s8 layout: a 64-byte vector holds 4 codes of each of 16 rows).
//
// Tiles: 16 rows, their codes regrouped once per call as, per block b of 32 columns, 4 vectors
// of one 32-bit word per row (bytes 16b + 4j .. +3 of the row: columns 32b + 8j .. + 7, low
// nibbles the even ones, high the odd), against the parts' span order (quant_q4_int8.h), so
// the low nibbles meet 4 parts of A and the high ones 4 of B. Affine: codes 0..15 as the unsigned
// operand, x's parts signed. NVFP4: |e2m1| x 2 with its sign, plus 12 (0..24), as the unsigned
// operand against x's signed parts, and 12 times the parts' sum over the group taken off (exact in
// int32; computed once per token).
//
// Per (row r, token t), in f32: acc = 0; for each factor group k of the row in order (affine: a
// block of 32 columns; NVFP4: 16) acc = fma(f32(I_k), w_k * d_k, acc), with I_k the exact
// integer sum of the group's codes times the parts (two parts: 256 a-sum + c-sum), w_k the row's
// weight factor (affine: its group scale; NVFP4: f32(e4m3) * scale2 / 2) and d_k the x factor of
// the group's block; affine then adds the bias term b = 0; for each group g: b = fma(bias_g,
// xsum_g, b) (xsum: the f32 sum of x over the group, as the decode kernel's split makes it), y =
// acc + b. The scalar twin repeats these steps: bitwise equal.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel and the CPU runs AVX512F/BW/VL + AVX512-VNNI + F16C.
bool q4_int8_gemm_available();
// Whether the registry binds it: available and not turned off by set_q4_int8_gemm_enabled(false)
// or INKLING_NO_Q4INT8_GEMM=1.
bool q4_int8_gemm_enabled();
void set_q4_int8_gemm_enabled(bool on);

// Affine 4-bit views with a group of 32, 64 or 128 and NVFP4 views, columns a multiple of 64.
bool q4_int8_gemm_handles(const MatView& w);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1), any n_tok >= 1, x in `parts`
// (1 or 2) int8 parts. Requires available() and handles(w). Single-threaded.
void q4_int8_gemm_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                             int64_t r0, int64_t r1, float* y, int64_t ldy, int parts);
// The registry's two grades (ops/formats.h): one part (kFast: the routed experts) and two
// (kFastFine: every other matrix).
void q4_int8_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy);
void q4_int8_gemm_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy);

// Load-time tiles (fast numerics; MatView::tiles): a view's 16-row tiles regrouped once, so that
// no call regroups them and 1..16 tokens take this kernel too (decode, batched decode,
// speculative verification) with the bits the gemm gives every count of tokens. Per tile of 16
// rows (a short last tile repeats its last row): the codes as a call regroups them (cols / 32
// blocks x 4 vectors of 64 bytes), then per group the 16 rows' scales (affine: then their biases)
// as elements of the view's scale dtype (lane i = row i; NVFP4: the E4M3 bytes, made factors
// with scale2 as a call makes them), zero padding to a multiple of 64 bytes. NVFP4 tiles are as
// large as the stored codes and scales.
// Bytes per tile (0: the view takes no tiles: an affine scale dtype other than bf16/f16/f32, NVFP4
// scales other than E4M3).
int64_t q4_int8_tile_stride(const MatView& w);
// Whether the weights of a fast-numerics engine get tiles at load: the gemm is enabled and neither
// set_q4_int8_tiles_enabled(false) nor INKLING_NO_Q4_TILES=1 turned them off (then 1..16 tokens
// take the VNNI lane-set kernels, x split per lane set, and nothing is copied at load).
bool q4_int8_tiles_enabled();
void set_q4_int8_tiles_enabled(bool on);

// Nibbles by VPERMB (NVFP4 codes to values) and GFNI (affine high nibbles) where the CPU has
// AVX512-VBMI and GFNI, else by shifts, masks and VPSHUFB; the same bits either way.
// set_q4_int8_vbmi_enabled(false) or INKLING_NO_Q4_VBMI=1: the older form (tests, A/B benchmarks).
void set_q4_int8_vbmi_enabled(bool on);
// Bytes of the tiles of all w.rows rows.
int64_t q4_int8_tiles_bytes(const MatView& w);
// Writes them to out (q4_int8_tiles_bytes(w) bytes; 64-byte aligned for the kernel). Any host.
void q4_int8_pack_tiles(const MatView& w, uint8_t* out);

// The scalar twin: the same split, integer sums and f32 steps in the same order; any host.
void q4_int8_gemm_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy, int parts);

}  // namespace inkling
