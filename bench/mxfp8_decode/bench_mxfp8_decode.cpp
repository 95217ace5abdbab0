// One-token decode through matmul() on 2 threads for the three formats of Inkling 2's experts as
// released and as a bf16 copy: MXFP8 (E4M3 + E8M0 per 32), NVFP4 (E2M1 + E4M3 per 16) and bf16,
// each a 32768 x 4096 matrix (far beyond the last-level cache: what decode sees). Each round
// reads the memory probe first, then runs the formats in rotating order; reported per format:
// the ratio of its GB/s of weights read (values + scales) to the probe's, median and range, and
// the median GB/s. A ratio near 1 is memory-bound; well below 1, compute-bound.
//
//   bench_mxfp8_decode [rounds=11] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/thread_pool.h"
#include "ops/formats.h"
#include "ops/machine_hwy.h"
#include "ops/matmul.h"

using namespace inkling;

namespace {

constexpr int64_t kRows = 32768, kCols = 4096;

struct Mat {
  std::string name;
  std::vector<uint8_t> codes, scales;
  MatView v;
  double bytes() const { return double(codes.size() + scales.size()); }
};

Mat make(const std::string& fmt) {
  Mat m;
  m.name = fmt;
  std::mt19937 rng(7);
  MatView& v = m.v;
  v.rows = kRows, v.cols = kCols;
  if (fmt == "bf16") {
    m.codes.resize(size_t(kRows * kCols * 2));
    for (size_t i = 0; i < m.codes.size(); i += 2) {
      const uint16_t h = f32_to_bf16(std::normal_distribution<float>(0.f, 0.02f)(rng));
      m.codes[i] = uint8_t(h), m.codes[i + 1] = uint8_t(h >> 8);
    }
    v.dtype = DType::BF16, v.row_stride = kCols;
  } else if (fmt == "mxfp8") {
    m.codes.resize(size_t(kRows * kCols));
    for (auto& b : m.codes) b = uint8_t(rng() % 0x7f) | uint8_t(rng() & 0x80);
    m.scales.assign(size_t(kRows * kCols / 32), uint8_t(120));
    v.format = WeightFormat::kMxfp8, v.dtype = DType::F8_E4M3, v.row_stride = kCols;
    v.scale_dtype = DType::U8, v.scale_stride = kCols / 32, v.bits = 8, v.group = 32;
  } else {  // nvfp4
    m.codes.resize(size_t(kRows * kCols / 2));
    for (auto& b : m.codes) b = uint8_t(rng());
    m.scales.resize(size_t(kRows * kCols / 16));
    for (auto& b : m.scales) b = uint8_t(0x30 | (rng() & 0x0f));
    v.format = WeightFormat::kNvfp4, v.dtype = DType::U8, v.row_stride = kCols / 2;
    v.scale_dtype = DType::F8_E4M3, v.scale_stride = kCols / 16, v.bits = 4, v.group = 16;
    v.scale2 = 1.f / 64;
  }
  v.data = m.codes.data();
  v.scales = m.scales.empty() ? nullptr : m.scales.data();
  if (!bind_kernels(v)) std::abort();
  return m;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 11;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<Mat> mats;
  for (const char* f : {"mxfp8", "nvfp4", "bf16"}) mats.push_back(make(f));
  std::vector<float> x(kCols), y(kRows);
  std::mt19937 rng(1);
  for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
  ThreadPool pool(threads);
  std::vector<std::vector<double>> ratio(mats.size()), gbs(mats.size());
  for (int r = 0; r < rounds; ++r) {
    const double probe = measure_read_bandwidth_gbs(pool, size_t(256) << 20, 2);
    for (size_t k = 0; k < mats.size(); ++k) {
      const size_t i = (k + size_t(r)) % mats.size();
      const MatView& v = mats[i].v;
      matmul(x.data(), 1, kCols, v, y.data(), kRows, &pool);
      const double t0 = now();
      for (int rep = 0; rep < 3; ++rep) matmul(x.data(), 1, kCols, v, y.data(), kRows, &pool);
      const double g = 3 * mats[i].bytes() / (now() - t0) / 1e9;
      gbs[i].push_back(g);
      ratio[i].push_back(g / probe);
    }
  }
  std::printf("%lld x %lld, 1 token, %d threads, SIMD %s; ratio to the read probe of the moment:\n",
              static_cast<long long>(kRows), static_cast<long long>(kCols), threads,
              simd_target_name().c_str());
  for (size_t i = 0; i < mats.size(); ++i) {
    std::sort(ratio[i].begin(), ratio[i].end());
    std::sort(gbs[i].begin(), gbs[i].end());
    const size_t h = ratio[i].size() / 2;
    std::printf("  %-6s (%-32s) median %.2f (%.2f-%.2f), %.1f GB/s\n", mats[i].name.c_str(),
                kernels_of(mats[i].v).for_tokens(1).name, ratio[i][h], ratio[i].front(),
                ratio[i].back(), gbs[i][h]);
  }
  return 0;
}
