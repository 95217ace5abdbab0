// dtype conversions: bf16 / f16 / e4m3 -> f32 on known values and exhaustively, f32 -> bf16
// round-to-nearest-even (ties, carries into the exponent, NaN), names and sizes.
#include "base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace inkling {
namespace {

TEST(DType, NamesSizesAndParse) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
  };
  const Row rows[] = {
      {DType::F32, "F32", 4},         {DType::BF16, "BF16", 2}, {DType::F16, "F16", 2},
      {DType::F8_E4M3, "F8_E4M3", 1}, {DType::U8, "U8", 1},     {DType::I8, "I8", 1},
      {DType::U32, "U32", 4},         {DType::I32, "I32", 4},   {DType::I64, "I64", 8}};
  for (const auto& r : rows) {
    EXPECT_STREQ(dtype_name(r.t), r.name);
    EXPECT_EQ(dtype_size(r.t), r.size) << r.name;
    auto p = parse_dtype(r.name);
    ASSERT_TRUE(p.has_value()) << r.name;
    EXPECT_EQ(*p, r.t);
  }
  for (const char* bad : {"f32", "F64", "BOOL", "F8_E5M2", "", "F32 ", "U16"})
    EXPECT_FALSE(parse_dtype(bad).has_value()) << bad;
}

TEST(DType, Bf16ToF32) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_f32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(bf16_to_f32(0x8000)));
  EXPECT_EQ(bf16_to_f32(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_f32(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));  // smallest subnormal
}

TEST(DType, F32ToBf16RoundsToNearestEven) {
  auto rt = [](uint32_t bits) { return f32_to_bf16(bits_to_f32(bits)); };
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-3.0f), 0xc040);
  EXPECT_EQ(rt(0x3f807fffu), 0x3f80);  // just below half: down
  EXPECT_EQ(rt(0x3f808000u), 0x3f80);  // tie, even below: down
  EXPECT_EQ(rt(0x3f808001u), 0x3f81);  // just above half: up
  EXPECT_EQ(rt(0x3f818000u), 0x3f82);  // tie, odd below: up to even
  EXPECT_EQ(rt(0x3f817fffu), 0x3f81);
  EXPECT_EQ(rt(0xbf808000u), 0xbf80);  // negative tie
  EXPECT_EQ(rt(0xbf818000u), 0xbf82);
  EXPECT_EQ(rt(0x3fffffffu), 0x4000);  // carry into the exponent
  EXPECT_EQ(rt(0x7f7fffffu), 0x7f80);  // max float rounds to inf (as torch)
  EXPECT_EQ(rt(0x00008000u), 0x0000);  // subnormal tie -> even (zero)
  EXPECT_EQ(rt(0x00018000u), 0x0002);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
}

TEST(DType, F32ToBf16KeepsNaN) {
  // Plain rounding would turn these NaNs into inf (0x7f80) or carry into the sign.
  for (uint32_t bits :
       {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xff800001u, 0xffc00000u, 0x7f80ffffu}) {
    const uint16_t h = f32_to_bf16(bits_to_f32(bits));
    EXPECT_TRUE(std::isnan(bf16_to_f32(h))) << std::hex << bits << " -> " << h;
    EXPECT_EQ(h & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;  // sign kept
  }
}

TEST(DType, Bf16RoundTripIsExactForEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bf16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
  }
}

TEST(DType, F32ToBf16MatchesDoubleRoundingReference) {
  // Reference: pick the nearer of the two neighbouring bf16 values, ties to even.
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1664525u + 1013904223u;
    const float f = bits_to_f32(x);
    if (!std::isfinite(f)) continue;
    const uint16_t lo = uint16_t(x >> 16);  // truncation; lo + 1 is the next value outward
    const double a = bf16_to_f32(lo);
    double b = bf16_to_f32(uint16_t(lo + 1));
    if (std::isinf(b)) b = std::copysign(std::ldexp(1.0, 128), b);  // overflow rounds like 2^128
    const double da = std::fabs(double(f) - a), db = std::fabs(double(f) - b);
    const uint16_t want = da < db   ? lo
                          : da > db ? uint16_t(lo + 1)
                                    : ((lo & 1) ? uint16_t(lo + 1) : lo);
    ASSERT_EQ(f32_to_bf16(f), want) << std::hex << x;
  }
}

TEST(DType, F16ToF32KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));
}

#if defined(__FLT16_MAX__)
TEST(DType, F16ToF32MatchesCompilerForEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t b = uint16_t(h);
    _Float16 v;
    std::memcpy(&v, &b, 2);
    const float want = float(v), got = f16_to_f32(b);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(f32_to_bits(got), f32_to_bits(want)) << std::hex << h;
    }
  }
}
#endif

TEST(DType, E4m3KnownValues) {
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_f32(0xb8), -1.0f);
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);  // max finite
  EXPECT_EQ(e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0x81), -std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_f32(0x07), std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_f32(0x40), 2.0f);
  EXPECT_EQ(e4m3_to_f32(0x3c), 1.5f);
  EXPECT_EQ(e4m3_to_f32(0x77), 240.0f);  // exp 14, man 7: 1.875 * 128
  EXPECT_EQ(e4m3_to_f32(0x78), 256.0f);  // exp 15 is a normal binade (no inf in e4m3fn)
  EXPECT_EQ(e4m3_to_f32(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(e4m3_to_f32(0x80)));
  EXPECT_EQ(e4m3_to_f32(0x80), 0.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xff)));
}

TEST(DType, E4m3EveryValue) {
  int nans = 0;
  float prev = -1;
  for (int b = 0; b < 256; ++b) {
    const float v = e4m3_to_f32(uint8_t(b));
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    EXPECT_TRUE(std::isfinite(v)) << b;
    // Negative half mirrors the positive half.
    if (b < 128) {
      EXPECT_EQ(e4m3_to_f32(uint8_t(b | 0x80)), -v) << b;
      EXPECT_GT(v, prev) << "not monotonic at " << b;  // codes 0..126 increase strictly
      prev = v;
      // Independent formula: (1 + m/8) * 2^(e-7), subnormal m/8 * 2^-6.
      const int e = b >> 3, m = b & 7;
      const double want =
          e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
      EXPECT_EQ(double(v), want) << b;
    }
  }
  EXPECT_EQ(nans, 2);
}

TEST(DType, LoadAsF32EveryDtype) {
  const float f32[] = {1.5f, -2.25f};
  EXPECT_EQ(load_as_f32(DType::F32, f32, 1), -2.25f);
  const uint16_t bf[] = {0x3f80, 0xc040};
  EXPECT_EQ(load_as_f32(DType::BF16, bf, 1), -3.0f);
  const uint16_t hf[] = {0x3c00, 0xc000};
  EXPECT_EQ(load_as_f32(DType::F16, hf, 1), -2.0f);
  const uint8_t e[] = {0x38, 0x7e};
  EXPECT_EQ(load_as_f32(DType::F8_E4M3, e, 1), 448.0f);
  const uint8_t u8[] = {0, 255};
  EXPECT_EQ(load_as_f32(DType::U8, u8, 1), 255.0f);
  const int8_t i8[] = {0, -128};
  EXPECT_EQ(load_as_f32(DType::I8, i8, 1), -128.0f);
  const uint32_t u32[] = {0, 4000000000u};
  EXPECT_EQ(load_as_f32(DType::U32, u32, 1), 4000000000.0f);
  const int32_t i32[] = {0, -7};
  EXPECT_EQ(load_as_f32(DType::I32, i32, 1), -7.0f);
  const int64_t i64[] = {0, -(int64_t(1) << 40)};
  EXPECT_EQ(load_as_f32(DType::I64, i64, 1), -std::ldexp(1.0f, 40));
  // Unaligned reads are fine (memcpy).
  alignas(4) uint8_t buf[9] = {};
  const float v = 7.5f;
  std::memcpy(buf + 1, &v, 4);
  EXPECT_EQ(load_as_f32(DType::F32, buf + 1, 0), 7.5f);
}

}  // namespace
}  // namespace inkling
