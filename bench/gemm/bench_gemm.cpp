// Prefill gemm kernels for bf16 weights on one thread, measured A/B in one run: the f32 FMA gemm
// (hwy gemm, the default without AMX), the AVX512-BF16 tile gemm with x in 3 bf16 parts (exact
// products) and in 2 parts (near-exact), and the AMX-BF16 gemm where the CPU has it. Rounds
// alternate between the kernels; the best time of each is reported in GFLOP/s (2 flops per
// multiply-add of the logical product), with the largest difference from the f64 product relative
// to sum |x w|.
//
//   bench_gemm [tokens=512] [rows=1024] [cols=2048] [rounds=5]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "ops/amx_gemm.h"
#include "ops/bf16_tile_gemm.h"
#include "ops/machine_hwy.h"
#include "ops/matmul_hwy.h"

using namespace inkling;

namespace {

using Fn = void (*)(const float*, int64_t, int64_t, const MatView&, int64_t, int64_t, float*,
                    int64_t);

void tile3(const float* x, int64_t n, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
           float* y, int64_t ldy) {
  bf16_tile_gemm_rows(x, n, ldx, w, r0, r1, y, ldy, 3);
}
void tile2(const float* x, int64_t n, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
           float* y, int64_t ldy) {
  bf16_tile_gemm_rows(x, n, ldx, w, r0, r1, y, ldy, 2);
}

struct Candidate {
  const char* name;
  Fn fn;
  double best = 1e30;
  double max_rel = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t T = argc > 1 ? std::atoll(argv[1]) : 512;
  const int64_t R = argc > 2 ? std::atoll(argv[2]) : 1024;
  const int64_t K = argc > 3 ? std::atoll(argv[3]) : 2048;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  if (T < 1 || R < 1 || K < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: bench_gemm [tokens] [rows] [cols] [rounds]\n");
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(T * K));
  for (auto& v : x) v = nd(rng);
  std::vector<uint16_t> wb(size_t(R * K));
  for (auto& v : wb) v = f32_to_bf16(nd(rng));
  MatView w;
  w.dtype = DType::BF16;
  w.data = reinterpret_cast<const uint8_t*>(wb.data());
  w.rows = R;
  w.cols = K;
  w.row_stride = K;

  std::vector<Candidate> c = {{"hwy gemm (f32 FMA)", hwy_gemm_rows}};
  if (bf16_tile_gemm_available()) {
    c.push_back({"avx512-bf16 tile, 3 parts", tile3});
    c.push_back({"avx512-bf16 tile, 2 parts", tile2});
  }
  if (amx_gemm_available()) c.push_back({"amx-bf16 gemm, 3 parts", amx_gemm_rows});

  // The f64 product of a sample of (token, row) pairs, and sum |x w| for the relative error.
  std::vector<float> y(size_t(T * R));
  const int64_t samples = 64;
  std::vector<double> exact(samples), mag(samples);
  std::vector<int64_t> st(samples), sr(samples);
  for (int64_t i = 0; i < samples; ++i) {
    st[size_t(i)] = int64_t(rng() % uint64_t(T));
    sr[size_t(i)] = int64_t(rng() % uint64_t(R));
    double s = 0, m = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double p =
          double(x[size_t(st[size_t(i)] * K + k)]) * bf16_to_f32(wb[size_t(sr[size_t(i)] * K + k)]);
      s += p;
      m += std::fabs(p);
    }
    exact[size_t(i)] = s;
    mag[size_t(i)] = m;
  }
  for (int r = 0; r < rounds; ++r)
    for (Candidate& k : c) {
      const auto t0 = std::chrono::steady_clock::now();
      k.fn(x.data(), T, K, w, 0, R, y.data(), R);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      k.best = std::min(k.best, s);
      for (int64_t i = 0; i < samples; ++i)
        k.max_rel = std::max(
            k.max_rel, std::fabs(y[size_t(st[size_t(i)] * R + sr[size_t(i)])] - exact[size_t(i)]) /
                           mag[size_t(i)]);
    }
  std::printf("bf16 gemm, %lld tokens x %lld rows x %lld columns, 1 thread, best of %d (%s)\n",
              static_cast<long long>(T), static_cast<long long>(R), static_cast<long long>(K),
              rounds, simd_target_name().c_str());
  const double flops = 2.0 * double(T) * double(R) * double(K);
  for (const Candidate& k : c)
    std::printf("  %-28s %8.1f GFLOP/s  %.3fx  max |err| / sum|xw| %.2e\n", k.name,
                flops / k.best / 1e9, c[0].best / k.best, k.max_rel);
  return 0;
}
