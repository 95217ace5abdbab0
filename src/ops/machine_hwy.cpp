// Bandwidth and FMA-peak probes for `inkling bench`, compiled for every Highway target and
// dispatched at run time like the kernels they are compared against.
#include "ops/machine_hwy.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/machine_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sums n floats with 8 independent accumulators (enough loads in flight to saturate memory).
float SumRead(const float* p, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  size_t i = 0;
  for (; i + 8 * N <= n; i += 8 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
    a1 = hn::Add(a1, hn::LoadU(d, p + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * N));
    a4 = hn::Add(a4, hn::LoadU(d, p + i + 4 * N));
    a5 = hn::Add(a5, hn::LoadU(d, p + i + 5 * N));
    a6 = hn::Add(a6, hn::LoadU(d, p + i + 6 * N));
    a7 = hn::Add(a7, hn::LoadU(d, p + i + 7 * N));
  }
  a0 =
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
  float s = hn::GetLane(hn::SumOfLanes(d, a0));
  for (; i < n; ++i) s += p[i];
  return s;
}

// `iters` rounds of 12 independent FMA chains (covers FMA latency x ports on AVX2 and AVX-512
// while fitting 16 registers). Returns FLOPs done; `sink` keeps the result alive.
double FmaLoop(int64_t iters, float* sink) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f), a3 = hn::Set(d, 1.3f);
  auto a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f), a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f);
  auto a8 = hn::Set(d, 1.8f), a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.f), a11 = hn::Set(d, 2.1f);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = hn::MulAdd(a0, m, b);
    a1 = hn::MulAdd(a1, m, b);
    a2 = hn::MulAdd(a2, m, b);
    a3 = hn::MulAdd(a3, m, b);
    a4 = hn::MulAdd(a4, m, b);
    a5 = hn::MulAdd(a5, m, b);
    a6 = hn::MulAdd(a6, m, b);
    a7 = hn::MulAdd(a7, m, b);
    a8 = hn::MulAdd(a8, m, b);
    a9 = hn::MulAdd(a9, m, b);
    a10 = hn::MulAdd(a10, m, b);
    a11 = hn::MulAdd(a11, m, b);
  }
  auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), a6));
  s = hn::Add(s, hn::Add(hn::Add(a7, a8), hn::Add(hn::Add(a9, a10), a11)));
  *sink = hn::GetLane(hn::SumOfLanes(d, s));
  return 2.0 * 12.0 * double(hn::Lanes(d)) * double(iters);
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace inkling {

HWY_EXPORT(SumRead);
HWY_EXPORT(FmaLoop);
HWY_EXPORT(TargetName);

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

ReadProbe::ReadProbe(ThreadPool& pool, size_t bytes)
    : pool_(pool),
      buf_(new float[bytes / sizeof(float)]),  // uninitialised: pages are first touched below
      n_(bytes / sizeof(float)) {
  const size_t n = n_, nt = size_t(pool.size());
  float* buf = buf_.get();
  pool.parallel_for(nt, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) std::fill(buf + n * t / nt, buf + n * (t + 1) / nt, 1.f);
  });
}

double ReadProbe::measure(int reps) {
  ThreadPool& pool = pool_;
  const size_t n = n_, nt = size_t(pool.size());
  const float* buf = buf_.get();
  std::vector<float> sums(nt);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(nt, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; ++t)
        sums[t] = HWY_DYNAMIC_DISPATCH(SumRead)(buf + n * t / nt, n * (t + 1) / nt - n * t / nt);
    });
    best = std::max(best, double(n * sizeof(float)) / seconds_since(t0) / 1e9);
  }
  volatile float keep = sums[0];
  (void)keep;
  return best;
}

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int reps) {
  return ReadProbe(pool, bytes).measure(reps);
}

double measure_fma_gflops(ThreadPool& pool, int reps) {
  const size_t nt = size_t(pool.size());
  std::vector<float> sink(nt);
  std::vector<double> flops(nt);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(nt, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; ++t) flops[t] = HWY_DYNAMIC_DISPATCH(FmaLoop)(20000000, &sink[t]);
    });
    const double s = seconds_since(t0);
    double f = 0;
    for (double x : flops) f += x;
    best = std::max(best, f / s / 1e9);
  }
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

std::string simd_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace inkling
#endif  // HWY_ONCE
