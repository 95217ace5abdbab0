// mx.quantize's affine algorithm for one row, the MLX bit packing of every width, and the float
// stores (f32 / bf16 / f16, round to nearest even) its scales and biases need.
#include "ops/affine_quantize.h"

#include "inkling/status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace inkling {

namespace {

// Round to nearest, ties to even, as std::rint in the default rounding mode (what MLX calls),
// without a libm call: adding and subtracting 1.5 * 2^23 leaves an integer for |x| < 2^22;
// larger magnitudes are integers already.
inline float round_even(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  if (!(std::fabs(x) < 4194304.0f)) return x;
  return (x + kMagic) - kMagic;
}

}  // namespace

bool affine_bits_supported(int bits) {
  return bits >= 2 && bits <= 8 && bits != 7;
}

bool affine_group_supported(int group) {
  return group == 32 || group == 64 || group == 128;
}

int64_t affine_code_bytes(int64_t cols, int bits) {
  return cols * bits / 8;
}

int64_t affine_scale_bytes(int64_t cols, int group, DType scale_dtype) {
  return cols / group * int64_t(dtype_size(scale_dtype));
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN stays NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {                                  // below 2^-14: a half subnormal
    if (a < 0x33000000u) return sign;                     // below 2^-25: rounds to zero
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const int shift = 126 - int(a >> 23);  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (a >> 13) - (112u << 10);  // rebias the exponent: 127 -> 15
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may bump the exponent
  return uint16_t(sign | h);
}

void store_float(DType t, float v, uint8_t* dst) {
  switch (t) {
    case DType::BF16: {
      const uint16_t h = f32_to_bf16(v);
      std::memcpy(dst, &h, 2);
      return;
    }
    case DType::F16: {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(dst, &h, 2);
      return;
    }
    default:
      std::memcpy(dst, &v, 4);
      return;
  }
}

uint32_t affine_code_at(const uint8_t* codes, int64_t c, int bits) {
  const int64_t bit = c * bits;
  // Two bytes hold any code of at most 8 bits that starts inside the first of them.
  uint32_t two = codes[bit / 8];
  if ((bit % 8) + bits > 8) two |= uint32_t(codes[bit / 8 + 1]) << 8;
  return (two >> (bit % 8)) & ((1u << bits) - 1u);
}

bool affine_group_mlx(const float* x, int n, int bits, float* scale_out, float* bias_out) {
  const float n_bins = float((1 << bits) - 1);
  float w_max = -std::numeric_limits<float>::infinity(), w_min = -w_max;
  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(x[j])) return false;
    w_max = std::max(w_max, x[j]);
    w_min = std::min(w_min, x[j]);
  }
  const bool mask = std::fabs(w_min) > std::fabs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, 1e-7f);
  scale = mask ? scale : -scale;
  const float edge = mask ? w_min : w_max;
  const float q0 = round_even(edge / scale);
  float bias = 0;
  if (q0 != 0) {
    scale = edge / q0;
    bias = edge;
  }
  *scale_out = scale;
  *bias_out = bias;
  return true;
}

uint8_t affine_code(float x, float scale, float bias, int bits) {
  const float n_bins = float((1 << bits) - 1);
  // clamp(q, 0, n_bins); written so that a NaN (inf / inf from huge values) becomes 0
  const float q = round_even((x - bias) / scale);
  return uint8_t(q > 0.0f ? (q < n_bins ? q : n_bins) : 0.0f);
}

void affine_pack_codes(const uint8_t* q, int64_t cols, int bits, uint8_t* codes) {
  uint64_t acc = 0;  // bits not yet written, lowest first
  int pending = 0;
  uint8_t* out = codes;
  for (int64_t c = 0; c < cols; ++c) {
    acc |= uint64_t(q[c]) << pending;
    pending += bits;
    while (pending >= 8) {
      *out++ = uint8_t(acc);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) *out = uint8_t(acc);  // only when cols * bits is not a whole byte count
}

bool affine_quantize_row(const float* w, int64_t cols, int bits, int group, DType scale_dtype,
                         uint8_t* codes, uint8_t* scales, uint8_t* biases) {
  INK_CHECK(affine_group_supported(group));
  const size_t ssz = dtype_size(scale_dtype);
  uint8_t q[128];  // one group's codes: 32, 64 or 128 of them fill whole bytes once packed
  for (int64_t g0 = 0, gi = 0; g0 < cols; g0 += group, ++gi) {
    float scale = 0, bias = 0;
    if (!affine_group_mlx(w + g0, group, bits, &scale, &bias)) return false;
    for (int j = 0; j < group; ++j) q[j] = affine_code(w[g0 + j], scale, bias, bits);
    affine_pack_codes(q, group, bits, codes + g0 * bits / 8);
    store_float(scale_dtype, scale, scales + size_t(gi) * ssz);
    store_float(scale_dtype, bias, biases + size_t(gi) * ssz);
  }
  return true;
}

}  // namespace inkling
