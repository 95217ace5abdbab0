// The weighted scale/bias search of one affine group and the row quantizer built on it.
#include "quantize/weighted_affine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "inkling/status.h"
#include "ops/affine_quantize.h"

namespace inkling {

namespace {

// v as the reader sees it after store_float(t, v): rounded to t, then widened.
float rounded(DType t, float v) {
  switch (t) {
    case DType::BF16:
      return bf16_to_f32(f32_to_bf16(v));
    case DType::F16:
      return f16_to_f32(f32_to_f16(v));
    default:
      return v;
  }
}

constexpr int kMaxGroup = 128;

// Round to nearest even without a libm call, for |x| < 2^22 (codes are at most 255; larger
// values are clamped right after, and any rounding of them clamps the same way).
inline float round_even(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (x + kMagic) - kMagic;
}

// Weighted least squares of w ~ s * q + b over the group: false when the codes are all equal.
bool refit(const float* w, const float* wt, const uint8_t* q, int n, float* s, float* b) {
  double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
  for (int j = 0; j < n; ++j) {
    const double a = wt[j], l = q[j], x = w[j];
    sw += a;
    sl += a * l;
    sll += a * l * l;
    sx += a * x;
    slx += a * l * x;
  }
  const double d = sw * sll - sl * sl;
  if (!(d > 0)) return false;
  *s = float((sw * slx - sl * sx) / d);
  *b = float((sll * sx - sl * slx) / d);
  return std::isfinite(*s) && std::isfinite(*b) && *s != 0.0f;
}

// The search's scorer: affine_group_error() in f32 with a reciprocal instead of the division
// (vectorisable; a code may differ from the division's on a tie). Codes go to q.
float score(const float* w, const float* wt, int n, float nmax, DType t, float s, float b,
            uint8_t* q) {
  const float sr = rounded(t, s), br = rounded(t, b);
  if (sr == 0.0f || !std::isfinite(sr) || !std::isfinite(br))
    return std::numeric_limits<float>::infinity();
  const float inv = 1.0f / sr;
  float err = 0;
  for (int j = 0; j < n; ++j) {
    float c = round_even((w[j] - br) * inv);
    c = std::min(std::max(c, 0.0f), nmax);
    q[j] = uint8_t(c);
    const float e = w[j] - (sr * c + br);
    err += wt[j] * e * e;
  }
  return err;
}

// refit() and score() of up to kLanes candidate ranges at once (their chains interleaved, so a
// group's search is throughput- instead of latency-bound): every lane's arithmetic, order
// included, is the scalar functions', so the search picks bitwise what they pick.
constexpr int kLanes = 4;

struct Candidates {
  int m = 0;  // lanes in use
  float l[kLanes], h[kLanes];
  float s[kLanes], b[kLanes], err[kLanes];
};

// The codes of each lane's range (as floats: whole numbers 0..255), the least-squares (s, b) of
// those codes (refit(): sw and sx do not depend on the codes and come in computed once), then
// their weighted error (score()).
void evaluate(const float* w, const float* wt, int n, float nmax, DType t, double sw, double sx,
              Candidates& c) {
  float iscale[kLanes], lo[kLanes];
  for (int k = 0; k < kLanes; ++k) {  // unused lanes: codes of a harmless range
    lo[k] = k < c.m ? c.l[k] : 0.0f;
    iscale[k] = k < c.m ? nmax / (c.h[k] - c.l[k]) : 0.0f;
  }
  double sl[kLanes] = {}, sll[kLanes] = {}, slx[kLanes] = {};
  for (int j = 0; j < n; ++j) {
    const double a = wt[j], x = w[j];
    float q[kLanes];
    for (int k = 0; k < kLanes; ++k) {
      // std::max(r, 0) and std::min(q, nmax) spelled out: the same values, and GCC vectorises
      // these across the lanes where it kept the std:: calls as compare-and-branch.
      const float r = round_even(iscale[k] * (w[j] - lo[k]));
      q[k] = r < 0.0f ? 0.0f : r;
      q[k] = nmax < q[k] ? nmax : q[k];
    }
    for (int k = 0; k < kLanes; ++k) {
      const double l = q[k];
      sl[k] += a * l;
      sll[k] += a * l * l;
      slx[k] += a * l * x;
    }
  }
  float sr[kLanes], br[kLanes], inv[kLanes];
  bool ok[kLanes];
  for (int k = 0; k < kLanes; ++k) {
    ok[k] = false;
    sr[k] = br[k] = inv[k] = 0.0f;
    if (k >= c.m) continue;
    const double d = sw * sll[k] - sl[k] * sl[k];
    if (!(d > 0)) continue;
    c.s[k] = float((sw * slx[k] - sl[k] * sx) / d);
    c.b[k] = float((sll[k] * sx - sl[k] * slx[k]) / d);
    if (!(std::isfinite(c.s[k]) && std::isfinite(c.b[k]) && c.s[k] != 0.0f)) continue;
    sr[k] = rounded(t, c.s[k]), br[k] = rounded(t, c.b[k]);
    if (sr[k] == 0.0f || !std::isfinite(sr[k]) || !std::isfinite(br[k])) continue;
    inv[k] = 1.0f / sr[k];
    ok[k] = true;
  }
  float err[kLanes] = {};
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < kLanes; ++k) {
      float q = round_even((w[j] - br[k]) * inv[k]);
      q = std::min(std::max(q, 0.0f), nmax);
      const float e = w[j] - (sr[k] * q + br[k]);
      err[k] += wt[j] * e * e;
    }
  for (int k = 0; k < c.m; ++k)
    c.err[k] = ok[k] ? err[k] : std::numeric_limits<float>::quiet_NaN();  // NaN: never kept
}

// evaluate()'s scalar twin: one candidate after the other through the codes, refit() and score().
void evaluate_scalar(const float* w, const float* wt, int n, float nmax, DType t, double, double,
                     Candidates& c) {
  uint8_t qc[kMaxGroup], q[kMaxGroup];
  for (int k = 0; k < c.m; ++k) {
    const float iscale = nmax / (c.h[k] - c.l[k]);
    for (int j = 0; j < n; ++j)
      qc[j] = uint8_t(std::min(std::max(round_even(iscale * (w[j] - c.l[k])), 0.0f), nmax));
    c.err[k] = std::numeric_limits<float>::quiet_NaN();
    if (!refit(w, wt, qc, n, &c.s[k], &c.b[k])) continue;
    c.err[k] = score(w, wt, n, nmax, t, c.s[k], c.b[k], q);
  }
}

using Evaluator = void (*)(const float*, const float*, int, float, DType, double, double,
                           Candidates&);

}  // namespace

double affine_group_error(const float* w, const float* imp, int n, int bits, float s, float b,
                          DType scale_dtype, uint8_t* q) {
  const float sr = rounded(scale_dtype, s), br = rounded(scale_dtype, b);
  if (sr == 0.0f || !std::isfinite(sr) || !std::isfinite(br))
    return std::numeric_limits<double>::infinity();
  double err = 0;
  for (int j = 0; j < n; ++j) {
    const uint8_t c = affine_code(w[j], sr, br, bits);
    if (q) q[j] = c;
    const float d = sr * float(c) + br;  // two roundings, as the reader computes
    const double e = double(w[j]) - double(d);
    err += (imp ? double(imp[j]) : 1.0) * e * e;
  }
  return err;
}

namespace {

bool group_search(const float* w, const float* imp, int n, int bits, DType scale_dtype,
                  float* s_out, float* b_out, Evaluator evaluate_candidates) {
  float s = 0, b = 0;
  if (n > kMaxGroup || !affine_group_mlx(w, n, bits, &s, &b)) return false;
  // Weights: the importance, or 1 where there is none (a group nobody weighs counts evenly).
  float wt[kMaxGroup];
  double wsum = 0;
  for (int j = 0; j < n; ++j) wsum += wt[j] = imp ? std::max(imp[j], 0.0f) : 1.0f;
  if (!(wsum > 0)) std::fill(wt, wt + n, 1.0f);
  uint8_t q[kMaxGroup];
  const float nmax = float((1 << bits) - 1);
  const float mlx_s = s, mlx_b = b;
  float best = score(w, wt, n, nmax, scale_dtype, s, b, q);
  float bs = s, bb = b;
  // A refit from the codes of (s, b), kept while it lowers the error (at most eight times).
  auto polish = [&](float s0, float b0) {
    float e = score(w, wt, n, nmax, scale_dtype, s0, b0, q);
    if (e < best) best = e, bs = s0, bb = b0;
    for (int it = 0; it < 8; ++it) {
      float s1 = 0, b1 = 0;
      if (!refit(w, wt, q, n, &s1, &b1)) return;
      e = score(w, wt, n, nmax, scale_dtype, s1, b1, q);
      if (!(e < best)) return;
      best = e, bs = s1, bb = b1;
    }
  };
  polish(s, b);
  const float lo = *std::min_element(w, w + n), hi = *std::max_element(w, w + n);
  if (hi > lo) {
    // Clipped ranges [lo + a * step, hi - c * step] (either end clipped by up to kClip of the
    // range, independently), codes nearest on that grid, then the least-squares (s, b) of those
    // codes; the best is polished; then the same on a grid four times finer around its range.
    // Fewer ranges at wider codes, where clipping matters less.
    const int steps = bits <= 3 ? 8 : bits <= 5 ? 6 : 4;
    constexpr float kClip = 0.6f;
    float step = (hi - lo) * kClip / float(steps);
    float best_l = lo, best_h = hi, l0 = lo, h0 = hi;
    int a0 = 0, a1 = steps;
    // refit()'s sums that do not depend on the codes.
    double sw = 0, sx = 0;
    for (int j = 0; j < n; ++j) {
      const double a = wt[j], x = w[j];
      sw += a;
      sx += a * x;
    }
    Candidates cand;
    // The candidates in order, kLanes at a time; the first strictly better one wins a tie, as in
    // one loop over them.
    auto flush = [&] {
      evaluate_candidates(w, wt, n, nmax, scale_dtype, sw, sx, cand);
      for (int k = 0; k < cand.m; ++k)
        if (cand.err[k] < best)
          best = cand.err[k], bs = cand.s[k], bb = cand.b[k], best_l = cand.l[k],
          best_h = cand.h[k];
      cand.m = 0;
    };
    for (int pass = 0; pass < 2; ++pass) {
      for (int a = a0; a <= a1; ++a)
        for (int c = a0; c <= a1; ++c) {
          const float l = l0 + float(a) * step, h = h0 - float(c) * step;
          if (!(h > l)) continue;
          cand.l[cand.m] = l, cand.h[cand.m] = h;
          if (++cand.m == kLanes) flush();
        }
      if (cand.m) flush();
      polish(bs, bb);  // only the best candidate of each pass is polished
      l0 = best_l, h0 = best_h, step *= 0.25f, a0 = -3, a1 = 3;
    }
  }
  // The exact error decides against mx.quantize's own choice, so it is never worse.
  if (affine_group_error(w, wt, n, bits, mlx_s, mlx_b, scale_dtype, nullptr) <
      affine_group_error(w, wt, n, bits, bs, bb, scale_dtype, nullptr))
    bs = mlx_s, bb = mlx_b;
  *s_out = bs;
  *b_out = bb;
  return true;
}

}  // namespace

bool affine_group_search(const float* w, const float* imp, int n, int bits, DType scale_dtype,
                         float* s_out, float* b_out) {
  return group_search(w, imp, n, bits, scale_dtype, s_out, b_out, evaluate);
}

bool affine_group_search_scalar(const float* w, const float* imp, int n, int bits,
                                DType scale_dtype, float* s_out, float* b_out) {
  return group_search(w, imp, n, bits, scale_dtype, s_out, b_out, evaluate_scalar);
}

bool affine_quantize_row_weighted(const float* w, const float* imp, int64_t cols, int bits,
                                  int group, DType scale_dtype, uint8_t* codes, uint8_t* scales,
                                  uint8_t* biases) {
  const size_t ssz = dtype_size(scale_dtype);
  INK_CHECK(affine_group_supported(group));
  uint8_t q[kMaxGroup];  // one group's codes (whole bytes once packed: groups are 32/64/128)
  for (int64_t g0 = 0, gi = 0; g0 < cols; g0 += group, ++gi) {
    float s = 0, b = 0;
    if (!affine_group_search(w + g0, imp ? imp + g0 : nullptr, group, bits, scale_dtype, &s, &b))
      return false;
    const float sr = rounded(scale_dtype, s), br = rounded(scale_dtype, b);
    for (int j = 0; j < group; ++j) q[j] = affine_code(w[g0 + j], sr, br, bits);
    affine_pack_codes(q, group, bits, codes + g0 * bits / 8);
    store_float(scale_dtype, s, scales + size_t(gi) * ssz);
    store_float(scale_dtype, b, biases + size_t(gi) * ssz);
  }
  return true;
}

}  // namespace inkling
