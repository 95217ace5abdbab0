// The weight-format registry: one entry per storage format (dense F32/BF16/F16, MLX affine by
// bit width, NVFP4, MXFP8) with its name, its bytes per element and its kernels per shape class.
// The kernels for a weight are chosen once, when the weight is bound (bind_kernels), from the
// format, its parameters and what this CPU can run; matmul() then calls the bound kernel directly.
//
// Adding a format: a WeightFormat family (ops/weight_view.h) if it is a new kind of storage, its
// kernel file(s) with a scalar twin, and one entry in formats.cpp. Nothing in src/model changes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "inkling/numerics.h"
#include "ops/weight_view.h"

namespace inkling {

// Rows [r0, r1) of y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for t < n_tok.
// Single-threaded; matmul() splits rows over the pool.
using RowsKernel = void (*)(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy);
// The w.cols values of row r as f32 (embedding lookups, references, slices).
using DequantRowKernel = void (*)(const MatView& w, int64_t r, float* out);

// Shape classes of a product, by the number of tokens (rows of x).
//
// Row-count invariance: for every format, the kOne and kFew kernels bound to a view compute each
// (weight row, token) product with the same instructions on the same values, whatever the number
// of tokens (1..kFewMaxTokens) and rows in the call. So a token's result is bitwise the same
// decoded alone, verified with up to 15 drafts (speculative decoding) or batched with up to 15
// other sessions: greedy speculative decoding is token-identical to plain greedy decoding. The
// kGemm class (prefill chunks of 17+ tokens) sums in its own order and is not covered.
enum class ShapeClass : uint8_t {
  kOne,   // 1 token: decode
  kFew,   // 2..16 tokens: small expert groups, batched decode, speculative verification
  kGemm,  // 17+ tokens: prefill; weight tiles are reused by every token
};
constexpr int64_t kFewMaxTokens = 16;
constexpr int64_t kGemmMinTokens = kFewMaxTokens + 1;
constexpr ShapeClass shape_class(int64_t n_tok) {
  return n_tok <= 1 ? ShapeClass::kOne
                    : (n_tok < kGemmMinTokens ? ShapeClass::kFew : ShapeClass::kGemm);
}

struct Kernel {
  const char* name = "";  // "hwy matvec", "avx512-bf16 q4", ... (logs, `inkling bench`)
  RowsKernel rows = nullptr;
};

// What the registry binds to a view: a kernel per shape class and the row dequantizer.
struct KernelSet {
  Kernel by_shape[3];
  DequantRowKernel dequant_row = nullptr;
  const Kernel& for_tokens(int64_t n_tok) const { return by_shape[int(shape_class(n_tok))]; }
};

// What a view's kernels are bound for: exact numerics, or fast (include/inkling/numerics.h) in one
// of two grades. Against bf16 weights both fast grades round x to bf16. Against quantized weights
// kFast takes one int8 part of x per column (the routed experts: most of the bytes, and each sees
// only the tokens routed to it) and kFastFine two (x within ~2^-15 of its lane set's max: the
// matrices every token passes, whose rounding reaches every logit); on the trained demo model's
// 4-bit copy one part everywhere measured KL 3.5e-4, over the 2.5e-4 bar (docs/performance.md).
// Affine 4-bit views with load-time tiles (MatView::tiles) take the int8 gemm in both fast grades
// for every token count: x per block of 32, one part (kFast) or two (kFastFine).
enum class KernelMode : uint8_t { kExact, kFast, kFastFine };
constexpr KernelMode kernel_mode(Numerics n) {
  return n == Numerics::kFast ? KernelMode::kFast : KernelMode::kExact;
}

struct FormatEntry {
  const char* name;  // "F32", "BF16", "F16", "affine q4", "affine q8", "nvfp4", "mxfp8"
  WeightFormat family;
  // True when this entry describes the view (family and dtype or bit width).
  bool (*matches)(const MatView& w);
  // Storage bytes per logical element: codes plus the scales and biases of their group.
  double (*bytes_per_element)(const MatView& w);
  // Human label of a view's storage: "BF16", "affine q4/g64", "nvfp4".
  std::string (*label)(const MatView& w);
  // The best kernels for this view on this CPU in mode `m`; null if the view's
  // parameters are not supported (for example a group that does not divide the columns). Where
  // a format or CPU has no fast kernel, fast gets the exact set.
  const KernelSet* (*select)(const MatView& w, KernelMode m);
};

// Every registered format.
std::span<const FormatEntry> weight_formats();

// The entry describing w, or null for a format nobody registered.
const FormatEntry* find_format(const MatView& w);

// w with its kernels for mode `m` bound (w.kernels set). Fails (returns false, w
// unchanged) for views no entry can run. Call once per weight, at load.
bool bind_kernels(MatView& w, KernelMode m = KernelMode::kExact);
inline bool bind_kernels(MatView& w, Numerics n) {
  return bind_kernels(w, kernel_mode(n));
}

// The kernels for w: its bound set, else a lookup in the registry (views made by hand: exact).
// Aborts with a message for a view no entry can run.
const KernelSet& kernels_of(const MatView& w);

// One tally for inspect, bench and the cost model.
double bytes_per_element(const MatView& w);
uint64_t view_bytes(const MatView& w);  // rows x cols elements, codes and sidecars
// Human label of a view's storage: "BF16", "affine q4/g64", "nvfp4".
std::string format_label(const MatView& w);

}  // namespace inkling
