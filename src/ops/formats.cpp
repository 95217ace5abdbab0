// The weight-format registry (see formats.h): the table of formats, and for each the kernels it
// binds per shape class on this CPU. The only place that knows which kernel file runs which
// format; the kernels themselves live in dense_scalar.cpp, matmul_hwy.cpp, amx_gemm.cpp,
// quant_matmul.cpp, quant_q4_bf16dot.cpp and quant_q4_int8.cpp, each with a scalar twin
// (ops/reference, quant_matmul_rows_ref).
#include "ops/formats.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ops/amx_gemm.h"
#include "ops/bf16_tile_gemm.h"
#include "ops/dense_bf16dot.h"
#include "ops/dense_scalar.h"
#include "ops/dense_widen_fast.h"
#include "ops/matmul_hwy.h"
#include "ops/mxfp8_via_bf16.h"
#include "ops/quant.h"
#include "ops/quant_affine_bf16dot.h"
#include "ops/quant_affine_vnni.h"
#include "ops/quant_affine_words.h"
#include "ops/quant_matmul.h"
#include "ops/quant_q4_bf16dot.h"
#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_gemm.h"

namespace inkling {

namespace {

// Kernels by name, as the sets below combine them.
constexpr Kernel kHwyMatvec{"hwy matvec", hwy_matvec_rows};
constexpr Kernel kHwyGemm{"hwy gemm", hwy_gemm_rows};
constexpr Kernel kAmxGemm{"amx-bf16 gemm", amx_gemm_rows};
constexpr Kernel kScalarWiden{"scalar widen", dense_widen_rows};
constexpr Kernel kHwyQuant{"hwy quant", quant_matmul_rows};
constexpr Kernel kHwyGemmQ4{"hwy gemm q4", hwy_gemm_rows};
constexpr Kernel kBf16DotQ4{"avx512-bf16 q4", q4_bf16dot_rows};
constexpr Kernel kHwyAffineWords{"hwy affine words", affine_words_rows};
constexpr Kernel kBf16DotAffine{"avx512-bf16 affine", affine_bf16dot_rows};
constexpr Kernel kVnniQ4{"avx512-vnni q4", affine_vnni_rows};
constexpr Kernel kVnniQ8{"avx512-vnni q8", affine_vnni_rows};
constexpr Kernel kVnniAffine{"avx512-vnni affine", affine_vnni_rows};
// Fast numerics (include/inkling/numerics.h): activations rounded for the product.
constexpr Kernel kBf16DotDense{"avx512-bf16 dot (x bf16)", dense_bf16dot_rows};
constexpr Kernel kBf16TileFast{"avx512-bf16 tile gemm (x bf16)", bf16_tile_gemm_fast_rows};
constexpr Kernel kAmxGemmFast{"amx-bf16 gemm (x bf16)", amx_gemm_fast_rows};
// Without AVX512-BF16: x kept f32, one FMA chain per (row, token) (dense_widen_fast.h).
constexpr Kernel kWidenFast{"avx512 widen (one chain)", dense_widen_fast_rows};
constexpr Kernel kVnniFast{"avx512-vnni (x int8)", affine_vnni_fast_rows};
constexpr Kernel kVnniFine{"avx512-vnni (x 2 x int8)", affine_vnni_fine_rows};
constexpr Kernel kBf16DotQ4Fast{"avx512-bf16 q4 (x bf16)", q4_bf16dot_fast_rows};
constexpr Kernel kQ4Int8Fine{"avx2 q4 (x 2 x int8)", q4_int8_fine_rows};
// The same function in its 512-bit form (bitwise the same results; quant_q4_int8.h).
constexpr Kernel kQ4Int8FineWide{"avx512-vnni q4 (x 2 x int8)", q4_int8_fine_rows};
// Fast prefill (17+ tokens) against affine 4-bit and NVFP4 with AVX512-VNNI
// (quant_q4_int8_gemm.h): one int8 part of x for the routed experts, two for the rest.
constexpr Kernel kQ4Int8Gemm[2] = {{"avx512-vnni gemm q4 (x int8)", q4_int8_gemm_rows},
                                   {"avx512-vnni gemm q4 (x 2 x int8)", q4_int8_gemm_fine_rows}};

// Affine widths other than 4 and 8 with AVX512-BF16 + VBMI take affine_bf16dot_rows for 1..16
// tokens, affine 4-bit and NVFP4 q4_bf16dot_rows: one kernel per view for every token count up
// to kFewMaxTokens keeps each row's result independent of the batch (formats.h).

// Affine widths other than 4, 17+ tokens: below 32 tokens the word-lane kernel (a pass over the
// rows per 4 tokens) measured 1.3-2.5x faster than the gemm, whose tile dequantization is paid
// for by few tokens only (Zen 4, codes in DRAM and in cache, 3 and 8 bits); from 32 the gemm.
constexpr int64_t kAffineGemmMinTokens = 32;
void affine_words_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (n_tok < kAffineGemmMinTokens)
    affine_words_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
  else
    hwy_gemm_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
}
constexpr Kernel kAffineWordsGemm{"hwy affine words (17-31 tokens) / hwy gemm affine",
                                  affine_words_gemm_rows};
// The same functions on 8-bit views run byte loads in natural column order (a code is a byte).
constexpr Kernel kHwyAffineBytes{"hwy affine bytes", affine_words_rows};
constexpr Kernel kAffineBytesGemm{"hwy affine bytes (17-31 tokens) / hwy gemm affine",
                                  affine_words_gemm_rows};

// --- dense ---------------------------------------------------------------------------------

constexpr KernelSet kDenseHwy{{kHwyMatvec, kHwyMatvec, kHwyGemm}, dense_dequant_row};
// bf16 on CPUs with AMX-BF16 (ops/amx_gemm.h): the tile gemm for 17+ tokens only, so the 1..16
// token kernels (and their row-count invariance) are the same as without AMX.
constexpr KernelSet kDenseBf16Amx{{kHwyMatvec, kHwyMatvec, kAmxGemm}, dense_dequant_row};
// (Widened for every token count: one summation order per row, formats.h.)
constexpr KernelSet kDenseScalar{{kScalarWiden, kScalarWiden, kScalarWiden}, dense_dequant_row};

double dense_bytes(const MatView& w) {
  return double(dtype_size(w.dtype));
}
std::string dense_label(const MatView& w) {
  return dtype_name(w.dtype);
}

template <DType T>
bool is_dense(const MatView& w) {
  return w.format == WeightFormat::kDense && w.dtype == T;
}

// Fast bf16: x rounded to bf16 meets the stored weights in VDPBF16PS (1..16 tokens) and in the
// tile gemm (AMX where enabled, else AVX512-BF16) for 17+.
constexpr KernelSet kDenseBf16Fast{{kBf16DotDense, kBf16DotDense, kBf16TileFast},
                                   dense_dequant_row};
constexpr KernelSet kDenseBf16FastAmx{{kBf16DotDense, kBf16DotDense, kAmxGemmFast},
                                      dense_dequant_row};
// Fast bf16 on AVX-512 without AVX512-BF16: the one-chain widening kernel for 1..16 tokens, the
// exact gemm for 17+.
constexpr KernelSet kDenseBf16Widen{{kWidenFast, kWidenFast, kHwyGemm}, dense_dequant_row};

const KernelSet* select_dense_hwy(const MatView&, KernelMode) {
  return &kDenseHwy;  // f32 weights keep f32 products in both modes
}
// On Intel's AVX512-BF16 CPUs (bf16dot_preferred() false) the widening kernel takes fast bf16
// where it runs, with the exact gemm (or AMX's) for 17+.
constexpr KernelSet kDenseBf16WidenAmx{{kWidenFast, kWidenFast, kAmxGemmFast}, dense_dequant_row};
const KernelSet* select_dense_bf16(const MatView& w, KernelMode m) {
  const bool amx = amx_gemm_handles(w) && amx_gemm_enabled();
  if (m != KernelMode::kExact) {
    const bool dot = dense_bf16dot_available() && dense_bf16dot_handles(w, 1);
    const bool widen = dense_widen_fast_available() && dense_widen_fast_handles(w, 1);
    if (dot && (bf16dot_preferred() || !widen)) return amx ? &kDenseBf16FastAmx : &kDenseBf16Fast;
    if (widen) return amx ? &kDenseBf16WidenAmx : &kDenseBf16Widen;
  }
  return amx ? &kDenseBf16Amx : &kDenseHwy;
}
const KernelSet* select_dense_scalar(const MatView&, KernelMode) {
  return &kDenseScalar;
}

// --- quantized -----------------------------------------------------------------------------

// Codes plus the scales (and biases) of their group, per element.
double quant_bytes(const MatView& w) {
  const double sidecar = double(dtype_size(w.scale_dtype)) * (w.biases ? 2 : 1);
  return double(w.bits) / 8.0 + sidecar / double(std::max(w.group, 1));
}
std::string affine_label(const MatView& w) {
  return "affine q" + std::to_string(w.bits) + "/g" + std::to_string(w.group);
}
std::string nvfp4_label(const MatView&) {
  return "nvfp4";
}
std::string mxfp8_label(const MatView&) {
  return "mxfp8";
}

bool groups_fit(const MatView& w) {
  return w.group > 0 && w.cols % w.group == 0;
}

template <int Bits>
bool is_affine(const MatView& w) {
  return w.format == WeightFormat::kAffine && w.bits == Bits;
}
bool is_nvfp4(const MatView& w) {
  return w.format == WeightFormat::kNvfp4;
}
bool is_mxfp8(const MatView& w) {
  return w.format == WeightFormat::kMxfp8;
}

// [bf16 dot][gemm q4]
constexpr KernelSet kAffine4[2][2] = {{{{kHwyQuant, kHwyQuant, kHwyQuant}, affine_dequant_row},
                                       {{kHwyQuant, kHwyQuant, kHwyGemmQ4}, affine_dequant_row}},
                                      {{{kBf16DotQ4, kBf16DotQ4, kHwyQuant}, affine_dequant_row},
                                       {{kBf16DotQ4, kBf16DotQ4, kHwyGemmQ4}, affine_dequant_row}}};
// Affine 4-bit with AVX512-VNNI (quant_affine_vnni.h: x in int8 parts) for 1..16 tokens; [gemm q4].
constexpr KernelSet kAffine4Vnni[2] = {{{kVnniQ4, kVnniQ4, kHwyQuant}, affine_dequant_row},
                                       {{kVnniQ4, kVnniQ4, kHwyGemmQ4}, affine_dequant_row}};
// 8-bit with a group the word-lane kernels do not take (other than 32, 64, 128).
constexpr KernelSet kAffine8{{kHwyQuant, kHwyQuant, kHwyQuant}, affine_dequant_row};
// 8 bits, groups 32/64/128: byte loads for 1-31 tokens, the gemm for 32+ (8-bit codes are not
// bf16 numbers once offset, so no AVX512-BF16 kernel).
constexpr KernelSet kAffineBytes{{kHwyAffineBytes, kHwyAffineBytes, kAffineBytesGemm},
                                 affine_dequant_row};
// The same with AVX512-VNNI for 1..16 tokens (the codes are already bytes).
constexpr KernelSet kAffineBytesVnni{{kVnniQ8, kVnniQ8, kAffineBytesGemm}, affine_dequant_row};
// Every other MLX width (1, 2, 3, 5, 6 bits): the word-lane kernels, the gemm on tiles
// dequantized once for 32+ tokens; with AVX512-BF16 + VBMI that kernel for 1-16 tokens.
// With AVX512-VNNI + VBMI (x in int8 parts, quant_affine_vnni.h) for 1-16 tokens where the
// AVX512-BF16 kernel is not available.
constexpr KernelSet kAffineWordsVnni{{kVnniAffine, kVnniAffine, kAffineWordsGemm},
                                     affine_dequant_row};
// Fast numerics with AVX512-VNNI for 1..16 tokens, every width: [fine] one / two int8 parts of x.
constexpr KernelSet kAffine4VnniFast[2][2] = {
    {{{kVnniFast, kVnniFast, kHwyQuant}, affine_dequant_row},
     {{kVnniFast, kVnniFast, kHwyGemmQ4}, affine_dequant_row}},
    {{{kVnniFine, kVnniFine, kHwyQuant}, affine_dequant_row},
     {{kVnniFine, kVnniFine, kHwyGemmQ4}, affine_dequant_row}}};
constexpr KernelSet kAffineBytesVnniFast[2] = {
    {{kVnniFast, kVnniFast, kAffineBytesGemm}, affine_dequant_row},
    {{kVnniFine, kVnniFine, kAffineBytesGemm}, affine_dequant_row}};
constexpr KernelSet kAffineWordsVnniFast[2] = {
    {{kVnniFast, kVnniFast, kAffineWordsGemm}, affine_dequant_row},
    {{kVnniFine, kVnniFine, kAffineWordsGemm}, affine_dequant_row}};
constexpr KernelSet kAffineWords[2] = {
    {{kHwyAffineWords, kHwyAffineWords, kAffineWordsGemm}, affine_dequant_row},
    {{kBf16DotAffine, kBf16DotAffine, kAffineWordsGemm}, affine_dequant_row}};
constexpr KernelSet kNvfp4[2][2] = {{{{kHwyQuant, kHwyQuant, kHwyQuant}, nvfp4_dequant_row},
                                     {{kHwyQuant, kHwyQuant, kHwyGemmQ4}, nvfp4_dequant_row}},
                                    {{{kBf16DotQ4, kBf16DotQ4, kHwyQuant}, nvfp4_dequant_row},
                                     {{kBf16DotQ4, kBf16DotQ4, kHwyGemmQ4}, nvfp4_dequant_row}}};

// The bf16-dot kernel takes a view for 1 token exactly when it takes it for every token count
// it handles (1-16), so one question decides the set.
bool bf16dot_for(const MatView& w) {
  return q4_bf16dot_enabled() && q4_bf16dot_handles(w, 1);
}

// The VNNI kernel takes a view for every token count 1..16 exactly when it takes it for 1.
bool vnni_for(const MatView& w) {
  return affine_vnni_enabled() && affine_vnni_handles(w, 1);
}

// Fast NVFP4 (and 4-bit affine without VNNI): x rounded to bf16 in the AVX512-BF16 kernel.
constexpr KernelSet kNvfp4Fast[2] = {
    {{kBf16DotQ4Fast, kBf16DotQ4Fast, kHwyQuant}, nvfp4_dequant_row},
    {{kBf16DotQ4Fast, kBf16DotQ4Fast, kHwyGemmQ4}, nvfp4_dequant_row}};
constexpr KernelSet kAffine4Bf16Fast[2] = {
    {{kBf16DotQ4Fast, kBf16DotQ4Fast, kHwyQuant}, affine_dequant_row},
    {{kBf16DotQ4Fast, kBf16DotQ4Fast, kHwyGemmQ4}, affine_dequant_row}};

// Fast numerics on CPUs without the AVX-512 fast kernels (AVX2 hosts): x in two int8 parts per
// block of 32 (quant_q4_int8.h) for 1..16 tokens, for the routed experts too: on the 4-bit slice
// whole-model decode measured the same with one part (20-22 tok/s, memory-bound) while the demo
// model's 4-bit KL fell from 2.1e-4 (one part for the experts) to 3e-8, and the random Inkling 2
// fixtures, which one part left past transformers' own bf16 error, to 0.005 of max|logit|.
// On CPUs with AVX512-VNNI that kernel runs in its 512-bit form: it takes NVFP4 there (where
// no AVX512-BF16 kernel is), 1.1-1.2x the AVX2 form's GB/s on Ice Lake; affine 4-bit keeps the
// VNNI lane-set kernel, 1.7x it there. [512-bit form][gemm q4].
constexpr KernelSet kAffine4Int8[2][2] = {
    {{{kQ4Int8Fine, kQ4Int8Fine, kHwyQuant}, affine_dequant_row},
     {{kQ4Int8Fine, kQ4Int8Fine, kHwyGemmQ4}, affine_dequant_row}},
    {{{kQ4Int8FineWide, kQ4Int8FineWide, kHwyQuant}, affine_dequant_row},
     {{kQ4Int8FineWide, kQ4Int8FineWide, kHwyGemmQ4}, affine_dequant_row}}};
constexpr KernelSet kNvfp4Int8[2][2] = {
    {{{kQ4Int8Fine, kQ4Int8Fine, kHwyQuant}, nvfp4_dequant_row},
     {{kQ4Int8Fine, kQ4Int8Fine, kHwyGemmQ4}, nvfp4_dequant_row}},
    {{{kQ4Int8FineWide, kQ4Int8FineWide, kHwyQuant}, nvfp4_dequant_row},
     {{kQ4Int8FineWide, kQ4Int8FineWide, kHwyGemmQ4}, nvfp4_dequant_row}}};
// With the int8 prefill gemm: affine 4-bit on the VNNI decode kernels ([fine]: one int8 part of
// x for the routed experts, two for the rest, as those decode kernels take them: on the trained
// demo model's 4-bit copy prefill KL 1.9e-4 with one part for the experts, 1.0e-6 with two, and
// one part makes the gemm 1.8x the exact one on Ice Lake where two parts are 1.05x); NVFP4 with
// two parts in both grades, as its decode kernel (on the random Inkling 2 Mini fixture one part
// for the experts left the logits 1.39 of max|logit| from transformers f32, past its own bf16
// run's 1.34; two parts 0.72), on the 512-bit int8 decode kernel (CPUs without AVX512-BF16) or
// the AVX512-BF16 one.
constexpr KernelSet kAffine4VnniFastGemm[2] = {
    {{kVnniFast, kVnniFast, kQ4Int8Gemm[0]}, affine_dequant_row},
    {{kVnniFine, kVnniFine, kQ4Int8Gemm[1]}, affine_dequant_row}};
constexpr KernelSet kNvfp4Int8Gemm{{kQ4Int8FineWide, kQ4Int8FineWide, kQ4Int8Gemm[1]},
                                   nvfp4_dequant_row};
constexpr KernelSet kNvfp4Bf16FastGemm{{kBf16DotQ4Fast, kBf16DotQ4Fast, kQ4Int8Gemm[1]},
                                       nvfp4_dequant_row};
// Affine 4-bit on the 512-bit int8 decode kernel (AVX512-VNNI without VBMI, e.g. Cascade Lake,
// where the lane-set kernel does not run): two parts in both grades, as that decode kernel.
constexpr KernelSet kAffine4Int8Gemm{{kQ4Int8FineWide, kQ4Int8FineWide, kQ4Int8Gemm[1]},
                                     affine_dequant_row};
// Affine 4-bit with load-time tiles (fast numerics, MatView::tiles): the int8 gemm for every
// count of tokens, its regrouping done once at load, so a (row, token) has the same bits decoded,
// batched, verified or prefilled. One int8 part of x per block of 32 for the routed experts, two
// for the rest, as the gemm takes them for 17+ tokens.
constexpr Kernel kQ4Tiles[2] = {{"avx512-vnni tiles q4 (x int8)", q4_int8_gemm_rows},
                                {"avx512-vnni tiles q4 (x 2 x int8)", q4_int8_gemm_fine_rows}};
constexpr KernelSet kAffine4Tiles[2] = {
    {{kQ4Tiles[0], kQ4Tiles[0], kQ4Tiles[0]}, affine_dequant_row},
    {{kQ4Tiles[1], kQ4Tiles[1], kQ4Tiles[1]}, affine_dequant_row}};
bool gemm_for(const MatView& w, KernelMode m) {
  return m != KernelMode::kExact && q4_int8_gemm_enabled() && q4_int8_gemm_handles(w);
}

bool int8_for(const MatView& w, KernelMode m) {
  return m != KernelMode::kExact && q4_int8_enabled() && q4_int8_handles(w, 1);
}

const KernelSet* select_affine4(const MatView& w, KernelMode m) {
  if (!groups_fit(w)) return nullptr;
  const bool fine = m == KernelMode::kFastFine;
  if (w.tiles && gemm_for(w, m)) return &kAffine4Tiles[fine];
  if (vnni_for(w)) {
    if (m == KernelMode::kExact) return &kAffine4Vnni[hwy_gemm_q4_supported(w)];
    if (gemm_for(w, m)) return &kAffine4VnniFastGemm[fine];
    return &kAffine4VnniFast[fine][hwy_gemm_q4_supported(w)];
  }
  if (m != KernelMode::kExact && bf16dot_for(w)) return &kAffine4Bf16Fast[hwy_gemm_q4_supported(w)];
  if (int8_for(w, m)) {
    if (q4_int8_wide_enabled() && gemm_for(w, m)) return &kAffine4Int8Gemm;
    return &kAffine4Int8[q4_int8_wide_enabled()][hwy_gemm_q4_supported(w)];
  }
  return &kAffine4[bf16dot_for(w)][hwy_gemm_q4_supported(w)];
}
const KernelSet* select_affine8(const MatView& w, KernelMode m) {
  if (affine_words_supported(w) && hwy_gemm_affine_supported(w)) {
    if (!vnni_for(w)) return &kAffineBytes;
    return m == KernelMode::kExact ? &kAffineBytesVnni
                                   : &kAffineBytesVnniFast[m == KernelMode::kFastFine];
  }
  return groups_fit(w) ? &kAffine8 : nullptr;
}
const KernelSet* select_affine_words(const MatView& w, KernelMode m) {
  if (!affine_words_supported(w) || !hwy_gemm_affine_supported(w)) return nullptr;
  if (m != KernelMode::kExact && vnni_for(w))
    return &kAffineWordsVnniFast[m == KernelMode::kFastFine];
  const bool bf16 =
      q4_bf16dot_enabled() && affine_bf16dot_available() && affine_bf16dot_handles(w, 1);
  // The exact AVX512-BF16 kernel where the CPU has it: for these widths the VNNI kernel measured
  // no faster on Zen 4 (per 64 columns its span overhead meets only 8 * bits bytes of codes); it
  // takes them on CPUs with VNNI + VBMI but no AVX512-BF16 (Ice Lake server), or
  // INKLING_NO_BF16DOT.
  if (!bf16 && vnni_for(w)) return &kAffineWordsVnni;
  return &kAffineWords[bf16];
}
// NVFP4 with load-time tiles (fast numerics): the int8 gemm for every count of tokens, two int8
// parts of x in both grades, as NVFP4's int8 decode kernel and gemm take them.
constexpr KernelSet kNvfp4Tiles{{kQ4Tiles[1], kQ4Tiles[1], kQ4Tiles[1]}, nvfp4_dequant_row};
const KernelSet* select_nvfp4(const MatView& w, KernelMode m) {
  if (w.group != 16 || w.cols % 16 != 0) return nullptr;
  if (w.tiles && gemm_for(w, m)) return &kNvfp4Tiles;
  if (m != KernelMode::kExact && bf16dot_for(w) && (bf16dot_preferred() || !int8_for(w, m))) {
    if (gemm_for(w, m)) return &kNvfp4Bf16FastGemm;
    return &kNvfp4Fast[hwy_gemm_q4_supported(w)];
  }
  if (int8_for(w, m)) {
    if (q4_int8_wide_enabled() && gemm_for(w, m)) return &kNvfp4Int8Gemm;
    return &kNvfp4Int8[q4_int8_wide_enabled()][hwy_gemm_q4_supported(w)];
  }
  return &kNvfp4[bf16dot_for(w)][hwy_gemm_q4_supported(w)];
}

// MXFP8 (Inkling 2's experts): the Highway kernel for 1..16 tokens (x exact in f32 against the
// E4M3 values), the gemm on tiles dequantized once for 17+. Fast numerics, 1..16 tokens: the
// blocks made bf16 in registers, then x rounded to bf16 (VDPBF16PS, dense_bf16dot.h) or kept f32
// (the widening kernel, dense_widen_fast.h); 17+: mxfp8_via_bf16.h; CPUs without AVX-512 run the
// exact kernels.
constexpr Kernel kHwyMxfp8{"hwy mxfp8", quant_matmul_rows};
constexpr Kernel kHwyGemmMxfp8{"hwy gemm mxfp8", hwy_gemm_rows};
constexpr Kernel kBf16DotMxfp8{"avx512-bf16 mxfp8 (x bf16)", mxfp8_bf16dot_rows};
constexpr KernelSet kMxfp8[2] = {{{kHwyMxfp8, kHwyMxfp8, kHwyMxfp8}, mxfp8_dequant_row},
                                 {{kHwyMxfp8, kHwyMxfp8, kHwyGemmMxfp8}, mxfp8_dequant_row}};
constexpr Kernel kWidenMxfp8{"avx512 widen mxfp8 (one chain)", mxfp8_widen_fast_rows};
constexpr Kernel kViaBf16Mxfp8{"mxfp8 as bf16 (the bf16 gemm)", mxfp8_via_bf16_rows};
constexpr KernelSet kMxfp8Fast{{kBf16DotMxfp8, kBf16DotMxfp8, kViaBf16Mxfp8}, mxfp8_dequant_row};
constexpr KernelSet kMxfp8Widen{{kWidenMxfp8, kWidenMxfp8, kViaBf16Mxfp8}, mxfp8_dequant_row};
// Fast MXFP8 takes the kernels fast bf16 takes on this CPU (1..16 tokens: the same rule as
// select_dense_bf16; 17+: rows made bf16, then the bf16 view's gemm), so a model's MXFP8 weights
// and their bf16 conversion give the same bits.
const KernelSet* select_mxfp8(const MatView& w, KernelMode m) {
  if (!mxfp8_whole_blocks(w)) return nullptr;
  const bool gemm = hwy_gemm_mxfp8_supported(w);
  if (m != KernelMode::kExact) {
    const bool dot = dense_bf16dot_available() && mxfp8_bf16dot_handles(w, 1);
    const bool widen = dense_widen_fast_available() && mxfp8_widen_fast_handles(w, 1);
    if (dot && (bf16dot_preferred() || !widen)) return &kMxfp8Fast;
    if (widen) return &kMxfp8Widen;
  }
  return &kMxfp8[gemm];
}

const FormatEntry kFormats[] = {
    {"F32", WeightFormat::kDense, is_dense<DType::F32>, dense_bytes, dense_label, select_dense_hwy},
    {"BF16", WeightFormat::kDense, is_dense<DType::BF16>, dense_bytes, dense_label,
     select_dense_bf16},
    {"F16", WeightFormat::kDense, is_dense<DType::F16>, dense_bytes, dense_label,
     select_dense_scalar},
    {"affine q4", WeightFormat::kAffine, is_affine<4>, quant_bytes, affine_label, select_affine4},
    {"affine q8", WeightFormat::kAffine, is_affine<8>, quant_bytes, affine_label, select_affine8},
    {"affine q1", WeightFormat::kAffine, is_affine<1>, quant_bytes, affine_label,
     select_affine_words},
    {"affine q2", WeightFormat::kAffine, is_affine<2>, quant_bytes, affine_label,
     select_affine_words},
    {"affine q3", WeightFormat::kAffine, is_affine<3>, quant_bytes, affine_label,
     select_affine_words},
    {"affine q5", WeightFormat::kAffine, is_affine<5>, quant_bytes, affine_label,
     select_affine_words},
    {"affine q6", WeightFormat::kAffine, is_affine<6>, quant_bytes, affine_label,
     select_affine_words},
    {"nvfp4", WeightFormat::kNvfp4, is_nvfp4, quant_bytes, nvfp4_label, select_nvfp4},
    {"mxfp8", WeightFormat::kMxfp8, is_mxfp8, quant_bytes, mxfp8_label, select_mxfp8},
};

}  // namespace

std::span<const FormatEntry> weight_formats() {
  return kFormats;
}

const FormatEntry* find_format(const MatView& w) {
  for (const FormatEntry& f : kFormats)
    if (f.matches(w)) return &f;
  return nullptr;
}

bool bind_kernels(MatView& w, KernelMode m) {
  const FormatEntry* f = find_format(w);
  const KernelSet* k = f ? f->select(w, m) : nullptr;
  if (!k) return false;
  w.kernels = k;
  return true;
}

const KernelSet& kernels_of(const MatView& w) {
  if (w.kernels) return *w.kernels;
  const FormatEntry* f = find_format(w);
  const KernelSet* k = f ? f->select(w, KernelMode::kExact) : nullptr;
  if (!k) {
    std::fprintf(stderr, "inkling: no kernel for weight storage %s (%lld x %lld)\n",
                 format_label(w).c_str(), static_cast<long long>(w.rows),
                 static_cast<long long>(w.cols));
    std::abort();
  }
  return *k;
}

double bytes_per_element(const MatView& w) {
  const FormatEntry* f = find_format(w);
  return f ? f->bytes_per_element(w) : 0.0;
}

uint64_t view_bytes(const MatView& w) {
  return uint64_t(std::llround(bytes_per_element(w) * double(w.rows) * double(w.cols)));
}

std::string format_label(const MatView& w) {
  if (const FormatEntry* f = find_format(w)) return f->label(w);
  return std::string("unregistered ") + dtype_name(w.dtype) + " bits " + std::to_string(w.bits);
}

}  // namespace inkling
