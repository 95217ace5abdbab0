// dtype names, sizes and the non-trivial float conversions (f16, e4m3).
#include "base/dtype.h"

#include <array>
#include <cmath>

namespace inkling {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::U32:
    case DType::I32:
      return 4;
    case DType::BF16:
    case DType::F16:
      return 2;
    case DType::F8_E4M3:
    case DType::F8_E8M0:
    case DType::U8:
    case DType::I8:
      return 1;
    case DType::I64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::BF16:
      return "BF16";
    case DType::F16:
      return "F16";
    case DType::F8_E4M3:
      return "F8_E4M3";
    case DType::F8_E8M0:
      return "F8_E8M0";
    case DType::U8:
      return "U8";
    case DType::I8:
      return "I8";
    case DType::U32:
      return "U32";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  static constexpr struct {
    std::string_view name;
    DType t;
  } kNames[] = {{"F32", DType::F32},         {"BF16", DType::BF16},       {"F16", DType::F16},
                {"F8_E4M3", DType::F8_E4M3}, {"F8_E8M0", DType::F8_E8M0}, {"U8", DType::U8},
                {"I8", DType::I8},           {"U32", DType::U32},         {"I32", DType::I32},
                {"I64", DType::I64}};
  for (const auto& e : kNames)
    if (e.name == n) return e.t;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (man << 13));
  return bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

namespace {
float e4m3_decode(uint8_t b) {
  const bool neg = b & 0x80;
  const int exp = (b >> 3) & 0xf, man = b & 0x7;
  if (exp == 0xf && man == 0x7) return std::nanf("");
  const float v = exp == 0 ? std::ldexp(float(man), -9) : std::ldexp(float(8 + man), exp - 10);
  return neg ? -v : v;
}
}  // namespace

// A table: the kernels read one E4M3 block scale per 16 or 32 weights, where two ldexp calls
// measured a large part of NVFP4's one-token time on AVX2.
float e4m3_to_f32(uint8_t b) {
  static const auto table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[size_t(i)] = e4m3_decode(uint8_t(i));
    return t;
  }();
  return table[b];
}

float e8m0_to_f32(uint8_t e) {
  // The exponent field itself for e >= 1 (255: +inf), the subnormal 2^-127 for 0.
  return bits_to_f32(e ? uint32_t(e) << 23 : uint32_t(1) << 22);
}

float load_as_f32(DType t, const void* data, size_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (t) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return bf16_to_f32(v);
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return f16_to_f32(v);
    }
    case DType::F8_E4M3:
      return e4m3_to_f32(p[i]);
    case DType::F8_E8M0:
      return e8m0_to_f32(p[i]);
    case DType::U8:
      return float(p[i]);
    case DType::I8:
      return float(int8_t(p[i]));
    case DType::U32: {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return float(v);
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return float(v);
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return float(v);
    }
  }
  return 0.f;
}

}  // namespace inkling
