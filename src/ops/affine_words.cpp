// The word-lane layout of MLX affine codes (see affine_words.h): built once per (bits, lanes).
#include "ops/affine_words.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "inkling/status.h"

namespace inkling {

namespace {

AffineWordLayout build(int bits, int lanes) {
  INK_CHECK(bits >= 1 && bits <= 8 && lanes >= 1);
  AffineWordLayout L;
  L.bits = bits;
  L.lanes = lanes;
  L.uniform = 32 % bits == 0;
  // Codes starting in word p of a chunk (p < bits): elements e with e * bits in [32p, 32p + 32).
  auto first = [&](int p) { return (32 * p + bits - 1) / bits; };
  for (int p = 0; p < bits; ++p) L.steps = std::max(L.steps, first(p + 1) - first(p));
  L.slots = int64_t(bits) * L.steps * lanes;
  L.shift.assign(size_t(L.slots), 1u);
  L.column.assign(size_t(L.slots), -1);
  L.chunk.resize(size_t(bits * lanes));
  for (int i = 0; i < bits; ++i)
    for (int k = 0; k < lanes; ++k) {
      const int w = i * lanes + k, ch = w / bits, p = w % bits;
      L.chunk[size_t(w)] = ch;
      for (int j = 0; j < L.steps; ++j) {
        const size_t s = size_t((i * L.steps + j) * lanes + k);
        const int e = first(p) + j;
        if (e >= first(p + 1)) {
          if (j == 0) L.shift[s] = 0;  // (never: every word holds at least one code start)
          continue;
        }
        const int off = e * bits - 32 * p;  // 0..31; j >= 1 implies off >= bits >= 1
        L.shift[s] = uint32_t(off);
        L.column[s] = ch * 32 + e;
        if (off + bits > 32) L.straddles |= uint64_t(1) << j;
      }
    }
  return L;
}

}  // namespace

const AffineWordLayout& affine_word_layout(int bits, int lanes) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::unique_ptr<AffineWordLayout>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{bits, lanes}];
  if (!slot) slot = std::make_unique<AffineWordLayout>(build(bits, lanes));
  return *slot;
}

void affine_words_permute_x(const AffineWordLayout& L, const float* x, int64_t n_tok, int64_t ldx,
                            int64_t cols, float* xp, int64_t xps) {
  const int64_t per = 32 * int64_t(L.lanes);
  const int64_t blocks = (cols + per - 1) / per;
  INK_CHECK(xps >= blocks * L.slots);
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* in = x + t * ldx;
    float* out = xp + t * xps;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = in + b * per;
      float* ob = out + b * L.slots;
      const int64_t avail = std::min(per, cols - b * per);
      if (L.uniform && avail == per) {  // every slot filled
        for (int64_t s = 0; s < L.slots; ++s) ob[s] = xb[L.column[size_t(s)]];
        continue;
      }
      for (int64_t s = 0; s < L.slots; ++s) {
        const int32_t c = L.column[size_t(s)];
        ob[s] = c >= 0 && c < avail ? xb[c] : 0.f;
      }
    }
    for (int64_t s = blocks * L.slots; s < xps; ++s) out[s] = 0.f;
  }
}

}  // namespace inkling
