// Scalar models of the tile gemm (ops/tile_gemm-inl.h): AMX tile operations emulated in C++ per
// Intel's pseudo-code, so the whole driver (packing, configuration, blocking, the split of x) runs
// and is tested on every host, and the scalar twin of the tile kernels. Both compute each dot
// product step as the instructions define it: bf16 inputs that are denormal are read as zero
// (DAZ), each product of two bf16 is exact in f32, each sum rounds to nearest even and a denormal
// sum is flushed to zero (FTZ); MXCSR is not consulted.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling::tile_gemm {

// Which product of a pair a dot instruction adds first: TDPBF16PS (AMX) the even one, then the
// odd one; VDPBF16PS (AVX512-BF16) the odd one first.
enum class PairOrder : uint8_t { kEvenFirst, kOddFirst };

// acc + a * b with a and b bf16 bits, DAZ on the inputs, FTZ on the result.
float dot_step(float acc, uint16_t a, uint16_t b);

// One pair (a0, a1) . (b0, b1) added to acc in the instruction's order.
inline float dot_pair(float acc, const uint16_t* a, const uint16_t* b, PairOrder o) {
  if (o == PairOrder::kEvenFirst) return dot_step(dot_step(acc, a[0], b[0]), a[1], b[1]);
  return dot_step(dot_step(acc, a[1], b[1]), a[0], b[0]);
}

// AMX's tile operations on eight 1 KiB tiles in memory, as the tile ops policy of the driver.
// Checks what real AMX would fault on (a configuration other than palette 1, rows or bytes out
// of range, mismatched shapes) and aborts with a message.
struct EmulatedTileOps {
  struct TileConfigView {
    uint16_t colsb[16];
    uint8_t rows[16];
  };
  uint8_t tile[8][16][64] = {};
  uint16_t colsb[8] = {};
  uint8_t rows[8] = {};
  bool configured = false;

  void config(const void* cfg64);
  template <class Cfg>
  void config(const Cfg& c) {
    config(static_cast<const void*>(&c));
  }
  template <int T>
  void zero() {
    zero_tile(T);
  }
  template <int T>
  void load(const void* p, int64_t stride) {
    load_tile(T, p, stride);
  }
  template <int T>
  void store(void* p, int64_t stride) {
    store_tile(T, p, stride);
  }
  template <int C, int A, int B>
  void dp() {
    dpbf16ps(C, A, B);
  }
  void release();

  void zero_tile(int t);
  void load_tile(int t, const void* p, int64_t stride);
  void store_tile(int t, void* p, int64_t stride) const;
  // TDPBF16PS per the pseudo-code of Intel's intrinsics guide:
  //   for m < C.rows: for k < A.colsb / 4: for n < C.colsb / 4:
  //     C[m].f32[n] += f32(A[m].bf16[2k]) * f32(B[k].bf16[2n])
  //     C[m].f32[n] += f32(A[m].bf16[2k + 1]) * f32(B[k].bf16[2n + 1])
  void dpbf16ps(int c, int a, int b);
};

// The scalar twin of the tile kernels: y[t * ldy + r] for t < n_tok, r in [r0, r1) of bf16
// weights w, each (token, row) summed one pair at a time in the driver's order (column steps of
// 32, parts, pairs), x split into `parts` (2 or 3) bf16 parts, padded columns included.
void tile_gemm_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy, int parts, PairOrder order);

// The driver over EmulatedTileOps (3 parts, AMX order): what amx_gemm_rows computes, on any host.
void emulated_amx_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace inkling::tile_gemm
