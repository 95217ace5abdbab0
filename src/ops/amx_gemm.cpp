// AMX-BF16 prefill gemm (see amx_gemm.h): the real tile ops behind a target attribute, CPU and
// OS detection, the self-check against the scalar twin.
#include "ops/amx_gemm.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "ops/tile_emulated.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_AMX 1
// GCC 12's AVX-512 headers build _mm512_undefined_*() from a self-initialised variable, which
// -W(maybe-)uninitialized reports once inlined (see quant_q4_bf16dot.cpp).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define INK_TILE_FN __attribute__((target("amx-tile,amx-bf16,avx512f")))
#include "ops/tile_gemm-inl.h"
#include "ops/tile_pack_avx512-inl.h"
#else
#define INKLING_HAVE_AMX 0
#endif

namespace inkling {

namespace {

#if INKLING_HAVE_AMX

// The tile ops policy of the driver over the real instructions. Tile numbers are immediates that
// GCC's intrinsics paste into the assembly text, so each one is spelled out.
#define INK_TILE_EACH(OP) \
  OP(0)                   \
  OP(1)                   \
  OP(2)                   \
  OP(3)                   \
  OP(4)                   \
  OP(5)                   \
  OP(6)                   \
  OP(7)
struct AmxTileOps {
  INK_TILE_FN void config(const tile_gemm::TileConfig& c) { _tile_loadconfig(&c); }
  template <int T>
  INK_TILE_FN void zero() {
#define INK_ZERO(N) \
  if constexpr (T == N) _tile_zero(N);
    INK_TILE_EACH(INK_ZERO)
#undef INK_ZERO
  }
  template <int T>
  INK_TILE_FN void load(const void* p, int64_t stride) {
#define INK_LOAD(N) \
  if constexpr (T == N) _tile_loadd(N, p, stride);
    INK_TILE_EACH(INK_LOAD)
#undef INK_LOAD
  }
  template <int T>
  INK_TILE_FN void store(void* p, int64_t stride) {
#define INK_STORE(N) \
  if constexpr (T == N) _tile_stored(N, p, stride);
    INK_TILE_EACH(INK_STORE)
#undef INK_STORE
  }
  // The four products of the driver's 2 x 2 block.
  template <int C, int A, int B>
  INK_TILE_FN void dp() {
    static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||
                  (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));
    if constexpr (C == 0) _tile_dpbf16ps(0, 4, 6);
    if constexpr (C == 1) _tile_dpbf16ps(1, 4, 7);
    if constexpr (C == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (C == 3) _tile_dpbf16ps(3, 5, 7);
  }
  INK_TILE_FN void release() {
    _tile_release();
  }
  // Packing in AVX-512 (every AMX CPU has it), as Bf16TileOps does, where the tests check it.
  INK_TILE_FN static void pack_pairs16(const uint8_t* src, int64_t ld, uint16_t* out) {
    tile_gemm::pack_pairs16_avx512(src, ld, out);
  }
  INK_TILE_FN static void split32(const float* in, int parts, uint16_t* out, int64_t stride) {
    tile_gemm::split32_avx512(in, parts, out, stride);
  }
};
#undef INK_TILE_EACH

// CPUID.(7,0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE; CPUID.1:ECX bit 27 OSXSAVE; XCR0 bits 17
// (XTILECFG) and 18 (XTILEDATA) enabled by the OS.
bool cpu_has_amx_bf16(std::string* why) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 22) & 1) || !((d >> 24) & 1)) {
    *why = "CPU without AMX-BF16";
    return false;
  }
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) {
    *why = "OS without XSAVE";
    return false;
  }
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) {
    *why = "OS does not enable the AMX tile state (XCR0)";
    return false;
  }
#if defined(__linux__)
  // Linux 5.16+: tile data is off until the process asks for it (once, for every thread).
  constexpr long kGetPerm = 0x1022, kReqPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqPerm, kXtileData) != 0) {
    *why = "Linux refused the AMX tile data permission (arch_prctl)";
    return false;
  }
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, kGetPerm, &perm) != 0 || !((perm >> kXtileData) & 1)) {
    *why = "Linux did not grant the AMX tile data permission (arch_prctl)";
    return false;
  }
  return true;
#else
  *why = "AMX is only used on Linux";
  return false;
#endif
}

#endif  // INKLING_HAVE_AMX

struct Decision {
  bool available = false;
  std::string why_not;  // when !available
};

const Decision& decision() {
  static const Decision d = [] {
    Decision r;
#if INKLING_HAVE_AMX
    r.available = cpu_has_amx_bf16(&r.why_not);
#else
    r.why_not = "not an x86-64 build";
#endif
    return r;
  }();
  return d;
}

std::atomic<int> g_enabled{-1};  // -1: not decided yet
std::mutex g_mu;                 // guards what follows and the decisions
std::string g_status;
int g_verdict = -1;  // the self-check: -1 not run yet, 0 failed, 1 passed
std::string g_verdict_why;

bool env_off() {
  const char* off = std::getenv("INKLING_NO_AMX");
  return off && *off && std::strcmp(off, "0") != 0;
}

std::string not_available() {
  return "not available (" + decision().why_not + ")";
}

// Runs the self-check once (holding g_mu); true when it passed. Warns once when it failed.
bool verdict_locked() {
  if (g_verdict < 0) {
    g_verdict = amx_gemm_self_check(&g_verdict_why) ? 1 : 0;
    if (!g_verdict)
      std::fprintf(stderr,
                   "inkling: warning: the AMX-BF16 gemm disagrees with its scalar twin (%s); "
                   "AMX is off for this process\n",
                   g_verdict_why.c_str());
  }
  return g_verdict == 1;
}

// On, or why not, for `on` requested (holding g_mu).
int set_locked(bool on, const char* off_reason) {
  int e = 0;
  if (!decision().available) {
    g_status = not_available();
  } else if (!on) {
    g_status = off_reason;
  } else if (verdict_locked()) {
    g_status = "enabled";
    e = 1;
  } else {
    g_status = "disabled: the self-check failed (" + g_verdict_why + ")";
  }
  g_enabled.store(e, std::memory_order_relaxed);
  return e;
}

int decide() {
  std::lock_guard<std::mutex> lock(g_mu);
  const int e = g_enabled.load(std::memory_order_relaxed);
  return e >= 0 ? e : set_locked(!env_off(), "disabled by INKLING_NO_AMX");
}

}  // namespace

bool amx_gemm_available() {
  return decision().available;
}

bool amx_gemm_enabled() {
  const int e = g_enabled.load(std::memory_order_relaxed);
  return (e < 0 ? decide() : e) == 1;
}

void set_amx_gemm_enabled(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  set_locked(on, "disabled by set_amx_gemm_enabled(false)");
}

std::string amx_gemm_status() {
  amx_gemm_enabled();
  std::lock_guard<std::mutex> lock(g_mu);
  return g_status;
}

bool amx_gemm_handles(const MatView& w) {
  return w.format == WeightFormat::kDense && w.dtype == DType::BF16;
}

namespace {
void amx_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
              float* y, int64_t ldy, int parts) {
#if INKLING_HAVE_AMX
  AmxTileOps ops;
  tile_gemm::Driver<AmxTileOps>::run(ops, x, n_tok, ldx, reinterpret_cast<const uint16_t*>(w.data),
                                     w.row_stride, w.cols, r0, r1, y, ldy, parts);
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy, (void)parts;
#endif
}
}  // namespace

void amx_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy) {
  amx_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 3);
}

void amx_gemm_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy) {
  amx_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 1);
}

bool amx_gemm_self_check(std::string* why) {
  // 37 tokens, 45 rows of 300 columns 307 apart: every padding path (tokens, rows, columns), two
  // column blocks and two row blocks; values over several binades so that all three parts of x
  // matter.
  constexpr int64_t T = 37, R = 45, K = 300, LD = 307;
  uint32_t s = 12345;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    return float(int32_t(s >> 8) - (1 << 23)) / float(1 << 23);  // [-1, 1)
  };
  std::vector<float> x(size_t(T * K));
  for (int64_t i = 0; i < T * K; ++i) x[size_t(i)] = next() * std::ldexp(1.f, int(i % 7) - 3);
  std::vector<uint16_t> wd(size_t(R * LD));
  for (auto& v : wd) v = f32_to_bf16(next());
  MatView w;
  w.dtype = DType::BF16;
  w.data = reinterpret_cast<const uint8_t*>(wd.data());
  w.rows = R;
  w.cols = K;
  w.row_stride = LD;
  std::vector<float> y(size_t(T * R)), ref(size_t(T * R));
  amx_gemm_rows(x.data(), T, K, w, 0, R, y.data(), R);
  tile_gemm::tile_gemm_ref(x.data(), T, K, w, 0, R, ref.data(), R, 3,
                           tile_gemm::PairOrder::kEvenFirst);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < R; ++r) {
      double mag = 0;
      for (int64_t c = 0; c < K; ++c)
        mag += std::fabs(double(x[size_t(t * K + c)]) * bf16_to_f32(wd[size_t(r * LD + c)]));
      const double err = std::fabs(double(y[size_t(t * R + r)]) - ref[size_t(t * R + r)]);
      if (!(err <= 1e-5 * mag)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "token %lld row %lld: %.9g, the twin %.9g",
                      static_cast<long long>(t), static_cast<long long>(r),
                      double(y[size_t(t * R + r)]), double(ref[size_t(t * R + r)]));
        *why = buf;
        return false;
      }
    }
  return true;
}

}  // namespace inkling
