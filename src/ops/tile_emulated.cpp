// Scalar models of the tile gemm: emulated AMX tile operations, the driver over them, and the
// scalar twin (see tile_emulated.h).
#include "ops/tile_emulated.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/dtype.h"

#define INK_TILE_FN
#include "ops/tile_gemm-inl.h"

namespace inkling::tile_gemm {

namespace {

[[noreturn]] void fault(const char* what) {
  std::fprintf(stderr, "inkling: emulated AMX: %s\n", what);
  std::abort();
}

float daz(uint16_t h) {
  return (h & 0x7f80u) == 0 ? std::copysign(0.f, bf16_to_f32(h)) : bf16_to_f32(h);
}

}  // namespace

float dot_step(float acc, uint16_t a, uint16_t b) {
  const float s = acc + daz(a) * daz(b);  // the product of two bf16 is exact in f32
  return std::fpclassify(s) == FP_SUBNORMAL ? std::copysign(0.f, s) : s;
}

void EmulatedTileOps::config(const void* cfg64) {
  const uint8_t* c = static_cast<const uint8_t*>(cfg64);
  if (c[0] != 1) fault("tile configuration with a palette other than 1");
  for (int t = 0; t < 8; ++t) {
    std::memcpy(&colsb[t], c + 16 + 2 * t, 2);
    rows[t] = c[48 + t];
    if (rows[t] > 16 || colsb[t] > 64 || colsb[t] % 4 != 0) fault("tile shape out of range");
  }
  std::memset(tile, 0, sizeof(tile));
  configured = true;
}

void EmulatedTileOps::release() {
  std::memset(tile, 0, sizeof(tile));
  std::memset(colsb, 0, sizeof(colsb));
  std::memset(rows, 0, sizeof(rows));
  configured = false;
}

void EmulatedTileOps::zero_tile(int t) {
  if (!configured) fault("tile operation before the configuration");
  std::memset(tile[t], 0, sizeof(tile[t]));
}

void EmulatedTileOps::load_tile(int t, const void* p, int64_t stride) {
  if (!configured) fault("tile operation before the configuration");
  std::memset(tile[t], 0, sizeof(tile[t]));  // bytes past colsb / rows read as zero
  for (int m = 0; m < rows[t]; ++m)
    std::memcpy(tile[t][m], static_cast<const uint8_t*>(p) + m * stride, colsb[t]);
}

void EmulatedTileOps::store_tile(int t, void* p, int64_t stride) const {
  if (!configured) fault("tile operation before the configuration");
  for (int m = 0; m < rows[t]; ++m)
    std::memcpy(static_cast<uint8_t*>(p) + m * stride, tile[t][m], colsb[t]);
}

void EmulatedTileOps::dpbf16ps(int c, int a, int b) {
  if (!configured) fault("tile operation before the configuration");
  if (rows[c] != rows[a] || colsb[c] != colsb[b] || colsb[a] != 4 * rows[b])
    fault("tdpbf16ps with mismatched tile shapes");
  for (int m = 0; m < rows[c]; ++m) {
    float acc[16];
    std::memcpy(acc, tile[c][m], 64);
    for (int k = 0; k < colsb[a] / 4; ++k) {
      uint16_t av[2];
      std::memcpy(av, tile[a][m] + 4 * k, 4);
      for (int n = 0; n < colsb[c] / 4; ++n) {
        uint16_t bv[2];
        std::memcpy(bv, tile[b][k] + 4 * n, 4);
        acc[n] = dot_pair(acc[n], av, bv, PairOrder::kEvenFirst);
      }
    }
    std::memset(tile[c][m], 0, 64);  // write_row_and_zero
    std::memcpy(tile[c][m], acc, size_t(colsb[c]));
  }
}

void tile_gemm_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy, int parts, PairOrder order) {
  const int64_t K = w.cols, Kp = round_up(K, kStep);
  const uint16_t* wd = reinterpret_cast<const uint16_t*>(w.data);
  std::vector<uint16_t> xp(size_t(3 * Kp));
  std::vector<uint16_t> wr(static_cast<size_t>(Kp));
  for (int64_t t = 0; t < n_tok; ++t) {
    std::fill(xp.begin(), xp.end(), uint16_t(0));
    for (int64_t c = 0; c < K; ++c) {
      uint16_t p[3] = {};
      split_parts(x[t * ldx + c], parts, p);
      for (int i = 0; i < parts; ++i) xp[size_t(i * Kp + c)] = p[i];
    }
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(wr.begin(), wr.end(), uint16_t(0));
      for (int64_t c = 0; c < K; ++c) wr[size_t(c)] = load_unaligned(wd + r * w.row_stride + c);
      float acc = 0.f;
      for (int64_t s = 0; s < Kp; s += kStep)
        for (int i = 0; i < parts; ++i)
          for (int64_t c = s; c < s + kStep; c += 2)
            acc = dot_pair(acc, &xp[size_t(i * Kp + c)], &wr[size_t(c)], order);
      y[t * ldy + r] = acc;
    }
  }
}

void emulated_amx_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy) {
  thread_local EmulatedTileOps ops;
  Driver<EmulatedTileOps>::run(ops, x, n_tok, ldx, reinterpret_cast<const uint16_t*>(w.data),
                               w.row_stride, w.cols, r0, r1, y, ldy, 3);
}

}  // namespace inkling::tile_gemm
