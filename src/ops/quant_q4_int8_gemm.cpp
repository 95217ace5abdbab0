// The int8 prefill gemm for affine 4-bit and NVFP4 weights on AVX512-VNNI CPUs
// (quant_q4_int8_gemm.h). x86 intrinsics behind a target attribute and a CPUID check, as the
// other x86-only kernels.
#include "ops/quant_q4_int8_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "base/aligned_scratch.h"
#include "inkling/status.h"
#include "ops/kernel_switch.h"
#include "ops/quant_q4_int8_prepared.h"

#if defined(__x86_64__)
#define INKLING_HAVE_Q4GEMM 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"        // the same, in the cast intrinsics
#endif
#include <immintrin.h>

#include "ops/nvfp4_factors_avx512-inl.h"
#define INK_GEMM512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
// GCC gives a lambda in a target function the target only when asked.
#define INK_GEMM512_LAMBDA \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"), always_inline))
#else
#define INKLING_HAVE_Q4GEMM 0
#endif

namespace inkling {

namespace {

KernelSwitch g_switch{"INKLING_NO_Q4INT8_GEMM"};
KernelSwitch g_tiles{"INKLING_NO_Q4_TILES"};
KernelSwitch g_vbmi{"INKLING_NO_Q4_VBMI"};  // nibbles by VPERMB / GFNI (the same bits)

}  // namespace

bool q4_int8_gemm_handles(const MatView& w) {
  if (w.cols <= 0 || w.cols % 64 != 0) return false;
  if (w.format == WeightFormat::kNvfp4) return w.group == 16 && w.bits == 4;
  return w.format == WeightFormat::kAffine && w.bits == 4 && w.biases &&
         (w.group == 32 || w.group == 64 || w.group == 128) && w.cols % w.group == 0;
}

#if INKLING_HAVE_Q4GEMM
namespace {

constexpr int kRows = 16;     // weight rows per tile: one int32 lane each
constexpr int kTokBlock = 8;  // tokens whose sums run against a tile's registers at once

struct Scratch {
  Q4Int8Prepared p;              // x split as the decode kernel splits it (span order)
  AlignedScratch<uint8_t> tile;  // per block of 32 columns: 4 vectors of one word per row
  AlignedScratch<float> fac;     // per factor group: the 16 rows' weight factors
  AlignedScratch<float> bias;    // affine, per group: the 16 rows' biases
  // NVFP4, per token, part and group of 16 columns: -12 x the sum of the part's values there
  // (the codes enter VPDPBUSD as |e2m1| x 2 + 12, unsigned; this takes the 12 back out), the
  // chains' start, broadcast from memory.
  AlignedScratch<int32_t> off;
};

// One tile as the kernel reads it: regrouped codes, then per factor group the 16 rows' weight
// factors (and affine biases) as elements of kSc (F32 from a per-call regrouping; the view's
// scale dtype from load-time tiles: both convert exactly to the same f32; NVFP4's tiles keep the
// E4M3 block scales, made factors with scale2 as the per-call regrouping makes them).
struct TileRef {
  const uint8_t* codes = nullptr;
  const uint8_t* fac = nullptr;
  const uint8_t* bias = nullptr;
  float scale2 = 1.f;
  float k128 = 0.f;  // NVFP4: 128 x scale2 where the factors take one product (folds), else 0
};

// The 16 lanes of factor group k (elements of kSc) as f32.
template <DType kSc>
INK_GEMM512 inline __m512 load_lanes(const TileRef& tr, int64_t k) {
  const uint8_t* base = tr.fac;
  if constexpr (kSc == DType::F8_E4M3) {
    if (tr.k128 != 0.f)
      return nvfp4_avx512::folded_factors16(base + k * kRows, _mm512_set1_ps(tr.k128));
    return nvfp4_avx512::half_factors16(base + k * kRows, __mmask16(0xffff),
                                        _mm512_set1_ps(tr.scale2));
  } else if constexpr (kSc == DType::F32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(base) + k * kRows);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + k * kRows * 2));
    if constexpr (kSc == DType::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

INK_GEMM512 inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// |e2m1| x 2 with its sign, plus 12, per code: 0..24, the unsigned operand of VPDPBUSD against x's
// signed parts (as the affine codes are).
INK_GEMM512 inline __m512i nv_lut() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}
INK_GEMM512 inline __m512i nv_values(__m512i codes) {
  return _mm512_shuffle_epi8(nv_lut(), codes);
}

// VPERMB (AVX512-VBMI): byte i of the result is table[idx[i] % 64]. Written as asm because this
// file's target attributes leave VBMI out (the compiler must not emit it for CPUs without it);
// only the kVbmi instantiations, chosen at run time, reach it.
INK_GEMM512 inline __m512i permb(__m512i idx, __m512i table) {
  __m512i r;
  asm("vpermb %2, %1, %0" : "=v"(r) : "v"(idx), "v"(table));
  return r;
}

// Each byte's high nibble in its low four bits (GFNI's affine transform with the matrix of a
// right shift by 4): one instruction for a shift and a mask. asm for the same reason.
INK_GEMM512 inline __m512i high_nibbles(__m512i v) {
  const __m512i shift4 = _mm512_set1_epi64(0x1020408000000000LL);
  __m512i r;
  asm("vgf2p8affineqb $0, %2, %1, %0" : "=v"(r) : "v"(v), "v"(shift4));
  return r;
}

// NVFP4: -12 x each part's sum over every group of 16 columns, per token, into s.off
// ([token][part][group]). Group k is block k / 2's words 2 (k % 2) and + 1: eight A values and
// the eight B values 32 further on in the span order.
void nv_offsets(const Q4Int8Prepared& p, int64_t n_tok, int64_t cols, int parts, Scratch& s) {
  const int64_t ng = cols / 16;
  int32_t* o = s.off.get(size_t(n_tok * parts * ng));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int part = 0; part < parts; ++part) {
      const int8_t* x = (part == 0 ? p.a.data() : p.c.data()) + t * cols;
      int32_t* out = o + (t * parts + part) * ng;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t b = k / 2, at = 64 * (b / 2) + 16 * (b % 2) + 8 * (k % 2);
        int32_t sum = 0;
        for (int i = 0; i < 8; ++i) sum += x[at + i] + x[at + 32 + i];
        out[k] = -12 * sum;
      }
    }
}

// Rows [rb, rb + nr) of w into s: codes regrouped per block (rows past nr repeat the last one and
// are never stored), factors and biases per group as 16 lanes.
template <bool kNv>
INK_GEMM512 TileRef pack_tile(const MatView& w, int64_t rb, int nr, Scratch& s) {
  const int64_t cols = w.cols, nb = cols / 32;
  alignas(64) int32_t off[kRows];
  for (int i = 0; i < kRows; ++i) off[i] = int32_t(std::min(i, nr - 1) * w.row_stride);
  const __m512i vidx = _mm512_load_si512(off);
  const uint8_t* base = w.row(rb);
  uint8_t* tile = s.tile.get(size_t(nb * 4 * 64));
  for (int64_t b = 0; b < nb; ++b)
    for (int j = 0; j < 4; ++j)
      _mm512_store_si512(tile + (4 * b + j) * 64,
                         _mm512_i32gather_epi32(vidx, base + 16 * b + 4 * j, 1));
  const int64_t nfac = kNv ? cols / 16 : cols / w.group;
  float* fac = s.fac.get(size_t(nfac * kRows));
  float* bias = kNv ? nullptr : s.bias.get(size_t(nfac * kRows));
  for (int i = 0; i < kRows; ++i) {
    q4_int8_row_factors(w, rb + std::min(i, nr - 1), s.p);
    for (int64_t k = 0; k < nfac; ++k) {
      fac[k * kRows + i] = s.p.rs[size_t(k)];
      if (bias) bias[k * kRows + i] = s.p.rb[size_t(k)];
    }
  }
  return {tile, reinterpret_cast<const uint8_t*>(fac), reinterpret_cast<const uint8_t*>(bias)};
}

// One tile's rows for tokens t0 .. t0 + NT - 1 (rows masked by rmask at the store).
// kVbmi (AVX512-VBMI and GFNI): NVFP4's nibble values by one VPERMB each from the 16-entry table
// repeated over 64 bytes (bits 4-5 of the index then do not matter) instead of a mask and a
// VPSHUFB; affine codes' high nibbles by one GFNI transform instead of a shift and a mask.
template <bool kNv, int kGroup, int kParts, int NT, DType kSc, bool kVbmi = false>
INK_GEMM512 void tile_tokens(const TileRef& tr, const Q4Int8Prepared& p, const int32_t* off,
                             int64_t cols, int64_t t0, int64_t rb, __mmask16 rmask, float* y,
                             int64_t ldy, int64_t pf) {
  const int64_t nb = cols / 32, ng16 = cols / 16;
  const uint8_t* tile = tr.codes;
  const int8_t* a[NT];
  const int8_t* c[NT];
  const float* d[NT];
  const int32_t* oa[NT];  // NVFP4: the token's offsets of part a (and c after them)
  _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
    a[t] = p.a.data() + (t0 + t) * cols;
    c[t] = kParts == 2 ? p.c.data() + (t0 + t) * cols : nullptr;
    d[t] = p.d.data() + (t0 + t) * nb;
    oa[t] = kNv ? off + (t0 + t) * kParts * ng16 : nullptr;
  }
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  [[maybe_unused]] const __m512i lut = nv_lut();
  __m512 acc[NT];
  _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    if (pf > 0)  // load-time tiles stream from memory: the lines pf bytes ahead
      _Pragma("GCC unroll 4") for (int l = 0; l < 4; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(tile + (4 * b + l) * 64 + pf), _MM_HINT_T0);
    __m512i A[4], B[4];
    _Pragma("GCC unroll 8") for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_load_si512(tile + (4 * b + j) * 64);
      if constexpr (kNv && kVbmi) {
        A[j] = permb(v, lut), B[j] = permb(_mm512_srli_epi16(v, 4), lut);
      } else if constexpr (kVbmi) {
        A[j] = _mm512_and_si512(v, m4), B[j] = high_nibbles(v);
      } else {
        A[j] = _mm512_and_si512(v, m4), B[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (kNv) A[j] = nv_values(A[j]), B[j] = nv_values(B[j]);
      }
    }
    const int64_t at = 64 * (b / 2) + 16 * (b % 2);  // the block's first A part; B's are +32
    if constexpr (!kNv) {
      const __m512 wf = load_lanes<kSc>(tr, b * 32 / kGroup);
      // The integer sums of every token at once, the tokens' chains interleaved so that
      // VPDPBUSD's latency is hidden (one to three tokens: the low and high nibbles in two chains
      // each); integer sums are exact, so any order gives the same I.
      constexpr int kCh = NT <= 3 ? 2 : 1;
      auto sums = [&](const int8_t* const* x, __m512i* I) INK_GEMM512_LAMBDA {
        __m512i S[NT][kCh];
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t)
            _Pragma("GCC unroll 2") for (int h = 0; h < kCh; ++h) S[t][h] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int j = 0; j < 4; ++j) {
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) S[t][0] =
              _mm512_dpbusd_epi32(S[t][0], A[j], bcast4(x[t] + at + 4 * j));
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) S[t][kCh - 1] =
              _mm512_dpbusd_epi32(S[t][kCh - 1], B[j], bcast4(x[t] + at + 32 + 4 * j));
        }
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) I[t] =
            kCh == 2 ? _mm512_add_epi32(S[t][0], S[t][kCh - 1]) : S[t][0];
      };
      __m512i I[NT];
      sums(a, I);
      if constexpr (kParts == 2) {
        __m512i C[NT];
        sums(c, C);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) I[t] =
            _mm512_add_epi32(_mm512_slli_epi32(I[t], 8), C[t]);
      }
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc[t] = _mm512_fmadd_ps(
          _mm512_cvtepi32_ps(I[t]), _mm512_mul_ps(wf, _mm512_set1_ps(d[t][b])), acc[t]);
    } else {
      _Pragma("GCC unroll 2") for (int q = 0; q < 2; ++q) {  // the block's two groups of 16 columns
        const int64_t k = 2 * b + q;
        const __m512 wf = load_lanes<kSc>(tr, k);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
          // sum((v + 12) x) - 12 sum(x): the exact integer sum(v x).
          auto sums = [&](const int8_t* x, const int32_t* o) INK_GEMM512_LAMBDA {
            __m512i sum = _mm512_set1_epi32(*o);
            _Pragma("GCC unroll 8") for (int j = 2 * q; j < 2 * q + 2; ++j) {
              sum = _mm512_dpbusd_epi32(sum, A[j], bcast4(x + at + 4 * j));
              sum = _mm512_dpbusd_epi32(sum, B[j], bcast4(x + at + 32 + 4 * j));
            }
            return sum;
          };
          __m512i I = sums(a[t], oa[t] + k);
          if constexpr (kParts == 2)
            I = _mm512_add_epi32(_mm512_slli_epi32(I, 8), sums(c[t], oa[t] + ng16 + k));
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I),
                                   _mm512_mul_ps(wf, _mm512_set1_ps(d[t][b])), acc[t]);
        }
      }
    }
  }
  // The affine bias term, per token over the groups in order (each group's biases converted once
  // for all the tokens).
  __m512 bs[NT];
  _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) bs[t] = _mm512_setzero_ps();
  if constexpr (!kNv) {
    const int64_t ng = cols / kGroup;
    const float* gs[NT];
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) gs[t] = p.gsum.data() + (t0 + t) * ng;
    for (int64_t g = 0; g < ng; ++g) {
      const __m512 bl = load_lanes<kSc>(TileRef{nullptr, tr.bias}, g);
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) bs[t] =
          _mm512_fmadd_ps(bl, _mm512_set1_ps(gs[t][g]), bs[t]);
    }
  }
  _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * ldy + rb, rmask, _mm512_add_ps(acc[t], bs[t]));
}

// Every token of x against one tile: 8 tokens per pass over its registers, then 4, 3 or 2, 1.
template <bool kNv, int kGroup, int kParts, DType kSc, bool kVbmi>
void tile_all_tokens(const TileRef& tr, const Q4Int8Prepared& p, const int32_t* off, int64_t cols,
                     int64_t n_tok, int64_t rb, __mmask16 rmask, float* y, int64_t ldy,
                     int64_t pf = 0) {
  int64_t t0 = 0;
  auto pass = [&](auto nt) {  // the first pass reads the tile from memory
    tile_tokens<kNv, kGroup, kParts, nt(), kSc, kVbmi>(tr, p, off, cols, t0, rb, rmask, y, ldy,
                                                       t0 == 0 ? pf : 0);
    t0 += nt();
  };
  while (t0 + kTokBlock <= n_tok) pass(std::integral_constant<int, kTokBlock>{});
  if (n_tok - t0 >= 4) pass(std::integral_constant<int, 4>{});
  if (n_tok - t0 == 3) pass(std::integral_constant<int, 3>{});  // a verify of 3 rows: one pass
  if (n_tok - t0 >= 2) pass(std::integral_constant<int, 2>{});
  if (n_tok - t0 >= 1) pass(std::integral_constant<int, 1>{});
}

template <bool kNv, int kGroup, int kParts, bool kVbmi>
void gemm(Scratch& s, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1, float* y,
          int64_t ldy) {
  for (int64_t rb = r0; rb < r1; rb += kRows) {
    const int nr = int(std::min<int64_t>(kRows, r1 - rb));
    const __mmask16 rmask = __mmask16((1u << nr) - 1);
    const TileRef tr = pack_tile<kNv>(w, rb, nr, s);
    tile_all_tokens<kNv, kGroup, kParts, DType::F32, kVbmi>(tr, s.p, s.off.data(), w.cols, n_tok,
                                                            rb, rmask, y, ldy);
  }
}

int64_t tile_prefetch() {
  static const int64_t d = [] {
    const char* e = std::getenv("INKLING_TILE_PF");
    return e ? std::atoll(e) : int64_t(4096);
  }();
  return d;
}

// The same over load-time tiles: tile rb / 16 of the view, rows outside [r0, r1) masked.
template <bool kNv, int kGroup, int kParts, DType kSc, bool kVbmi>
void gemm_tiles(const Scratch& s, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1, float* y,
                int64_t ldy) {
  const int64_t fac_bytes = w.cols / kGroup * kRows * int64_t(dtype_size(kSc));
  const int64_t code_bytes = w.cols / 32 * 4 * 64;
  const float k128 = kNv && nvfp4_avx512::folds(w.scale2) ? 128.f * w.scale2 : 0.f;
  for (int64_t rb = r0 - r0 % kRows; rb < r1; rb += kRows) {
    const int lo = int(std::max(r0, rb) - rb), hi = int(std::min(r1, rb + kRows) - rb);
    const __mmask16 rmask = __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
    const uint8_t* t = w.tiles + (rb / kRows) * w.tile_stride;
    const TileRef tr{t, t + code_bytes, kNv ? nullptr : t + code_bytes + fac_bytes, w.scale2, k128};
    tile_all_tokens<kNv, kGroup, kParts, kSc, kVbmi>(tr, s.p, s.off.data(), w.cols, n_tok, rb,
                                                     rmask, y, ldy, tile_prefetch());
  }
}

bool cpu_has_gemm() {
  return q4_int8_wide_cpu() && q4_int8_cpu_f16c();
}

bool vbmi_cpu() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
  }();
  return has;
}

bool cpu_has_vbmi() {
  return g_vbmi.enabled(vbmi_cpu());
}

}  // namespace
#endif  // INKLING_HAVE_Q4GEMM

int64_t q4_int8_tile_stride(const MatView& w) {
  if (!q4_int8_gemm_handles(w) || !w.scales) return 0;
  const bool nv = w.format == WeightFormat::kNvfp4;
  if (nv ? w.scale_dtype != DType::F8_E4M3
         : w.scale_dtype != DType::BF16 && w.scale_dtype != DType::F16 &&
               w.scale_dtype != DType::F32)
    return 0;
  const int64_t es = int64_t(dtype_size(w.scale_dtype));
  const int64_t bytes = w.cols / 32 * 4 * 64 + (nv ? 1 : 2) * (w.cols / w.group) * 16 * es;
  return (bytes + 63) / 64 * 64;
}

int64_t q4_int8_tiles_bytes(const MatView& w) {
  return (w.rows + 15) / 16 * q4_int8_tile_stride(w);
}

void q4_int8_pack_tiles(const MatView& w, uint8_t* out) {
  const int64_t stride = q4_int8_tile_stride(w);
  INK_CHECK(stride > 0);
  const int64_t nb = w.cols / 32, ng = w.cols / w.group;
  const size_t es = dtype_size(w.scale_dtype);
  const bool nv = w.format == WeightFormat::kNvfp4;
  for (int64_t rb = 0; rb < w.rows; rb += 16) {
    uint8_t* t = out + (rb / 16) * stride;
    uint8_t* fac = t + nb * 4 * 64;
    uint8_t* bias = fac + ng * 16 * int64_t(es);  // affine only
    for (int i = 0; i < 16; ++i) {
      const int64_t r = std::min(rb + i, w.rows - 1);  // a short last tile repeats its last row
      const uint8_t* src = w.row(r);
      for (int64_t b = 0; b < nb; ++b)
        for (int j = 0; j < 4; ++j)
          std::memcpy(t + (4 * b + j) * 64 + 4 * i, src + 16 * b + 4 * j, 4);
      const size_t soff = size_t(r * w.scale_stride) * es;
      for (int64_t g = 0; g < ng; ++g) {
        std::memcpy(fac + (g * 16 + i) * int64_t(es), w.scales + soff + size_t(g) * es, es);
        if (!nv)
          std::memcpy(bias + (g * 16 + i) * int64_t(es), w.biases + soff + size_t(g) * es, es);
      }
    }
    const int64_t used = nb * 4 * 64 + (nv ? 1 : 2) * ng * 16 * int64_t(es);
    std::memset(t + used, 0, size_t(stride - used));
  }
}

bool q4_int8_gemm_available() {
#if INKLING_HAVE_Q4GEMM
  static const bool has = cpu_has_gemm();
  return has;
#else
  return false;
#endif
}

bool q4_int8_gemm_enabled() {
  return g_switch.enabled(q4_int8_gemm_available());
}

void set_q4_int8_gemm_enabled(bool on) {
  g_switch.set(on, q4_int8_gemm_available());
}

void set_q4_int8_vbmi_enabled(bool on) {
#if INKLING_HAVE_Q4GEMM
  g_vbmi.set(on, vbmi_cpu());
#else
  (void)on;
#endif
}

bool q4_int8_tiles_enabled() {
  return g_tiles.enabled(q4_int8_gemm_enabled());
}

void set_q4_int8_tiles_enabled(bool on) {
  g_tiles.set(on, q4_int8_gemm_enabled());
}

void q4_int8_gemm_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                             int64_t r0, int64_t r1, float* y, int64_t ldy, int parts) {
#if INKLING_HAVE_Q4GEMM
  thread_local Scratch s;
  q4_int8_prepare(x, n_tok, ldx, w, parts, false, s.p);
  if (w.format == WeightFormat::kNvfp4) nv_offsets(s.p, n_tok, w.cols, parts, s);
  auto run = [&](auto nv, auto group, auto np, auto vbmi) {
    if (w.tiles) {
      if constexpr (nv()) {
        return gemm_tiles<true, group(), np(), DType::F8_E4M3, vbmi()>(s, n_tok, w, r0, r1, y, ldy);
      } else {
        switch (w.scale_dtype) {
          case DType::BF16:
            return gemm_tiles<false, group(), np(), DType::BF16, vbmi()>(s, n_tok, w, r0, r1, y,
                                                                         ldy);
          case DType::F16:
            return gemm_tiles<false, group(), np(), DType::F16, vbmi()>(s, n_tok, w, r0, r1, y,
                                                                        ldy);
          default:
            return gemm_tiles<false, group(), np(), DType::F32, vbmi()>(s, n_tok, w, r0, r1, y,
                                                                        ldy);
        }
      }
    }
    gemm<nv(), group(), np(), vbmi()>(s, n_tok, w, r0, r1, y, ldy);
  };
  const bool vbmi = cpu_has_vbmi();
  q4_int8_dispatch(w, parts, [&](auto nv, auto group, auto np) {
    if (vbmi) return run(nv, group, np, std::true_type{});
    run(nv, group, np, std::false_type{});
  });
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy, (void)parts;
#endif
}

void q4_int8_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  q4_int8_gemm_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 1);
}

void q4_int8_gemm_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy) {
  q4_int8_gemm_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 2);
}

}  // namespace inkling
