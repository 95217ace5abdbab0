// The tile gemm driver shared by the AMX-BF16 kernel (amx_gemm.cpp), its emulation
// (tile_emulated.h, run on every host by the tests) and the AVX512-BF16 tile kernel
// (bf16_tile_gemm.cpp): y[t, r] = sum_c x[t, c] * W[r, c] for bf16 weights, written once over a
// "tile ops" policy with the operations of Intel AMX:
//
//   config(TileConfig)       ldtilecfg            zero<T>()              tilezero
//   load<T>(p, stride)       tileloadd            store<T>(p, stride)    tilestored
//   dp<C, A, B>()            tdpbf16ps            release()              tilerelease
//
// Tiles are 16 rows x 64 bytes (every tile, one configuration). C tiles are f32 [16 tokens] x
// [16 weight rows]; A tiles bf16 [16 tokens] x [32 columns]; B tiles the "VNNI" pair-interleaved
// weights: B row k holds (W[n][2k], W[n][2k + 1]) for n = 0..15. tdpbf16ps adds, per pair k,
// A[m][2k] * B[k][2n] and A[m][2k + 1] * B[k][2n + 1] into C[m][n].
//
// Exactness: x (f32) is split into `parts` bf16 parts (3: hi + mid + lo represents every f32
// exactly, as bf16dot-inl.h does; 2: hi + mid, relative error <= 2^-17), each part multiplied by
// the same weight tile, so with 3 parts every product of two bf16 is exact in f32 and only the f32
// sums round. Padding (tokens to 32, rows to 32, columns to 32) is zeros whose results are
// dropped.
//
// Order, for a (token, row) result: column steps of 32 in order; within a step part 0, 1, 2;
// within a part the 16 column pairs in order, each pair as the dp instruction orders it. The
// scalar twin (tile_gemm_ref in tile_emulated.h) computes the same sums in the same order.
//
// The including file defines INK_TILE_FN (the target attribute of its ops, or nothing) before
// including this header; every function here is a template over the ops, so each file's copy is
// its own instantiation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/aligned_scratch.h"
#include "base/dtype.h"

#ifndef INK_TILE_FN
#error "define INK_TILE_FN before including ops/tile_gemm-inl.h"
#endif

namespace inkling::tile_gemm {

constexpr int kTileRows = 16;                  // tile rows (tokens of A and C, column pairs of B)
constexpr int kTileBytes = 64;                 // bytes per tile row
constexpr int kStep = 32;                      // bf16 columns per A tile row
constexpr int64_t kBlock = 32;                 // tokens and weight rows per 2 x 2 block of C tiles
constexpr int64_t kColBlock = 256;             // columns per packed weight block (32 rows: 16 KiB)
constexpr int kTileElems = kTileRows * kStep;  // bf16 per A or B tile

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0..7 all 16 x 64 bytes: C0..C3 = tmm0..3, A0, A1 = tmm4, 5, B0, B1 = tmm6, 7.
inline TileConfig full_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = kTileBytes;
    c.rows[t] = kTileRows;
  }
  return c;
}

// x = sum of `parts` bf16 numbers (3: exactly; 2: hi + mid). parts is 2 or 3.
inline void split_parts(float x, int parts, uint16_t* out) {
  const uint16_t hi = f32_to_bf16(x);
  const float r = x - bf16_to_f32(hi);
  const uint16_t mid = f32_to_bf16(r);
  out[0] = hi;
  out[1] = mid;
  if (parts == 3) out[2] = f32_to_bf16(r - bf16_to_f32(mid));
}

constexpr int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

template <class Ops>
struct Driver {
  // The parts of x as A tiles, each 16 tokens x 32 columns contiguous (1 KiB, rows 64 bytes
  // apart: no 4 KiB-aliased strides), zero padded: out[((i * Tp / 16 + t / 16) * Kp / 32 + c / 32)
  // * 512 + (t % 16) * 32 + c % 32] = part i of x[t, c]. Runs of 32 columns in and out.
  INK_TILE_FN static void pack_x(const float* x, int64_t n_tok, int64_t ldx, int64_t K, int64_t Tp,
                                 int64_t Kp, int parts, uint16_t* out) {
    const int64_t steps = Kp / kStep, part = Tp / 16 * steps * kTileElems;
    if (n_tok < Tp || K < Kp) std::memset(out, 0, size_t(parts * part) * sizeof(uint16_t));
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t st = 0; st < steps; ++st) {
        const float* in = x + t * ldx + st * kStep;
        uint16_t* o = out + (t / 16 * steps + st) * kTileElems + (t % 16) * kStep;
        const int n = int(std::min<int64_t>(kStep, K - st * kStep));
        if constexpr (requires(const float* f, int i, uint16_t* u, int64_t s) {
                        Ops::split32(f, i, u, s);
                      }) {
          if (n == kStep) {  // the policy's vector split, if it has one
            Ops::split32(in, parts, o, part);
            continue;
          }
        }
        uint16_t p[3] = {};
        for (int c = 0; c < n; ++c) {
          split_parts(in[c], parts, p);
          for (int i = 0; i < parts; ++i) o[i * part + c] = p[i];
        }
      }
  }

  // Rows [r, r + nr) (nr <= 32) x columns [k0, k0 + kc) of the bf16 weights (kc <= kcp, the
  // block's columns rounded up to 32) as two row groups of kcp / 32 B tiles each:
  // out[((g * steps + s) * 16 + k) * 32 + 2n + e] = W[r + 16g + n][k0 + 32s + 2k + e]: each
  // column pair of a row is one 32-bit move.
  INK_TILE_FN static void pack_w(const uint16_t* w, int64_t ld, int64_t r, int64_t nr, int64_t k0,
                                 int64_t kc, int64_t kcp, uint16_t* out) {
    const int64_t steps = kcp / kStep;
    if (nr < kBlock || kc < kcp)
      std::memset(out, 0, size_t(2 * steps * kTileElems) * sizeof(uint16_t));
    int64_t j = 0;
    // Whole groups of 16 rows by whole steps: the policy's transpose, if it has one.
    if constexpr (requires(const uint8_t* p, int64_t s, uint16_t* o) {
                    Ops::pack_pairs16(p, s, o);
                  }) {
      for (; j + 16 <= nr; j += 16) {
        const uint16_t* src = w + (r + j) * ld + k0;
        uint16_t* dst = out + (j / 16) * steps * kTileElems;
        int64_t q = 0;
        for (; q + 16 <= kc / 2; q += 16)
          Ops::pack_pairs16(reinterpret_cast<const uint8_t*>(src + 2 * q), ld * 2,
                            dst + (q / 16) * kTileElems);
        for (int64_t i = 0; i < 16; ++i) pack_tail(src + i * ld, dst + 2 * i, q, kc);
      }
    }
    for (; j < nr; ++j)
      pack_tail(w + (r + j) * ld + k0, out + (j / 16) * steps * kTileElems + 2 * (j % 16), 0, kc);
  }

  // Column pairs [q, kc / 2) of one row (and its last odd column) into its B tiles' slots.
  INK_TILE_FN static void pack_tail(const uint16_t* src, uint16_t* dst, int64_t q, int64_t kc) {
    const int64_t pairs = kc / 2;
    for (; q < pairs; ++q)  // pair q: tile q / 16, tile row q % 16
      std::memcpy(dst + (q / 16) * kTileElems + (q % 16) * 32, src + 2 * q, 4);
    if (kc % 2) dst[(pairs / 16) * kTileElems + (pairs % 16) * 32] = load_unaligned(src + kc - 1);
  }

  // y[t * ldy + r] for t < n_tok, r in [r0, r1), from bf16 weights w (rows ld elements apart)
  // with K columns.
  INK_TILE_FN static void run(Ops& ops, const float* x, int64_t n_tok, int64_t ldx,
                              const uint16_t* w, int64_t ld, int64_t K, int64_t r0, int64_t r1,
                              float* y, int64_t ldy, int parts) {
    const int64_t Tp = round_up(n_tok, kBlock), Kp = round_up(K, kStep);
    const int64_t nrows = r1 - r0, Rp = round_up(nrows, kBlock);
    // Tile rows on cache lines (base/aligned_scratch.h).
    thread_local AlignedScratch<uint16_t> xa, wb;
    thread_local AlignedScratch<float> ct;
    xa.get(size_t(parts * Tp * Kp));
    wb.get(size_t(2 * kColBlock * kTileRows));
    ct.get(size_t(Rp * Tp));
    pack_x(x, n_tok, ldx, K, Tp, Kp, parts, xa.data());
    const TileConfig cfg = full_config();
    ops.config(cfg);
    const int64_t ldc = kBlock * 4, xsteps = Kp / kStep;  // ct row stride in bytes
    for (int64_t k0 = 0; k0 < Kp; k0 += kColBlock) {
      const int64_t kcp = std::min(kColBlock, Kp - k0), steps = kcp / kStep;
      for (int64_t rb = 0; rb < Rp; rb += kBlock) {
        pack_w(w, ld, r0 + rb, std::min(kBlock, nrows - rb), k0, std::min(kcp, K - k0), kcp,
               wb.data());
        const uint16_t* b0 = wb.data();
        const uint16_t* b1 = b0 + steps * kTileElems;
        for (int64_t tb = 0; tb < Tp; tb += kBlock) {
          // ct for rows [rb, rb + 32): [Tp tokens][32 rows]; C0/C1 tokens tb.., C2/C3 tb + 16..
          float* c = ct.data() + rb * Tp + tb * kBlock;
          if (k0 == 0) {
            ops.template zero<0>();
            ops.template zero<1>();
            ops.template zero<2>();
            ops.template zero<3>();
          } else {
            ops.template load<0>(c, ldc);
            ops.template load<1>(c + 16, ldc);
            ops.template load<2>(c + 16 * kBlock, ldc);
            ops.template load<3>(c + 16 * kBlock + 16, ldc);
          }
          for (int64_t s = 0; s < steps; ++s) {
            ops.template load<6>(b0 + s * kTileElems, kTileBytes);
            ops.template load<7>(b1 + s * kTileElems, kTileBytes);
            for (int p = 0; p < parts; ++p) {
              const uint16_t* a =
                  xa.data() + ((p * Tp + tb) / 16 * xsteps + k0 / kStep + s) * kTileElems;
              ops.template load<4>(a, kTileBytes);
              ops.template load<5>(a + xsteps * kTileElems, kTileBytes);
              ops.template dp<0, 4, 6>();
              ops.template dp<1, 4, 7>();
              ops.template dp<2, 5, 6>();
              ops.template dp<3, 5, 7>();
            }
          }
          ops.template store<0>(c, ldc);
          ops.template store<1>(c + 16, ldc);
          ops.template store<2>(c + 16 * kBlock, ldc);
          ops.template store<3>(c + 16 * kBlock + 16, ldc);
        }
      }
    }
    ops.release();
    for (int64_t t = 0; t < n_tok; ++t) {
      float* yt = y + t * ldy + r0;
      for (int64_t rb = 0; rb < nrows; rb += kBlock) {
        const float* c = ct.data() + rb * Tp + t * kBlock;
        const int64_t n = std::min(kBlock, nrows - rb);
        for (int64_t j = 0; j < n; ++j) yt[rb + j] = c[j];
      }
    }
  }
};

}  // namespace inkling::tile_gemm
