// Attention kernel, flash-style: a work item is one kv head and a block of up to 16 queries, i.e.
// the 16 x G query heads sharing that kv head. Keys are visited in blocks of 64: each block is
// transposed once and scored for every query head of the item (so decode reads each cached key
// once per kv head), the banded bias and mask come from a per-query table, softmax is online
// (running max and sum), and values are accumulated in f32. Scratch is O(block), never [L, S].
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr int64_t kBk = 64;  // keys per block
constexpr int64_t kBq = 16;  // queries per work item

struct Scratch {
  std::vector<float> q, lx, kt, s, o, m, l, lrow;
};

// S[i][j] = sum_c Q[i][c] * kT[c][j] for rows i < Mp (multiple of 4) and j < kBk.
void ScoreBlock(DF df, const float* Q, int64_t hd, const float* kT, int64_t Mp, float* S) {
  const int64_t N = int64_t(hn::Lanes(df));
  for (int64_t i = 0; i < Mp; i += 4) {
    const float *q0 = Q + i * hd, *q1 = q0 + hd, *q2 = q1 + hd, *q3 = q2 + hd;
    for (int64_t j = 0; j < kBk; j += 2 * N) {
      VF a0 = hn::Zero(df), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
      for (int64_t c = 0; c < hd; ++c) {
        const VF k0 = hn::LoadU(df, kT + c * kBk + j), k1 = hn::LoadU(df, kT + c * kBk + j + N);
        VF b = hn::Set(df, q0[c]);
        a0 = hn::MulAdd(b, k0, a0), a1 = hn::MulAdd(b, k1, a1);
        b = hn::Set(df, q1[c]);
        b0 = hn::MulAdd(b, k0, b0), b1 = hn::MulAdd(b, k1, b1);
        b = hn::Set(df, q2[c]);
        c0 = hn::MulAdd(b, k0, c0), c1 = hn::MulAdd(b, k1, c1);
        b = hn::Set(df, q3[c]);
        d0 = hn::MulAdd(b, k0, d0), d1 = hn::MulAdd(b, k1, d1);
      }
      hn::StoreU(a0, df, S + i * kBk + j), hn::StoreU(a1, df, S + i * kBk + j + N);
      hn::StoreU(b0, df, S + (i + 1) * kBk + j), hn::StoreU(b1, df, S + (i + 1) * kBk + j + N);
      hn::StoreU(c0, df, S + (i + 2) * kBk + j), hn::StoreU(c1, df, S + (i + 2) * kBk + j + N);
      hn::StoreU(d0, df, S + (i + 3) * kBk + j), hn::StoreU(d1, df, S + (i + 3) * kBk + j + N);
    }
  }
}

// o[c] = o[c] * alpha + sum_{j<nb} p[j] * v_j[c]  (v_j = vrows[j], hd floats).
void AccumulateValues(DF df, const float* p, const float* const* vrows, int64_t nb, int64_t hd,
                      float alpha, float* o) {
  const int64_t N = int64_t(hn::Lanes(df));
  if (hd % (4 * N) != 0) {
    for (int64_t c = 0; c < hd; ++c) o[c] *= alpha;
    for (int64_t j = 0; j < nb; ++j)
      if (p[j] != 0.f)
        for (int64_t c = 0; c < hd; ++c) o[c] += p[j] * vrows[j][c];
    return;
  }
  const VF va = hn::Set(df, alpha);
  for (int64_t c = 0; c < hd; c += 4 * N) {
    VF a0 = hn::Mul(hn::LoadU(df, o + c), va), a1 = hn::Mul(hn::LoadU(df, o + c + N), va);
    VF a2 = hn::Mul(hn::LoadU(df, o + c + 2 * N), va),
       a3 = hn::Mul(hn::LoadU(df, o + c + 3 * N), va);
    for (int64_t j = 0; j < nb; ++j) {
      if (p[j] == 0.f) continue;  // masked key (its value row may be stale)
      const VF b = hn::Set(df, p[j]);
      const float* v = vrows[j] + c;
      a0 = hn::MulAdd(b, hn::LoadU(df, v), a0), a1 = hn::MulAdd(b, hn::LoadU(df, v + N), a1);
      a2 = hn::MulAdd(b, hn::LoadU(df, v + 2 * N), a2);
      a3 = hn::MulAdd(b, hn::LoadU(df, v + 3 * N), a3);
    }
    hn::StoreU(a0, df, o + c), hn::StoreU(a1, df, o + c + N);
    hn::StoreU(a2, df, o + c + 2 * N), hn::StoreU(a3, df, o + c + 3 * N);
  }
}

// One work item: kv head g, queries [i0, i1) of the chunk.
void AttendItem(const float* q, const float* r, int64_t i0, int64_t i1, int64_t g, int64_t pos0,
                const KvView& kv, const float* P, const AttentionShape& s, float* out,
                Scratch& sc) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  const int64_t nh = s.n_heads, hd = s.head_dim, d = s.d_rel, R = s.rel_extent, W = s.window;
  const int64_t G = s.n_heads / s.n_kv_heads, M = (i1 - i0) * G, Mp = (M + 3) / 4 * 4;
  const int64_t LX = R + 2 * kBk;  // table of bias/mask by u = s - (t - R + 1), u in [-kBk, R+kBk)
  sc.q.assign(size_t(Mp * hd), 0.f);
  sc.lx.resize(size_t(Mp * LX));
  sc.kt.resize(size_t(hd * kBk));
  sc.s.resize(size_t(Mp * kBk));
  sc.o.assign(size_t(Mp * hd), 0.f);
  sc.m.assign(size_t(Mp), -INFINITY);
  sc.l.assign(size_t(Mp), 0.f);
  sc.lrow.resize(size_t(R));
  const float inv_hd = 1.f / float(hd);

  // Per query head: tau- and 1/hd-scaled q, and the bias/mask table (tau folded in).
  for (int64_t mi = 0; mi < M; ++mi) {
    const int64_t i = i0 + mi / G, h = g * G + mi % G, t = pos0 + i;
    const float tau = log_position_tau(t, s.log_floor, s.log_alpha);
    const float* qh = q + i * nh * hd + h * hd;
    for (int64_t c = 0; c < hd; ++c) sc.q[size_t(mi * hd + c)] = qh[c] * tau * inv_hd;
    const float* rh = r + i * nh * d + h * d;
    float* L = sc.lrow.data();
    std::fill(L, L + R, 0.f);
    for (int64_t m = 0; m < d; ++m) {  // L[delta] = sum_m r[m] P[m, delta], vectorised over delta
      const VF rm = hn::Set(df, rh[m]);
      const float* pm = P + m * R;
      int64_t k = 0;
      for (; k + N <= R; k += N)
        hn::StoreU(hn::MulAdd(rm, hn::LoadU(df, pm + k), hn::LoadU(df, L + k)), df, L + k);
      for (; k < R; ++k) L[k] += rh[m] * pm[k];
    }
    float* lx = sc.lx.data() + mi * LX;
    for (int64_t u = -kBk; u < R + kBk; ++u) {
      const int64_t dist = R - 1 - u;
      const bool masked = dist < 0 || (W > 0 && dist >= W);
      lx[u + kBk] = masked ? -INFINITY : (dist < R ? tau * L[dist] : 0.f);
    }
  }

  const int64_t t_first = pos0 + i0, t_last = pos0 + i1 - 1;
  const int64_t lo = W > 0 ? std::max<int64_t>(0, t_first - W + 1) : 0;
  const float* vrows[kBk];
  for (int64_t s0 = lo; s0 <= t_last; s0 += kBk) {
    const int64_t nb = std::min<int64_t>(kBk, t_last + 1 - s0);
    // kT[c][j] = key(s0 + j)[c]; padded columns are zero.
    for (int64_t j = 0; j < kBk; ++j) {
      if (j < nb) {
        const float* kr = kv.key(s0 + j) + g * hd;
        for (int64_t c = 0; c < hd; ++c) sc.kt[size_t(c * kBk + j)] = kr[c];
        vrows[j] = kv.value(s0 + j) + g * hd;
      } else {
        for (int64_t c = 0; c < hd; ++c) sc.kt[size_t(c * kBk + j)] = 0.f;
      }
    }
    ScoreBlock(df, sc.q.data(), hd, sc.kt.data(), Mp, sc.s.data());
    for (int64_t mi = 0; mi < M; ++mi) {
      const int64_t t = pos0 + i0 + mi / G;
      if (s0 > t) continue;  // the whole block is in this query's future
      float* row = sc.s.data() + mi * kBk;
      const int64_t u0 = s0 - (t - R + 1);
      if (u0 >= -kBk) {  // bias and mask from the table (u0 <= R - 1 since s0 <= t)
        const float* lx = sc.lx.data() + mi * LX + kBk + u0;
        for (int64_t j = 0; j < kBk; j += N) {
          const VF b = hn::LoadU(df, lx + j);
          const auto keep = hn::Lt(hn::Set(df, -INFINITY), b);
          hn::StoreU(hn::IfThenElse(keep, hn::Add(hn::LoadU(df, row + j), b), b), df, row + j);
        }
      } else if (W > 0) {  // every key is beyond R: no bias; only the window can mask
        for (int64_t j = 0; j < kBk; ++j)
          if (t - (s0 + j) >= W) row[j] = -INFINITY;
      }
      for (int64_t j = nb; j < kBk; ++j) row[j] = -INFINITY;
      // Online softmax over this block.
      VF vmax = hn::Set(df, -INFINITY);
      for (int64_t j = 0; j < kBk; j += N) vmax = hn::Max(vmax, hn::LoadU(df, row + j));
      const float bmax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      if (bmax == -INFINITY) continue;
      const float m_old = sc.m[size_t(mi)], m_new = std::max(m_old, bmax);
      const float alpha = m_old == -INFINITY ? 0.f : std::exp(m_old - m_new);
      const VF vm = hn::Set(df, m_new), ninf = hn::Set(df, -INFINITY);
      VF vsum = hn::Zero(df);
      for (int64_t j = 0; j < kBk; j += N) {
        const VF z = hn::LoadU(df, row + j);
        const VF p = hn::IfThenZeroElse(hn::Eq(z, ninf), hn::Exp(df, hn::Sub(z, vm)));
        hn::StoreU(p, df, row + j);
        vsum = hn::Add(vsum, p);
      }
      sc.l[size_t(mi)] = sc.l[size_t(mi)] * alpha + hn::GetLane(hn::SumOfLanes(df, vsum));
      sc.m[size_t(mi)] = m_new;
      AccumulateValues(df, row, vrows, nb, hd, alpha, sc.o.data() + mi * hd);
    }
  }
  for (int64_t mi = 0; mi < M; ++mi) {
    const int64_t i = i0 + mi / G, h = g * G + mi % G;
    const float inv = 1.f / sc.l[size_t(mi)];
    float* oh = out + i * nh * hd + h * hd;
    for (int64_t c = 0; c < hd; ++c) oh[c] = sc.o[size_t(mi * hd + c)] * inv;
  }
}

void AttentionItems(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
                    const float* P, const AttentionShape& s, float* out, size_t b, size_t e) {
  thread_local Scratch sc;
  const int64_t nqb = (T + kBq - 1) / kBq;
  for (size_t item = b; item < e; ++item) {
    const int64_t g = int64_t(item) / nqb, qb = int64_t(item) % nqb;
    AttendItem(q, r, qb * kBq, std::min(T, (qb + 1) * kBq), g, pos0, kv, P, s, out, sc);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace inkling {

HWY_EXPORT(AttentionItems);

float log_position_tau(int64_t pos, double log_floor, double log_alpha) {
  if (log_floor <= 0) return 1.f;
  const float ratio = float(pos + 1) / float(log_floor);
  return 1.f + float(log_alpha) * std::log(std::max(ratio, 1.f));
}

void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out, ThreadPool* pool) {
  // Items: kv head major, query block minor, so a static split gives every thread whole heads
  // (equal causal work) and decode (T = 1) gets one item per kv head.
  const int64_t nqb = (T + 15) / 16;
  const size_t items = size_t(s.n_kv_heads * nqb);
  auto run = [&](size_t b, size_t e) {
    HWY_DYNAMIC_DISPATCH(AttentionItems)(q, r, T, pos0, kv, P, s, out, b, e);
  };
  if (pool)
    pool->parallel_for(items, run);
  else
    run(0, items);
}

}  // namespace inkling
#endif  // HWY_ONCE
