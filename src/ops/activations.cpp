// Inkling 2's tanh- and sigmoid-based elementwise functions: full vectors through Highway's Tanh
// and Exp, the tail through the scalar twin's expression (std::tanh / std::exp), in the same order
// of operations as the twins below.
#include "ops/activations.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/activations.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#ifndef INKLING_OPS_ACTIVATIONS_SCALAR
#define INKLING_OPS_ACTIVATIONS_SCALAR
namespace inkling {
namespace {
inline float sigmoid1(float g) {
  return 1.f / (1.f + std::exp(-g));
}
inline float softcap1(float x, float cap) {
  return std::tanh(x / cap) * cap;
}
inline float swiglu1(float g, float u, float gc, float uc, float scale) {
  return std::tanh(g / gc) * gc * sigmoid1(g) * (std::tanh(u / uc) * uc) * scale;
}
inline float mix1(float f, float a, float h, float m) {
  return (1.f - std::tanh(f)) * h + std::tanh(a) * m;
}
}  // namespace
}  // namespace inkling
#endif

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// Highway's Exp is defined up to +104; e^88.8 is already past FLT_MAX, so larger arguments are
// clamped there, which keeps std::exp's +inf (and so a sigmoid of exactly 0).
inline hn::Vec<DF> Sigmoid(DF d, hn::Vec<DF> g) {
  const auto one = hn::Set(d, 1.f);
  const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 89.f)));
  return hn::Div(one, hn::Add(one, e));
}

void Softcap(float* x, int64_t n, float cap) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto vc = hn::Set(d, cap);
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::Mul(hn::Tanh(d, hn::Div(hn::LoadU(d, x + i), vc)), vc), d, x + i);
  for (; i < n; ++i) x[i] = softcap1(x[i], cap);
}

void SoftcappedSwiglu(const float* row, int64_t W, bool interleaved, float gc, float uc,
                      float scale, float* out) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto vgc = hn::Set(d, gc), vuc = hn::Set(d, uc), vs = hn::Set(d, scale);
  int64_t i = 0;
  for (; i + N <= W; i += N) {
    hn::Vec<DF> g, u;
    if (interleaved) {
      hn::LoadInterleaved2(d, row + 2 * i, g, u);
    } else {
      g = hn::LoadU(d, row + i);
      u = hn::LoadU(d, row + W + i);
    }
    const auto cg = hn::Mul(hn::Tanh(d, hn::Div(g, vgc)), vgc);
    const auto cu = hn::Mul(hn::Tanh(d, hn::Div(u, vuc)), vuc);
    hn::StoreU(hn::Mul(hn::Mul(hn::Mul(cg, Sigmoid(d, g)), cu), vs), d, out + i);
  }
  for (; i < W; ++i) {
    const float g = interleaved ? row[2 * i] : row[i],
                u = interleaved ? row[2 * i + 1] : row[W + i];
    out[i] = swiglu1(g, u, gc, uc, scale);
  }
}

void SigmoidGate(float* x, const float* g, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::Mul(hn::LoadU(d, x + i), Sigmoid(d, hn::LoadU(d, g + i))), d, x + i);
  for (; i < n; ++i) x[i] *= sigmoid1(g[i]);
}

void TanhGateMix(const float* f, const float* a, const float* h, const float* m, int64_t n,
                 float* out) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto one = hn::Set(d, 1.f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto keep = hn::Mul(hn::Sub(one, hn::Tanh(d, hn::LoadU(d, f + i))), hn::LoadU(d, h + i));
    const auto take = hn::Mul(hn::Tanh(d, hn::LoadU(d, a + i)), hn::LoadU(d, m + i));
    hn::StoreU(hn::Add(keep, take), d, out + i);
  }
  for (; i < n; ++i) out[i] = mix1(f[i], a[i], h[i], m[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace inkling {

HWY_EXPORT(Softcap);
HWY_EXPORT(SoftcappedSwiglu);
HWY_EXPORT(SigmoidGate);
HWY_EXPORT(TanhGateMix);

void softcap(float* x, int64_t n, float cap) {
  HWY_DYNAMIC_DISPATCH(Softcap)(x, n, cap);
}
void softcap_scalar(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = softcap1(x[i], cap);
}

void softcapped_swiglu(const float* row, int64_t W, bool interleaved, float gc, float uc,
                       float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(SoftcappedSwiglu)(row, W, interleaved, gc, uc, scale, out);
}
void softcapped_swiglu_scalar(const float* row, int64_t W, bool interleaved, float gc, float uc,
                              float scale, float* out) {
  for (int64_t i = 0; i < W; ++i) {
    const float g = interleaved ? row[2 * i] : row[i],
                u = interleaved ? row[2 * i + 1] : row[W + i];
    out[i] = swiglu1(g, u, gc, uc, scale);
  }
}

void sigmoid_gate(float* x, const float* g, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SigmoidGate)(x, g, n);
}
void sigmoid_gate_scalar(float* x, const float* g, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= sigmoid1(g[i]);
}

void tanh_gate_mix(const float* f, const float* a, const float* h, const float* m, int64_t n,
                   float* out) {
  HWY_DYNAMIC_DISPATCH(TanhGateMix)(f, a, h, m, n, out);
}
void tanh_gate_mix_scalar(const float* f, const float* a, const float* h, const float* m, int64_t n,
                          float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = mix1(f[i], a[i], h[i], m[i]);
}

}  // namespace inkling
#endif  // HWY_ONCE
