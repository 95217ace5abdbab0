// Quantized decode kernels on one thread, A/B in one run: the AVX512-VNNI affine kernel (x in
// int8 parts) against the kernel the registry binds without it (AVX512-BF16 for 4 bits and for
// 3 and 6, the Highway byte kernel for 8), for one token. Two sizes: a matrix that stays in L2 (the
// kernels' compute limit) and one 4x the last-level cache (what decode sees: codes from DRAM).
// Rounds alternate between the kernels; the best and the median of each are reported in GB/s of
// weights read (codes + scales + biases). Then the DRAM-sized matrix on 2 threads through
// matmul() (the registry's choice with and without the VNNI kernel), each round after a short read
// probe: the ratio of the kernel's GB/s to the probe's of the same moment (what decode_ratio is
// for the whole model), median and range over the rounds.
//
//   bench_quant_decode [rounds=15]
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
#include "ops/quant_affine_bf16dot.h"
#include "ops/quant_affine_vnni.h"
#include "ops/quant_affine_words.h"
#include "ops/quant_q4_bf16dot.h"

using namespace inkling;

namespace {

struct Mat {
  std::vector<uint8_t> codes, scales, biases;
  MatView v;
};

Mat make(int64_t rows, int64_t cols, int bits, int group) {
  Mat m;
  std::mt19937 rng(uint32_t(rows + bits));
  m.codes.resize(size_t(rows * cols * bits / 8));
  for (auto& b : m.codes) b = uint8_t(rng());
  const int64_t ng = cols / group;
  m.scales.resize(size_t(rows * ng * 2));
  m.biases.resize(m.scales.size());
  std::normal_distribution<float> nd(0.f, 0.02f);
  for (int64_t i = 0; i < rows * ng; ++i) {
    const uint16_t s = f32_to_bf16(nd(rng)), b = f32_to_bf16(nd(rng) * 8);
    std::memcpy(m.scales.data() + 2 * i, &s, 2);
    std::memcpy(m.biases.data() + 2 * i, &b, 2);
  }
  MatView& v = m.v;
  v.format = WeightFormat::kAffine, v.dtype = DType::U32;
  v.data = m.codes.data(), v.rows = rows, v.cols = cols, v.row_stride = cols * bits / 8;
  v.scales = m.scales.data(), v.biases = m.biases.data(), v.scale_dtype = DType::BF16;
  v.scale_stride = ng, v.bits = bits, v.group = group;
  return m;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  if (!affine_vnni_available()) {
    std::printf("bench_quant_decode: this CPU has no AVX512-VNNI\n");
    return 0;
  }
  std::vector<float> x(16384), y(1 << 17);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : x) v = nd(rng);
  for (int bits : {8, 4, 3, 6})
    for (int64_t rows : {int64_t(256), int64_t(32768)}) {
      const int64_t cols = 4096;
      Mat m = make(rows, cols, bits, 64);
      const double bytes = double(m.codes.size() + m.scales.size() + m.biases.size());
      RowsKernel other = bits == 4   ? q4_bf16dot_rows
                         : bits == 8 ? affine_words_rows
                                     : affine_bf16dot_rows;
      const char* other_name = bits == 4   ? "avx512-bf16 q4"
                               : bits == 8 ? "hwy affine bytes"
                                           : "avx512-bf16 affine";
      if (bits != 8 && !(q4_bf16dot_available() && affine_bf16dot_available())) continue;
      std::vector<double> t_vnni, t_other;
      const int reps = rows < 1024 ? 200 : 2;
      for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 2; ++k) {
          const bool vn = (k == 0) == (r % 2 == 0);
          RowsKernel f = vn ? affine_vnni_rows : other;
          f(x.data(), 1, cols, m.v, 0, rows, y.data(), rows);  // warm (x prepared)
          const double t0 = now();
          for (int i = 0; i < reps; ++i) f(x.data(), 1, cols, m.v, 0, rows, y.data(), rows);
          (vn ? t_vnni : t_other).push_back((now() - t0) / reps);
        }
      auto report = [&](const char* name, std::vector<double> t) {
        std::sort(t.begin(), t.end());
        std::printf("  %-18s best %6.2f GB/s  median %6.2f GB/s\n", name, bytes / t.front() / 1e9,
                    bytes / t[t.size() / 2] / 1e9);
      };
      std::printf("q%d g64 %lld x %lld (%s, %.1f MB), 1 token, 1 thread:\n", bits,
                  static_cast<long long>(rows), static_cast<long long>(cols),
                  rows < 1024 ? "in L2" : "from DRAM", bytes / 1e6);
      report("avx512-vnni", t_vnni);
      report(other_name, t_other);
    }
  ThreadPool pool(2);
  for (int bits : {8, 4, 3, 6}) {
    Mat m = make(32768, 4096, bits, 64);
    const double bytes = double(m.codes.size() + m.scales.size() + m.biases.size());
    std::vector<double> r_vnni, r_other, g_vnni, g_other;
    for (int r = 0; r < rounds; ++r) {
      const double probe = measure_read_bandwidth_gbs(pool, size_t(256) << 20, 2);
      for (int k = 0; k < 2; ++k) {
        const bool vn = (k == 0) == (r % 2 == 0);
        set_affine_vnni_enabled(vn);
        matmul(x.data(), 1, 4096, m.v, y.data(), 32768, &pool);
        const double t0 = now();
        for (int i = 0; i < 3; ++i) matmul(x.data(), 1, 4096, m.v, y.data(), 32768, &pool);
        const double gbs = 3 * bytes / (now() - t0) / 1e9;
        (vn ? g_vnni : g_other).push_back(gbs);
        (vn ? r_vnni : r_other).push_back(gbs / probe);
      }
    }
    set_affine_vnni_enabled(true);
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    const auto rv = med(r_vnni), ro = med(r_other), gv = med(g_vnni), go = med(g_other);
    const size_t h = rv.size() / 2;
    std::printf(
        "q%d g64 32768 x 4096, 1 token, 2 threads, ratio to the read probe of the moment:\n", bits);
    std::printf("  %-18s median %.2f (%.2f-%.2f), %.1f GB/s\n", "avx512-vnni", rv[h], rv.front(),
                rv.back(), gv[h]);
    std::printf("  %-18s median %.2f (%.2f-%.2f), %.1f GB/s\n",
                bits == 4   ? "avx512-bf16 q4"
                : bits == 8 ? "hwy affine bytes"
                            : "avx512-bf16 affine",
                ro[h], ro.front(), ro.back(), go[h]);
  }
  return 0;
}
