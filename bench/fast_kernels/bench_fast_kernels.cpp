// Exact vs fast numerics kernels on one thread, A/B in one run, alternating: the products the
// registry binds for 1 token (decode) and 2/4/16 tokens (batched decode, speculative verify) on
// bf16 weights and MLX affine 4- and 8-bit weights (group 64), a matrix in L2 (the kernels'
// compute limit) and one at least 4x the last-level cache (what decode reads from DRAM), plus the
// VNNI kernel with 2 int8 parts of x, MXFP8 (E4M3 + E8M0 per 32), and on 4-bit affine and NVFP4
// weights what an AVX2 host runs: the portable exact kernel (Highway) and the AVX2 int8 kernel with
// 1 and 2 parts, and that kernel's 512-bit form on AVX512-VNNI hosts (bitwise the same results).
// Prints the best and median GB/s of weights read per call (for T tokens, the same bytes serve T
// products).
//
//   bench_fast_kernels [rounds=9] [format: 16 bf16, 4 q4, -4 nvfp4, 8 q8, -8 mxfp8; all]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/quant_affine_vnni.h"
#include "ops/quant_matmul.h"
#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_gemm.h"

using namespace inkling;

namespace {

struct Mat {
  std::vector<uint8_t> codes, scales, biases;
  MatView v;
  double bytes = 0;
};

Mat make(int64_t rows, int64_t cols, int bits) {
  Mat m;
  std::mt19937 rng(uint32_t(rows + bits));
  std::normal_distribution<float> nd(0.f, 0.02f);
  MatView& v = m.v;
  v.rows = rows, v.cols = cols;
  if (bits == 16) {
    m.codes.resize(size_t(rows * cols * 2));
    for (size_t i = 0; i < m.codes.size(); i += 2) {
      const uint16_t b = f32_to_bf16(nd(rng));
      std::memcpy(m.codes.data() + i, &b, 2);
    }
    v.dtype = DType::BF16, v.data = m.codes.data(), v.row_stride = cols;
    m.bytes = double(m.codes.size());
    return m;
  }
  if (bits == -8) {  // MXFP8: E4M3 values, one E8M0 exponent per 32 columns
    m.codes.resize(size_t(rows * cols));
    for (auto& b : m.codes) b = uint8_t(rng() % 0x7f) | uint8_t(rng() & 0x80);
    m.scales.resize(size_t(rows * cols / 32));
    for (auto& b : m.scales) b = uint8_t(115 + rng() % 11);
    v.format = WeightFormat::kMxfp8, v.dtype = DType::F8_E4M3;
    v.data = m.codes.data(), v.row_stride = cols;
    v.scales = m.scales.data(), v.scale_dtype = DType::U8, v.scale_stride = cols / 32;
    v.bits = 8, v.group = 32;
    m.bytes = double(m.codes.size() + m.scales.size());
    return m;
  }
  if (bits == -4) {  // NVFP4: E2M1 pairs, one E4M3 scale per 16 columns
    m.codes.resize(size_t(rows * cols / 2));
    for (auto& b : m.codes) b = uint8_t(rng());
    m.scales.resize(size_t(rows * cols / 16));
    for (auto& b : m.scales) b = uint8_t(0x30 + rng() % 16);
    v.format = WeightFormat::kNvfp4, v.dtype = DType::U8;
    v.data = m.codes.data(), v.row_stride = cols / 2;
    v.scales = m.scales.data(), v.scale_dtype = DType::F8_E4M3, v.scale_stride = cols / 16;
    v.bits = 4, v.group = 16, v.scale2 = 0.01f;
    m.bytes = double(m.codes.size() + m.scales.size());
    return m;
  }
  const int group = 64;
  m.codes.resize(size_t(rows * cols * bits / 8));
  for (auto& b : m.codes) b = uint8_t(rng());
  const int64_t ng = cols / group;
  m.scales.resize(size_t(rows * ng * 2));
  m.biases.resize(m.scales.size());
  for (int64_t i = 0; i < rows * ng; ++i) {
    const uint16_t s = f32_to_bf16(nd(rng)), b = f32_to_bf16(nd(rng) * 8);
    std::memcpy(m.scales.data() + 2 * i, &s, 2);
    std::memcpy(m.biases.data() + 2 * i, &b, 2);
  }
  v.format = WeightFormat::kAffine, v.dtype = DType::U32;
  v.data = m.codes.data(), v.row_stride = cols * bits / 8;
  v.scales = m.scales.data(), v.biases = m.biases.data(), v.scale_dtype = DType::BF16;
  v.scale_stride = ng, v.bits = bits, v.group = group;
  m.bytes = double(m.codes.size() + m.scales.size() + m.biases.size());
  return m;
}

// Rows of 4096 columns for the "from DRAM" matrix: at least 4x the last-level cache (a CPU with a
// 260 MB L3 holds the 75-138 MB that 32768 rows make), and at least 32768 rows (16384 for bf16).
int64_t dram_rows(int bits) {
  const double per_row = 4096.0 * (bits == 16 ? 2.0 : bits == -8 ? 1.03 : std::abs(bits) / 8.0);
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const double want = 4.0 * double(llc > 0 ? llc : 0);
  const int64_t base = bits == 16 ? 16384 : 32768;
  return std::max<int64_t>(base, (int64_t(want / per_row) + 255) / 256 * 256);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Variant {
  std::string name;
  const MatView* w;  // the view bound for this variant's mode
  RowsKernel f;
  int parts;  // > 0: affine_vnni_parts_rows with this many parts (int8: q4_int8_parts_rows)
  bool int8 = false;
  bool wide = false;  // int8: the 512-bit form (AVX512-VNNI) instead of the AVX2 one
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  std::vector<float> x(64 * 4096), y(16 << 15);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : x) v = nd(rng);
  const int only = argc > 2 ? std::atoi(argv[2]) : 0;  // one format: 16, 4, -4, 8 or -8
  for (int bits : {16, 4, -4, 8, -8})
    for (int64_t rows : {int64_t(256), dram_rows(bits)})
      for (int64_t T : {int64_t(1), int64_t(2), int64_t(4), int64_t(16), int64_t(64)}) {
        if ((rows > 1024 && T > 4) || (only != 0 && bits != only)) continue;
        const int64_t cols = 4096;
        Mat m = make(rows, cols, bits);
        if (y.size() < size_t(rows * T)) y.resize(size_t(rows * T));
        MatView ex = m.v, fa = m.v;
        if (!bind_kernels(ex, Numerics::kExact) || !bind_kernels(fa, Numerics::kFast)) return 1;
        std::vector<Variant> vs = {{std::string("exact ") + ex.kernels->for_tokens(T).name, &ex,
                                    ex.kernels->for_tokens(T).rows, 0},
                                   {std::string("fast ") + fa.kernels->for_tokens(T).name, &fa,
                                    fa.kernels->for_tokens(T).rows, 0}};
        if ((bits == 4 || bits == -4) && q4_int8_gemm_available()) {
          if (T <= kFewMaxTokens)
            vs.push_back({"int8 gemm (avx512-vnni), 1 part", &fa, q4_int8_gemm_rows, 0});
          vs.push_back({"int8 gemm (avx512-vnni), 2 parts", &fa, q4_int8_gemm_fine_rows, 0});
        }
        // Load-time tiles (affine 4-bit, NVFP4): the gemm without its per-call regrouping.
        MatView ti = fa;
        std::vector<uint8_t> tile_buf;
        if ((bits == 4 || bits == -4) && q4_int8_gemm_available() && q4_int8_tile_stride(ti) > 0) {
          tile_buf.resize(size_t(q4_int8_tiles_bytes(ti)) + 64);
          uint8_t* at = tile_buf.data() + (64 - reinterpret_cast<uintptr_t>(tile_buf.data()) % 64);
          q4_int8_pack_tiles(ti, at);
          ti.tiles = at, ti.tile_stride = q4_int8_tile_stride(ti);
          vs.push_back({"tiles (load-time), 1 part", &ti, q4_int8_gemm_rows, 0});
          vs.push_back({"tiles (load-time), 2 parts", &ti, q4_int8_gemm_fine_rows, 0});
        }
        if (T <= kFewMaxTokens && bits > 0 && bits != 16 && affine_vnni_available())
          vs.push_back({"vnni 2 parts", &fa, nullptr, 2});
        if (T <= kFewMaxTokens && (bits == 4 || bits == -4)) {
          vs.push_back({"portable (exact on AVX2 hosts)", &ex, quant_matmul_rows, 0});
          if (q4_int8_available()) {
            vs.push_back({"avx2 int8, 1 part", &fa, nullptr, 1, true});
            vs.push_back({"avx2 int8, 2 parts", &fa, nullptr, 2, true});
            set_q4_int8_wide_enabled(true);
            if (q4_int8_wide_enabled()) {
              vs.push_back({"int8 512-bit (avx512-vnni), 1 part", &fa, nullptr, 1, true, true});
              vs.push_back({"int8 512-bit (avx512-vnni), 2 parts", &fa, nullptr, 2, true, true});
            }
          }
        }
        std::vector<std::vector<double>> t(vs.size());
        const int reps = rows < 1024 ? (T > kFewMaxTokens ? 10 : 100) : 2;
        for (int r = 0; r < rounds; ++r)
          for (size_t k = 0; k < vs.size(); ++k) {
            const Variant& v = vs[(k + size_t(r)) % vs.size()];
            const MatView& w = *v.w;
            // The int8 rows name their form; the bound kernels run as the registry runs them.
            set_q4_int8_wide_enabled(!v.int8 || v.wide);
            auto call = [&] {
              if (v.int8)
                q4_int8_parts_rows(x.data(), T, cols, w, 0, w.rows, y.data(), w.rows, v.parts);
              else if (v.parts)
                affine_vnni_parts_rows(x.data(), T, cols, w, 0, w.rows, y.data(), w.rows, v.parts);
              else
                v.f(x.data(), T, cols, w, 0, w.rows, y.data(), w.rows);
            };
            call();
            const double t0 = now();
            for (int i = 0; i < reps; ++i) call();
            t[(k + size_t(r)) % vs.size()].push_back((now() - t0) / reps);
          }
        std::printf("%s %lld x %lld (%s, %.1f MB), %lld token(s), 1 thread:\n",
                    bits == 16   ? "bf16"
                    : bits == 4  ? "q4 g64"
                    : bits == -4 ? "nvfp4"
                    : bits == -8 ? "mxfp8"
                                 : "q8 g64",
                    static_cast<long long>(m.v.rows), static_cast<long long>(cols),
                    rows < 1024 ? "in L2" : "from DRAM", m.bytes / 1e6, static_cast<long long>(T));
        for (size_t k = 0; k < vs.size(); ++k) {
          std::sort(t[k].begin(), t[k].end());
          std::printf("  %-52s best %6.2f GB/s  median %6.2f GB/s\n", vs[k].name.c_str(),
                      m.bytes / t[k].front() / 1e9, m.bytes / t[k][t[k].size() / 2] / 1e9);
        }
      }
  return 0;
}
