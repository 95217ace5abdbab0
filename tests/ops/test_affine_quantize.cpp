// The MLX affine quantizer (ops/affine_quantize.h) against mx.quantize itself: codes, scales and
// biases bit for bit, for bf16, f16 and f32 inputs, every width (2, 3, 4, 5, 6, 8) and group (32,
// 64, 128), on rows built to hit its edge logic (tests/fixtures/affine_quantize, made by
// tools/make_affine_quantize_fixture.py). Also the f16 rounding and the bit-stream decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "ops/affine_quantize.h"

namespace inkling {
namespace {

const std::string kCases =
    std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/affine_quantize/cases.safetensors";

class AffineQuantizeVsMlx : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = SafetensorsFile::open(kCases);
    ASSERT_TRUE(f.ok()) << f.status().message();
    file_ = f.value();
    for (const TensorInfo& t : file_->tensors()) by_name_[t.name] = &t;
  }
  const TensorInfo* get(const std::string& name) {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  std::shared_ptr<SafetensorsFile> file_;
  std::map<std::string, const TensorInfo*> by_name_;
};

TEST_F(AffineQuantizeVsMlx, BitIdenticalForEveryWidthGroupAndDtype) {
  int cases = 0;
  for (const char* dname : {"bf16", "f16", "f32"}) {
    const TensorInfo* x = get(std::string("x_") + dname);
    ASSERT_NE(x, nullptr) << dname;
    const int64_t rows = x->shape[0], cols = x->shape[1];
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      for (int group : {32, 64, 128}) {
        SCOPED_TRACE(std::string(dname) + " bits " + std::to_string(bits) + " group " +
                     std::to_string(group));
        const std::string stem =
            std::string("q_") + dname + "_b" + std::to_string(bits) + "_g" + std::to_string(group);
        const TensorInfo* wq = get(stem + ".weight");
        const TensorInfo* sc = get(stem + ".scales");
        const TensorInfo* bi = get(stem + ".biases");
        ASSERT_TRUE(wq && sc && bi);
        ASSERT_EQ(wq->dtype, DType::U32);
        ASSERT_EQ(sc->dtype, x->dtype);
        const int64_t code_bytes = affine_code_bytes(cols, bits);
        const int64_t side_bytes = affine_scale_bytes(cols, group, x->dtype);
        ASSERT_EQ(int64_t(wq->nbytes), rows * code_bytes);
        ASSERT_EQ(int64_t(sc->nbytes), rows * side_bytes);
        std::vector<float> row(static_cast<size_t>(cols));
        std::vector<uint8_t> codes(static_cast<size_t>(code_bytes)),
            s(static_cast<size_t>(side_bytes)), b(static_cast<size_t>(side_bytes));
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c)
            row[size_t(c)] = load_as_f32(x->dtype, x->data, size_t(r * cols + c));
          ASSERT_TRUE(affine_quantize_row(row.data(), cols, bits, group, x->dtype, codes.data(),
                                          s.data(), b.data()));
          EXPECT_EQ(std::memcmp(codes.data(), wq->data + r * code_bytes, size_t(code_bytes)), 0)
              << "codes of row " << r;
          EXPECT_EQ(std::memcmp(s.data(), sc->data + r * side_bytes, size_t(side_bytes)), 0)
              << "scales of row " << r;
          EXPECT_EQ(std::memcmp(b.data(), bi->data + r * side_bytes, size_t(side_bytes)), 0)
              << "biases of row " << r;
          // The decoder reads back every code, and scale * q + bias lands near the input: within
          // half a step, or a step and a half at the end of a group that MLX's refined scale
          // pushes past the last code (plus the rounding of scale and bias to the dtype).
          for (int64_t c = 0; c < cols; ++c) {
            const uint32_t q = affine_code_at(codes.data(), c, bits);
            ASSERT_LT(q, 1u << bits);
            const float sv = load_as_f32(x->dtype, s.data(), size_t(c / group));
            const float bv = load_as_f32(x->dtype, b.data(), size_t(c / group));
            const float w = sv * float(q) + bv;
            const float rounding = 0.01f * (std::fabs(bv) + std::fabs(sv) * float(1 << bits));
            EXPECT_LE(std::fabs(w - row[size_t(c)]), 1.5f * std::fabs(sv) + rounding + 1e-6f)
                << "row " << r << " col " << c;
          }
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 3 * 6 * 3);
}

TEST(AffineQuantize, RefusesNonFiniteRows) {
  std::vector<float> row(64, 0.5f);
  std::vector<uint8_t> codes(32), s(4), b(4);
  row[17] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(
      affine_quantize_row(row.data(), 64, 4, 32, DType::BF16, codes.data(), s.data(), b.data()));
  row[17] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(
      affine_quantize_row(row.data(), 64, 4, 32, DType::BF16, codes.data(), s.data(), b.data()));
}

TEST(AffineQuantize, SupportedWidthsAndGroups) {
  for (int b = 0; b <= 9; ++b)
    EXPECT_EQ(affine_bits_supported(b), b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8);
  for (int g : {16, 32, 48, 64, 96, 128, 256})
    EXPECT_EQ(affine_group_supported(g), g == 32 || g == 64 || g == 128);
}

// f32 -> f16 rounds to nearest even: every half value round-trips, and every midpoint between
// neighbouring halves goes to the even one.
TEST(AffineQuantize, F16RoundingIsNearestEven) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t bits = uint16_t(h);
    if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu)) continue;  // NaN
    const float f = f16_to_f32(bits);
    ASSERT_EQ(f32_to_f16(f), bits) << std::hex << h;
    if ((bits & 0x7fffu) >= 0x7bffu) continue;  // the next value up is infinity
    const float next = f16_to_f32(uint16_t(bits + 1));
    if ((bits & 0x8000u) != (uint16_t(bits + 1) & 0x8000u)) continue;
    const double mid = (double(f) + double(next)) / 2;
    const float midf = float(mid);
    if (double(midf) != mid) continue;  // not representable in f32 (never for halves)
    const uint16_t even = (bits & 1u) ? uint16_t(bits + 1) : bits;
    ASSERT_EQ(f32_to_f16(midf), even) << std::hex << h;
  }
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00u);
  EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00u);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -25)), 0u);  // tie between 0 and the least half
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 1u);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(AffineQuantize, StoreFloatRoundsToEachDtype) {
  uint8_t out[4];
  store_float(DType::BF16, 1.00390625f, out);  // halfway between two bf16 values: to even
  EXPECT_EQ(load_as_f32(DType::BF16, out, 0), 1.0f);
  store_float(DType::F16, 0.1f, out);
  EXPECT_EQ(load_as_f32(DType::F16, out, 0), f16_to_f32(f32_to_f16(0.1f)));
  store_float(DType::F32, 0.1f, out);
  EXPECT_EQ(load_as_f32(DType::F32, out, 0), 0.1f);
}

}  // namespace
}  // namespace inkling
