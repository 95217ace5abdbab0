// Storage dtypes of checkpoint tensors (the safetensors set) and scalar conversions to f32.
// Conversions are exact bit manipulations: bf16/f16/e4m3 -> f32 never round.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace inkling {

// F8_E8M0: a power of two 2^(e - 127) per byte (MXFP8 block scales as torch's float8_e8m0fnu).
enum class DType : uint8_t { F32, BF16, F16, F8_E4M3, F8_E8M0, U8, I8, U32, I32, I64 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // safetensors spelling: "F32", "BF16", ...
std::optional<DType> parse_dtype(std::string_view name);

// One element read from an address that may not be aligned for T (weights mapped from
// safetensors files are not padded): memcpy compiles to the same single load, without the UB.
template <typename T>
inline T load_unaligned(const T* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bf16_to_f32(uint16_t h) {
  return bits_to_f32(uint32_t(h) << 16);
}
// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float f16_to_f32(uint16_t h);
float e4m3_to_f32(uint8_t b);  // OCP E4M3 "fn": bias 7, no inf, 0x7f/0xff = NaN, max 448
// E8M0 exponent -> 2^(e - 127), as transformers computes it (exp2(e - 127) in f32: 0 gives the
// subnormal 2^-127, 255 gives +inf where the OCP spec says NaN).
float e8m0_to_f32(uint8_t e);

// Reads element i of a buffer of dtype t as f32 (integers convert by value).
float load_as_f32(DType t, const void* data, size_t i);

}  // namespace inkling
