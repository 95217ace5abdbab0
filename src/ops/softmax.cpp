// softmax_rows: three passes per row (scaled max, exp and sum, normalise), full vectors then a
// partial one for the tail; softmax_rows_scalar: the same passes in scalar code.
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/softmax.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void SoftmaxRows(float* x, int64_t rows, int64_t n, float scale) {
  const hn::ScalableTag<float> df;
  const int64_t N = int64_t(hn::Lanes(df));
  const auto vs = hn::Set(df, scale);
  for (int64_t i = 0; i < rows; ++i) {
    float* row = x + i * n;
    auto vmax = hn::Set(df, -INFINITY);
    int64_t j = 0;
    for (; j + N <= n; j += N) {
      const auto z = hn::Mul(hn::LoadU(df, row + j), vs);
      hn::StoreU(z, df, row + j);
      vmax = hn::Max(vmax, z);
    }
    float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
    for (int64_t t = j; t < n; ++t) mx = std::max(mx, row[t] *= scale);
    const auto vm = hn::Set(df, mx);
    auto vsum = hn::Zero(df);
    for (j = 0; j + N <= n; j += N) {
      const auto p = hn::Exp(df, hn::Sub(hn::LoadU(df, row + j), vm));
      hn::StoreU(p, df, row + j);
      vsum = hn::Add(vsum, p);
    }
    double sum = hn::GetLane(hn::SumOfLanes(df, vsum));
    for (int64_t t = j; t < n; ++t) sum += row[t] = std::exp(row[t] - mx);
    const float inv = float(1.0 / sum);
    const auto vi = hn::Set(df, inv);
    for (j = 0; j + N <= n; j += N) hn::StoreU(hn::Mul(hn::LoadU(df, row + j), vi), df, row + j);
    for (int64_t t = j; t < n; ++t) row[t] *= inv;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace inkling {

HWY_EXPORT(SoftmaxRows);

void softmax_rows(float* x, int64_t rows, int64_t n, float scale) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x, rows, n, scale);
}

void softmax_rows_scalar(float* x, int64_t rows, int64_t n, float scale) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = x + i * n;
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j] *= scale);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - mx);
    const float inv = float(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  }
}

}  // namespace inkling
#endif  // HWY_ONCE
