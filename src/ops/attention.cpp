// Attention kernel, flash-style: a work item is one kv head and a block of up to 16 queries, i.e.
// the 16 x G query heads sharing that kv head. Keys are visited in blocks of 64: each block is
// transposed once and scored for every query head of the item (so decode reads each cached key
// once per kv head), the banded bias and mask come from a per-query table, softmax is online
// (running max and sum), and values are accumulated in f32. Scratch is O(block), never [L, S].
// Decode (T <= 4) takes a separate path (DecodeItem): no transpose, split-K over key ranges.
// Cached rows are f32 or bf16 (KvType); bf16 rows are widened in registers as they are read.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#ifndef INKLING_ATTENTION_CONSTANTS
#define INKLING_ATTENTION_CONSTANTS  // once, not per Highway target
namespace inkling {
constexpr int64_t kDecBk = 32;  // decode path: keys per block (blocks at multiples of it)
}  // namespace inkling
#endif

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Cached keys and values as f32 (exact) or bf16 bits (widened in registers).
HWY_INLINE VF LoadKV(DF df, const float* p) {
  return hn::LoadU(df, p);
}
HWY_INLINE VF LoadKV(DF df, const uint16_t* p) {
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
}
HWY_INLINE float KVScalar(const float* p, int64_t i) {
  return p[i];
}
HWY_INLINE float KVScalar(const uint16_t* p, int64_t i) {
  return bf16_to_f32(p[i]);
}

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

// Online softmax over one block of n scores (n a multiple of the lane count, masked keys -inf):
// row becomes p = exp(z - m_new) (0 where masked), the running max *m and sum *l are updated,
// and alpha = exp(m_old - m_new), the factor for the values accumulated so far, is returned.
// Returns -1 (nothing touched) when no key of the block is visible.
HWY_INLINE float SoftmaxBlock(DF df, float* row, int64_t n, float* m, float* l) {
  const int64_t N = int64_t(hn::Lanes(df));
  const VF ninf = hn::Set(df, -INFINITY);
  VF vmax = ninf;
  for (int64_t j = 0; j < n; j += N) vmax = hn::Max(vmax, hn::LoadU(df, row + j));
  const float bmax = hn::GetLane(hn::MaxOfLanes(df, vmax));
  if (bmax == -INFINITY) return -1.f;
  const float m_old = *m, m_new = std::max(m_old, bmax);
  const float alpha = m_old == -INFINITY ? 0.f : std::exp(m_old - m_new);
  const VF vm = hn::Set(df, m_new);
  VF vsum = hn::Zero(df);
  for (int64_t j = 0; j < n; j += N) {
    const VF z = hn::LoadU(df, row + j);
    const VF p = hn::IfThenZeroElse(hn::Eq(z, ninf), hn::Exp(df, hn::Sub(z, vm)));
    hn::StoreU(p, df, row + j);
    vsum = hn::Add(vsum, p);
  }
  *l = *l * alpha + hn::GetLane(hn::SumOfLanes(df, vsum));
  *m = m_new;
  return alpha;
}

// o[c] = o[c] * alpha + sum_{j<nb} p[j] * v_j[c]  (v_j = vrows[j], hd elements).
template <typename KT>
void AccumulateValues(DF df, const float* p, const KT* const* vrows, int64_t nb, int64_t hd,
                      float alpha, float* o) {
  const int64_t N = int64_t(hn::Lanes(df));
  if (hd % (4 * N) != 0) {
    for (int64_t c = 0; c < hd; ++c) o[c] *= alpha;
    for (int64_t j = 0; j < nb; ++j)
      if (p[j] != 0.f)
        for (int64_t c = 0; c < hd; ++c) o[c] += p[j] * KVScalar(vrows[j], c);
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
      const KT* v = vrows[j] + c;
      a0 = hn::MulAdd(b, LoadKV(df, v), a0), a1 = hn::MulAdd(b, LoadKV(df, v + N), a1);
      a2 = hn::MulAdd(b, LoadKV(df, v + 2 * N), a2);
      a3 = hn::MulAdd(b, LoadKV(df, v + 3 * N), a3);
    }
    hn::StoreU(a0, df, o + c), hn::StoreU(a1, df, o + c + N);
    hn::StoreU(a2, df, o + c + 2 * N), hn::StoreU(a3, df, o + c + 3 * N);
  }
}

// One work item: kv head g, queries [i0, i1) of the chunk; cached rows of type KT.
template <typename KT>
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
  const float inv_hd = s.score_scale();

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
  const KT* vrows[kBk];
  for (int64_t s0 = lo; s0 <= t_last; s0 += kBk) {
    const int64_t nb = std::min<int64_t>(kBk, t_last + 1 - s0);
    // kT[c][j] = key(s0 + j)[c]; padded columns are zero.
    for (int64_t j = 0; j < kBk; ++j) {
      if (j < nb) {
        const KT* kr = kv.key<KT>(s0 + j) + g * hd;
        for (int64_t c = 0; c < hd; ++c) sc.kt[size_t(c * kBk + j)] = KVScalar(kr, c);
        vrows[j] = kv.value<KT>(s0 + j) + g * hd;
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
      const float alpha = SoftmaxBlock(df, row, kBk, &sc.m[size_t(mi)], &sc.l[size_t(mi)]);
      if (alpha < 0.f) continue;
      AccumulateValues(df, row, vrows, nb, hd, alpha, sc.o.data() + mi * hd);
    }
  }
  for (int64_t mi = 0; mi < M; ++mi) {
    const int64_t i = i0 + mi / G, h = g * G + mi % G;
    // A sink logit z0 adds exp(z0 - m) to the denominator (m: this row's running max).
    const float sink = s.sinks ? std::exp(s.sinks[i * nh + h] - sc.m[size_t(mi)]) : 0.f;
    const float inv = 1.f / (sc.l[size_t(mi)] + sink);
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
    if (kv.type == KvType::kBF16)
      AttendItem<uint16_t>(q, r, qb * kBq, std::min(T, (qb + 1) * kBq), g, pos0, kv, P, s, out, sc);
    else
      AttendItem<float>(q, r, qb * kBq, std::min(T, (qb + 1) * kBq), g, pos0, kv, P, s, out, sc);
  }
}

// ---- Decode path (T <= kDecodeMaxT queries): no transposes. A work item is a range of kv heads
// and a range of keys (split-K); it walks its keys in blocks of kDecBk cached rows, key-major:
// each cached key row (all kv heads of a position) is read once and in order for the scores of
// every query head, then the block's softmax is updated per head, then each value row is read
// once and in order into every head's accumulator. A key range is thus one sequential stream for
// K and one for V (head-major blocks touched a new page per key and head, which the hardware
// prefetcher could not follow: 1.9x slower at 32k keys). Items leave partials (running max m,
// sum l, unnormalised acc) per query row; attention() merges an item row's key ranges.

// Floats of scratch one thread needs for DecodeItem: scaled queries, bias tables, scores.
int64_t DecodeScratchFloats(int64_t T, const AttentionShape& s) {
  return T * s.n_heads * (s.head_dim + s.rel_extent + kDecBk);
}

template <typename KT>
float Dot(DF df, const float* a, const KT* b, int64_t n) {
  const int64_t N = int64_t(hn::Lanes(df));
  VF a0 = hn::Zero(df), a1 = a0;
  int64_t c = 0;
  for (; c + 2 * N <= n; c += 2 * N) {
    a0 = hn::MulAdd(hn::LoadU(df, a + c), LoadKV(df, b + c), a0);
    a1 = hn::MulAdd(hn::LoadU(df, a + c + N), LoadKV(df, b + c + N), a1);
  }
  for (; c + N <= n; c += N) a0 = hn::MulAdd(hn::LoadU(df, a + c), LoadKV(df, b + c), a0);
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(a0, a1)));
  for (; c < n; ++c) sum += a[c] * KVScalar(b, c);
  return sum;
}

#if HWY_TARGET != HWY_SCALAR
// out[0..3] = the lane sums of a0..a3 (lanes a multiple of 4): two interleave-and-add rounds
// leave each 128-bit block holding [sum a0, sum a1, sum a2, sum a3] of its lanes; the blocks
// are then added. One pass for four sums instead of four horizontal reductions.
HWY_INLINE void Sum4(DF df, VF a0, VF a1, VF a2, VF a3, float* out) {
  const hn::Repartition<double, DF> dd;
  const VF s01 = hn::Add(hn::InterleaveLower(df, a0, a1), hn::InterleaveUpper(df, a0, a1));
  const VF s23 = hn::Add(hn::InterleaveLower(df, a2, a3), hn::InterleaveUpper(df, a2, a3));
  const auto e01 = hn::BitCast(dd, s01), e23 = hn::BitCast(dd, s23);
  const VF t = hn::Add(hn::BitCast(df, hn::InterleaveLower(dd, e01, e23)),
                       hn::BitCast(df, hn::InterleaveUpper(dd, e01, e23)));
  alignas(64) float buf[hn::MaxLanes(df)];
  hn::Store(t, df, buf);
  const int64_t N = int64_t(hn::Lanes(df));
  for (int h = 0; h < 4; ++h) {
    float sum = buf[h];
    for (int64_t b = 4; b < N; b += 4) sum += buf[b + h];
    out[h] = sum;
  }
}
#endif

// Kv heads [g0, g1), keys [k0, k1), all T queries. Query row mi = i * n_heads + h; writes
// part = m[rows], l[rows], acc[rows * hd] (rows = T * n_heads) for the rows of its heads.
// Cached rows of type KT.
template <typename KT>
void DecodeItem(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
                const float* P, const AttentionShape& s, int64_t g0, int64_t g1, int64_t k0,
                int64_t k1, float* part, float* scratch) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  const int64_t nh = s.n_heads, hd = s.head_dim, d = s.d_rel, R = s.rel_extent, W = s.window;
  const int64_t G = s.n_heads / s.n_kv_heads, rows = T * nh;
  float *pm = part, *pl = part + rows, *acc = part + 2 * rows;
  float *sq = scratch, *sL = sq + rows * hd, *sz = sL + rows * R;  // sz: [rows][kDecBk] scores
  // The bias band of query t is [t - R + 1, t]; only items reaching the band build the table.
  const bool bias = k1 - 1 >= pos0 - R + 1;
  const float inv_hd = s.score_scale();
  const int64_t h0 = g0 * G, h1 = g1 * G;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t mi = i * nh + h, t = pos0 + i;
      pm[mi] = -INFINITY, pl[mi] = 0.f;
      std::fill(acc + mi * hd, acc + (mi + 1) * hd, 0.f);
      const float tau = log_position_tau(t, s.log_floor, s.log_alpha);
      const float* qh = q + mi * hd;
      for (int64_t c = 0; c < hd; ++c) sq[mi * hd + c] = qh[c] * tau * inv_hd;
      if (!bias) continue;
      const float* rh = r + mi * d;
      float* L = sL + mi * R;
      std::fill(L, L + R, 0.f);
      for (int64_t m = 0; m < d; ++m) {  // L[delta] = tau * sum_m r[m] P[m, delta]
        const float rm = rh[m] * tau;
        const VF vr = hn::Set(df, rm);
        const float* pr = P + m * R;
        int64_t k = 0;
        for (; k + N <= R; k += N)
          hn::StoreU(hn::MulAdd(vr, hn::LoadU(df, pr + k), hn::LoadU(df, L + k)), df, L + k);
        for (; k < R; ++k) L[k] += rm * pr[k];
      }
    }
  const bool vec = hd % N == 0;
  for (int64_t s0 = k0; s0 < k1; s0 += kDecBk) {
    const int64_t nb = std::min<int64_t>(kDecBk, k1 - s0);
    // Scores, key-major: each cached key row (all kv heads of one position) is read once, in
    // order, so a key range is one sequential stream (head-major blocks touched a new page per
    // key and head, which the hardware prefetcher could not follow).
    for (int64_t j = 0; j < nb; ++j) {
      const KT* krow = kv.key<KT>(s0 + j);
      for (int64_t i = 0; i < T; ++i) {
        int64_t h = h0;
#if HWY_TARGET != HWY_SCALAR
        if (G % 4 == 0 && vec && N % 4 == 0)
          for (; h < h1; h += 4) {  // 4 heads of one kv head: 4 chains, one joint reduction
            const int64_t mi = i * nh + h;
            const KT* k = krow + (h / G) * hd;
            const float* qh = sq + mi * hd;
            VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t c = 0; c < hd; c += N) {
              const VF kc = LoadKV(df, k + c);
              a0 = hn::MulAdd(hn::LoadU(df, qh + c), kc, a0);
              a1 = hn::MulAdd(hn::LoadU(df, qh + hd + c), kc, a1);
              a2 = hn::MulAdd(hn::LoadU(df, qh + 2 * hd + c), kc, a2);
              a3 = hn::MulAdd(hn::LoadU(df, qh + 3 * hd + c), kc, a3);
            }
            float out4[4];
            Sum4(df, a0, a1, a2, a3, out4);
            for (int u = 0; u < 4; ++u) sz[(mi + u) * kDecBk + j] = out4[u];
          }
#endif
        for (; h < h1; ++h) {
          const int64_t mi = i * nh + h;
          sz[mi * kDecBk + j] = Dot(df, sq + mi * hd, krow + (h / G) * hd, hd);
        }
      }
    }
    // Bias, mask and the online softmax per query row; acc is rescaled by alpha here.
    for (int64_t i = 0; i < T; ++i) {
      const int64_t t = pos0 + i, dmin = t - (s0 + nb - 1), dmax = t - s0;
      const bool plain = dmin >= R && (W <= 0 || dmax < W);
      for (int64_t h = h0; h < h1; ++h) {
        const int64_t mi = i * nh + h;
        float* row = sz + mi * kDecBk;
        if (!plain)
          for (int64_t j = 0; j < nb; ++j) {
            const int64_t dist = dmax - j;
            if (dist < 0 || (W > 0 && dist >= W))
              row[j] = -INFINITY;
            else if (dist < R)
              row[j] += sL[mi * R + dist];
          }
        for (int64_t j = nb; j < kDecBk; ++j) row[j] = -INFINITY;
        const float alpha = SoftmaxBlock(df, row, kDecBk, &pm[mi], &pl[mi]);
        if (alpha < 0.f) {  // nothing visible in this block: p = 0 for every key
          std::fill(row, row + kDecBk, 0.f);
          continue;
        }
        float* o = acc + mi * hd;
        if (alpha != 1.f)
          for (int64_t c = 0; c < hd; ++c) o[c] *= alpha;
      }
    }
    // Values, key-major like the keys: acc[mi] += p[mi][j] * v_j for every visible key.
    for (int64_t j = 0; j < nb; ++j) {
      const KT* vrow = kv.value<KT>(s0 + j);
      for (int64_t i = 0; i < T; ++i)
        for (int64_t h = h0; h < h1; ++h) {
          const int64_t mi = i * nh + h;
          const float p = sz[mi * kDecBk + j];
          if (p == 0.f) continue;  // masked key (its value row may be stale)
          const KT* v = vrow + (h / G) * hd;
          float* o = acc + mi * hd;
          if (vec) {
            const VF b = hn::Set(df, p);
            for (int64_t c = 0; c < hd; c += N)
              hn::StoreU(hn::MulAdd(b, LoadKV(df, v + c), hn::LoadU(df, o + c)), df, o + c);
          } else {
            for (int64_t c = 0; c < hd; ++c) o[c] += p * KVScalar(v, c);
          }
        }
    }
  }
}

// Items [b, e) of hsplits x ksplits (key split minor): item (hs, ks) covers kv heads
// [nkv * hs / hsplits, nkv * (hs + 1) / hsplits) and keys [lo + n * ks / ksplits,
// lo + n * (ks + 1) / ksplits) of the n = t_last + 1 - lo attended keys; its partials go to
// parts + ks * part_size. `scratch` holds DecodeScratchFloats(T, s) floats.
// Items of (kv head range, key split); key split ks covers the absolute key range
// [max(lo, (ks0 + ks) * split), min(pos0 + T, (ks0 + ks + 1) * split)), lo and split multiples of
// kDecBk.
void DecodeItems(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
                 const float* P, const AttentionShape& s, int64_t lo, int64_t split, int64_t ks0,
                 int64_t hsplits, int64_t ksplits, float* parts, float* scratch, size_t b,
                 size_t e) {
  const int64_t nkv = s.n_kv_heads;
  const int64_t part_size = T * s.n_heads * (2 + s.head_dim);
  for (size_t item = b; item < e; ++item) {
    const int64_t hs = int64_t(item) / ksplits, ks = int64_t(item) % ksplits;
    const int64_t g0 = nkv * hs / hsplits, g1 = nkv * (hs + 1) / hsplits;
    const int64_t k0 = std::max(lo, (ks0 + ks) * split);
    const int64_t k1 = std::min(pos0 + T, (ks0 + ks + 1) * split);
    float* part = parts + ks * part_size;
    if (kv.type == KvType::kBF16)
      DecodeItem<uint16_t>(q, r, T, pos0, kv, P, s, g0, g1, k0, k1, part, scratch);
    else
      DecodeItem<float>(q, r, T, pos0, kv, P, s, g0, g1, k0, k1, part, scratch);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace inkling {

// Chunks of up to this many queries take the decode path: decode, speculative verification and
// the rows of batched decode all do, so a query's result does not depend on the chunk it is in.
constexpr int64_t kDecodeMaxT = 16;
// Keys per split-K range: ranges are fixed absolute key intervals (not a share of the context),
// and key blocks are aligned to absolute multiples of kDecBk, so every query sees the same blocks
// and splits whether it runs alone or with later queries of its chunk (whose extra keys it masks:
// a wholly masked block or range leaves its softmax state untouched). That makes the decode path
// row-count invariant, bitwise (ops/formats.h).
constexpr int64_t kSplitKeys = 512;

HWY_EXPORT(AttentionItems);
HWY_EXPORT(DecodeItems);
HWY_EXPORT(DecodeScratchFloats);

float log_position_tau(int64_t pos, double log_floor, double log_alpha) {
  if (log_floor <= 0) return 1.f;
  const float ratio = float(pos + 1) / float(log_floor);
  return 1.f + float(log_alpha) * std::log(std::max(ratio, 1.f));
}

namespace {

// Decode: items of (kv head range, key range), then the key ranges' partials merged per row.
void attention_decode(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
                      const float* P, const AttentionShape& s, float* out, ThreadPool* pool) {
  const int64_t hd = s.head_dim, nh = s.n_heads, nkv = s.n_kv_heads, rows = T * nh;
  const int64_t lo =
      (s.window > 0 ? std::max<int64_t>(0, pos0 - s.window + 1) : 0) / kDecBk * kDecBk;
  // Long contexts: many key ranges, spread over the threads with every kv head (pages streamed
  // in order). Short ones: kv heads split over the threads.
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t ks0 = lo / kSplitKeys, ksplits = (pos0 + T - 1) / kSplitKeys - ks0 + 1;
  const int64_t hsplits = std::clamp<int64_t>(threads / ksplits, 1, nkv);
  const int64_t part_size = rows * (2 + hd), items = hsplits * ksplits;
  const int64_t units = std::min(threads, items);
  const int64_t scratch = HWY_DYNAMIC_DISPATCH(DecodeScratchFloats)(T, s);
  // Partials per key range and one scratch area per unit of work, all owned by the calling
  // thread: workers never touch the heap.
  thread_local std::vector<float> buf;
  const size_t need = size_t(ksplits * part_size + units * scratch);
  if (buf.size() < need) buf.resize(need);
  float *pp = buf.data(), *sp = pp + ksplits * part_size;
  // Units: static contiguous ranges of items, one per thread, each with its own scratch.
  auto run = [&](size_t ub, size_t ue) {
    for (size_t u = ub; u < ue; ++u) HWY_DYNAMIC_DISPATCH(DecodeItems)
    (q, r, T, pos0, kv, P, s, lo, kSplitKeys, ks0, hsplits, ksplits, pp, sp + int64_t(u) * scratch,
     size_t(items * int64_t(u) / units), size_t(items * int64_t(u + 1) / units));
  };
  if (pool)
    pool->parallel_for(size_t(units), run);
  else
    run(0, size_t(units));
  for (int64_t mi = 0; mi < rows; ++mi) {
    float m = -INFINITY;
    for (int64_t ks = 0; ks < ksplits; ++ks) m = std::max(m, pp[ks * part_size + mi]);
    float l = 0;
    float* oh = out + mi * hd;
    std::fill(oh, oh + hd, 0.f);
    for (int64_t ks = 0; ks < ksplits; ++ks) {
      const float* part = pp + ks * part_size;
      if (part[mi] == -INFINITY) continue;
      const float w = std::exp(part[mi] - m);
      l += part[rows + mi] * w;
      const float* a = part + 2 * rows + mi * hd;
      for (int64_t c = 0; c < hd; ++c) oh[c] += a[c] * w;
    }
    const float inv = 1.f / (l + (s.sinks ? std::exp(s.sinks[mi] - m) : 0.f));
    for (int64_t c = 0; c < hd; ++c) oh[c] *= inv;
  }
}

}  // namespace

void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out, ThreadPool* pool) {
  if (T <= kDecodeMaxT) return attention_decode(q, r, T, pos0, kv, P, s, out, pool);
  // Items: kv head major, query block minor, so a static split gives every thread whole heads
  // (equal causal work).
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
