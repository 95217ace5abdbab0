// AMX-BF16 prefill gemm for bf16 weights (Intel Sapphire Rapids and later): the tile driver of
// ops/tile_gemm-inl.h over the real tile instructions. x is split into three bf16 parts that
// represent every f32 exactly, so every product is exact and only the f32 sums round (as in the
// f32 FMA gemm, in another order). Bound for 17+ tokens only (ShapeClass::kGemm); the 1..16-token
// kernels are untouched, so row-count invariance is unaffected.
//
// Used when all of these hold, decided once per process at the first question:
//  - the CPU reports AMX-TILE and AMX-BF16 (CPUID leaf 7), the OS enables the tile state (XCR0)
//    and Linux grants the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA);
//  - INKLING_NO_AMX is unset, empty or "0";
//  - a self-check passes: the kernel on a small odd-shaped problem agrees with its scalar twin
//    (tile_gemm_ref) within f32 summation error. Otherwise AMX is off for the process, with one
//    warning on stderr.
#pragma once

#include <cstdint>
#include <string>

#include "ops/weight_view.h"

namespace inkling {

// True when this binary has the kernel, the CPU has AMX-BF16 and the OS lets this process use it
// (the permission is requested at the first call).
bool amx_gemm_available();

// Whether the registry binds the AMX gemm: available, not turned off (INKLING_NO_AMX=1 or
// set_amx_gemm_enabled(false)) and the self-check passed.
bool amx_gemm_enabled();
void set_amx_gemm_enabled(bool on);

// "enabled", or why not: "not available (...)", "disabled by INKLING_NO_AMX", "disabled: ...".
// For `inkling bench` and logs.
std::string amx_gemm_status();

// Dense bf16 views (any row stride, any shape).
bool amx_gemm_handles(const MatView& w);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1), any n_tok. Requires
// amx_gemm_available() and amx_gemm_handles(w). Single-threaded; each call configures and
// releases the tiles of its thread.
void amx_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy);

// Fast numerics: x rounded to bf16 (one part, one TDPBF16PS pass per tile step). Same
// requirements as amx_gemm_rows.
void amx_gemm_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy);

// The self-check on a small problem: true when amx_gemm_rows agrees with the scalar twin (a
// relative error within f32 summation error of sum |x w|). Requires amx_gemm_available().
bool amx_gemm_self_check(std::string* why);

}  // namespace inkling
