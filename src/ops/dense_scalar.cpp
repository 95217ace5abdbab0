// Portable dense kernels (see dense_scalar.h).
#include "ops/dense_scalar.h"

#include <cstring>
#include <vector>

namespace inkling {

namespace {

constexpr int kLanes = 16;

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

void dense_dequant_row(const MatView& w, int64_t r, float* out) {
  row_to_f32(w.row(r), w.dtype, w.cols, out);
}

void dense_dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                    int64_t r1, float* y, int64_t ldy) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    for (int64_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot_row(x + t * ldx, row, w.dtype, w.cols);
  }
}

void dense_widen_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy) {
  thread_local std::vector<float> buf;
  if (buf.size() < size_t(w.cols)) buf.resize(size_t(w.cols));
  for (int64_t r = r0; r < r1; ++r) {
    row_to_f32(w.row(r), w.dtype, w.cols, buf.data());
    for (int64_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot_f32(x + t * ldx, buf.data(), w.cols);
  }
}

}  // namespace inkling
