// 4-bit products (MLX affine 4-bit and ModelOpt NVFP4) on CPUs with AVX512-BF16 (Zen 4,
// Sapphire Rapids and later): each nibble becomes a bf16 number in two vector instructions
// (affine: 16 + q by a shift and a VPTERNLOGD; NVFP4: its E2M1 value by a shift and a VPERMW
// table) and VDPBF16PS multiplies it with x, two columns per f32 lane. x is split into three bf16
// parts, hi + mid + lo, which represent every f32 exactly (3 x 8 significant bits), so every
// product is exact and only the f32 accumulation rounds, as in the portable kernels. The affine
// offset 16 is removed through the group sums of x, folded into the bias term. Highway 1.0 has no
// bf16 dot target, so this file uses x86 intrinsics behind a target attribute and a CPUID check;
// everywhere else quant_matmul.cpp's Highway kernels run.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel and the CPU can run it.
bool q4_bf16dot_available();

// Whether quant_matmul_rows() takes this kernel for views it handles: available, and not turned
// off by set_q4_bf16dot_enabled(false) or the environment variable INKLING_NO_BF16DOT=1 (for
// A/B benchmarks and tests of the portable kernels).
bool q4_bf16dot_enabled();
void set_q4_bf16dot_enabled(bool on);

// Whether the registry picks the AVX512-BF16 kernels in fast numerics where another fast kernel
// serves the same views (bf16 weights: the one-chain widening kernel; NVFP4: the int8 one). On
// AMD (Zen 4 and later) VDPBF16PS issues at an FMA's rate; on Intel's AVX512-BF16 CPUs (Cooper
// Lake, Sapphire and Emerald Rapids) at about half of it: on an Emerald Rapids VM, 16 tokens on
// bf16 weights in L2 ran 4.1 GB/s against the widening kernel's 6.3, and NVFP4 from DRAM 9.1
// against the 512-bit int8 kernel's 11.1 (one thread). So: true unless the CPU is Intel's.
// INKLING_BF16DOT_PREFER=1 or 0 decides instead (read once; for A/B benchmarks and tests).
bool bf16dot_preferred();

// Affine 4-bit views with a power-of-two group of at least 8 columns and NVFP4 views, for 1..16
// tokens (kFewMaxTokens: pairs of tokens per pass over blocks of rows; 17+ go to the gemm).
bool q4_bf16dot_handles(const MatView& w, int64_t n_tok);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1). Requires available() and
// handles(w). Single-threaded.
void q4_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                     int64_t r1, float* y, int64_t ldy);

// Fast numerics: x rounded to bf16 (one part; one VDPBF16PS per 32 codes instead of three).
// Bitwise q4_bf16dot_rows on the bf16-rounded x. Same requirements.
void q4_bf16dot_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                          int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
