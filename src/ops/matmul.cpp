// matmul: each thread owns a contiguous band of weight rows and streams every row once for all
// tokens. Dense f32/bf16 goes to the Highway kernels (matmul_hwy.cpp); other dtypes use portable
// loops with 16 independent accumulators that the compiler vectorises without -ffast-math.
#include "ops/matmul.h"

#include <cstring>
#include <vector>

#include "ops/matmul_hwy.h"
#include "ops/quant_matmul.h"

namespace inkling {

namespace {

constexpr int kLanes = 16;
// Below this many tokens the streamed matvec beats packing x for the blocked gemm.
constexpr int64_t kGemmMinTokens = 8;

inline float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int i = 0; i < kLanes; ++i) acc[i] += a[c + i] * load_unaligned(b + c + i);
  float tail = 0;
  for (; c < n; ++c) tail += a[c] * load_unaligned(b + c);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) acc[i] += acc[i + w];
  return acc[0] + tail;
}

inline float dot_bf16(const float* a, const uint16_t* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int i = 0; i < kLanes; ++i)
      acc[i] += a[c + i] * bits_to_f32(uint32_t(load_unaligned(b + c + i)) << 16);
  float tail = 0;
  for (; c < n; ++c) tail += a[c] * bf16_to_f32(load_unaligned(b + c));
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) acc[i] += acc[i + w];
  return acc[0] + tail;
}

}  // namespace

void row_to_f32(const uint8_t* row, DType t, int64_t n, float* out) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, row, size_t(n) * 4);
      return;
    case DType::BF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = bits_to_f32(uint32_t(load_unaligned(p + i)) << 16);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = load_as_f32(t, row, size_t(i));
  }
}

float dot_row(const float* x, const uint8_t* row, DType t, int64_t n) {
  switch (t) {
    case DType::F32:
      return dot_f32(x, reinterpret_cast<const float*>(row), n);
    case DType::BF16:
      return dot_bf16(x, reinterpret_cast<const uint16_t*>(row), n);
    default: {
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += double(x[i]) * load_as_f32(t, row, size_t(i));
      return float(acc);
    }
  }
}

bool join_halves(const MatView& a, const MatView& b, MatView* whole, bool* interleaved) {
  if (!a.data || a.format != b.format || a.dtype != b.dtype || a.rows != b.rows ||
      a.cols != b.cols || a.row_stride != b.row_stride || a.rows == 0)
    return false;
  const bool quant = a.format != WeightFormat::kDense;
  if (quant && (a.scale_dtype != b.scale_dtype || a.scale_stride != b.scale_stride ||
                a.bits != b.bits || a.group != b.group || a.scale2 != b.scale2 ||
                !a.scales != !b.scales || !a.biases != !b.biases))
    return false;
  const size_t ssz = quant ? dtype_size(a.scale_dtype) : 0;
  // b's first row starts num/den of a's row strides after a's (in codes, scales and biases).
  auto follows = [&](int64_t num, int64_t den) {  // b = a + num / den rows
    if ((a.row_stride * num) % den || (quant && (a.scale_stride * num) % den)) return false;
    const size_t esz = quant ? 1 : dtype_size(a.dtype);
    if (b.data != a.data + size_t(a.row_stride * num / den) * esz) return false;
    if (!quant) return true;
    const size_t soff = size_t(a.scale_stride * num / den) * ssz;
    return b.scales == a.scales + soff && (!a.biases || b.biases == a.biases + soff);
  };
  MatView w = a;
  w.rows = 2 * a.rows;
  if (a.rows > 1 && follows(1, 2)) {  // interleaved halves of a matrix with half the stride
    w.row_stride = a.row_stride / 2;
    w.scale_stride = a.scale_stride / 2;
    *interleaved = true;
  } else if (follows(a.rows, 1)) {
    *interleaved = false;
  } else {
    return false;
  }
  if (w.row_stride < (quant ? w.cols * w.bits / 8 : w.cols)) return false;  // rows would overlap
  *whole = w;
  return true;
}

void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy) {
  if (w.format != WeightFormat::kDense) {
    // Quantized: many tokens share tiles dequantized once (4-bit formats); otherwise fused kernels
    // that dequantize in registers (ops/quant_matmul.cpp).
    if (n_tok >= kGemmMinTokens && hwy_gemm_q4_supported(w))
      hwy_gemm_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
    else
      quant_matmul_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
    return;
  }
  if (hwy_dense_supported(w.dtype)) {
    // Highway kernels: streamed matvec for a few tokens, cache-blocked gemm beyond.
    if (n_tok < kGemmMinTokens)
      hwy_matvec_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
    else
      hwy_gemm_rows(x, n_tok, ldx, w, r0, r1, y, ldy);
    return;
  }
  if (n_tok == 1 || w.dtype == DType::F32) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = w.row(r);
      for (int64_t t = 0; t < n_tok; ++t)
        y[t * ldy + r] = dot_row(x + t * ldx, row, w.dtype, w.cols);
    }
    return;
  }
  // Several tokens: widen each row once, then reuse it for every token.
  thread_local std::vector<float> buf;
  if (buf.size() < size_t(w.cols)) buf.resize(size_t(w.cols));
  for (int64_t r = r0; r < r1; ++r) {
    row_to_f32(w.row(r), w.dtype, w.cols, buf.data());
    for (int64_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot_f32(x + t * ldx, buf.data(), w.cols);
  }
}

void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy,
            ThreadPool* pool) {
  if (!pool || w.rows * w.cols * n_tok < (int64_t(1) << 15)) {
    matmul_rows(x, n_tok, ldx, w, 0, w.rows, y, ldy);
    return;
  }
  pool->parallel_for(
      size_t(w.rows),
      [&](size_t b, size_t e) { matmul_rows(x, n_tok, ldx, w, int64_t(b), int64_t(e), y, ldy); },
      16);
}

}  // namespace inkling
