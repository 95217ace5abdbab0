// MLX affine products of any code width up to 6 bits (1, 2, 3, 5, 6; 4 has its own kernel) for 1
// or 2 tokens on CPUs with AVX512-BF16 and AVX512-VBMI (Zen 4, Ice Lake server / Sapphire Rapids
// and later): codes are unpacked in registers straight from MLX's bit stream by a byte permute
// (VPERMB / VPERMT2B) and a per-byte bit-field select (VPMULTISHIFTQB), become the bf16 number
// 2^bits + q in one VPTERNLOGD, and meet x split exactly into three bf16 parts in VDPBF16PS, as the
// 4-bit kernel of quant_q4_bf16dot.cpp does. x86 intrinsics behind a target attribute and a CPUID
// check; everywhere else (and for 3+ tokens) the Highway kernels of quant_affine_words.cpp run.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel and the CPU can run it (AVX512-BF16 and AVX512-VBMI).
// Whether it is used also follows q4_bf16dot_enabled() (ops/quant_q4_bf16dot.h): one switch
// (INKLING_NO_BF16DOT=1, set_q4_bf16dot_enabled) turns every AVX512-BF16 kernel off.
bool affine_bf16dot_available();

// Affine views of 1..6 bits with a group of 32, 64 or 128 columns dividing the row, 1..16 tokens
// (kFewMaxTokens: pairs of tokens per pass over blocks of rows).
bool affine_bf16dot_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1). Requires available() and
// handles(w, 1) (tokens are taken two at a time). Single-threaded.
void affine_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
