// Image and audio preprocessing against transformers' processor outputs (tests/fixtures/mm/pre,
// tools/make_mm_fixtures.py): decode + tiles + normalisation bit-exact, the Lanczos upscale
// within Pillow-vs-torchvision rounding, log-mel within 1e-4 and dMel ids equal except where the
// reference sits on a quantisation boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/npy.h"
#include "media/audio.h"
#include "media/image.h"
#include "media/image_prep.h"

namespace inkling {
namespace {

const std::string kPrepDir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/";

std::vector<uint8_t> read_prep_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

nlohmann::json cases() {
  auto t = read_text_file(kPrepDir + "pre/cases.json");
  return t.ok() ? nlohmann::json::parse(t.value()) : nlohmann::json();
}

// pixel_values[:, 0] of our tiles (T = 2 copies checked equal).
std::vector<float> first_time_slice(const ImageTiles& t) {
  const int64_t tile = t.patch * t.patch * 3;
  std::vector<float> out;
  for (int64_t p = 0; p < t.count(); ++p) {
    const float* a = t.pixel_values.data() + p * t.temporal * tile;
    EXPECT_TRUE(std::equal(a, a + tile, a + tile));
    out.insert(out.end(), a, a + tile);
  }
  return out;
}

TEST(MediaPrep, ImagesTileBitExact) {
  const auto c = cases();
  ASSERT_TRUE(c.contains("images"));
  for (const auto& [name, info] : c["images"].items()) {
    SCOPED_TRACE(name);
    auto img = decode_image(read_prep_bytes(kPrepDir + "media/" + name), name);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->height, info["height"].get<int64_t>());
    EXPECT_EQ(img->width, info["width"].get<int64_t>());
    const ImageTiles t = tile_image(*img, 40, 2);
    EXPECT_EQ(t.count(), info["tiles"].get<int64_t>());
    auto ref = read_npy_f32(kPrepDir + "pre/" + name + ".npy");
    ASSERT_TRUE(ref.ok());
    const std::vector<float> got = first_time_slice(t);
    ASSERT_EQ(got.size(), ref->data.size());
    size_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff += got[i] != ref->data[i];
    EXPECT_EQ(diff, 0u) << "values differing from pixel_values";
  }
}

TEST(MediaPrep, UpscaleMatchesSizeRuleAndPixelsWithinRounding) {
  const auto c = cases();
  for (const auto& [name, info] : c["images"].items()) {
    if (!info.contains("tiles_x2")) continue;
    SCOPED_TRACE(name);
    auto img = decode_image(read_prep_bytes(kPrepDir + "media/" + name), name);
    ASSERT_TRUE(img.ok());
    int64_t h = 0, w = 0;
    upscaled_size(img->height, img->width, UpscalePolicy{2.0, 2048}, &h, &w);
    const ImageTiles t = tile_image(resize_lanczos(*img, h, w), 40, 2);
    EXPECT_EQ(t.count(), info["tiles_x2"].get<int64_t>());
    auto ref = read_npy_f32(kPrepDir + "pre/" + name + ".x2.npy");
    ASSERT_TRUE(ref.ok());
    const std::vector<float> got = first_time_slice(t);
    ASSERT_EQ(got.size(), ref->data.size());
    // One 8-bit level is 1/255/std ~ 0.0146 after normalisation. Pillow's and torchvision's
    // Lanczos kernels round differently: allow 2 levels, on at most 3% of the values.
    size_t off = 0;
    float worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float d = std::fabs(got[i] - ref->data[i]);
      worst = std::max(worst, d);
      off += d > 1e-6f;
    }
    EXPECT_LE(worst, 2.05f / 255.f / 0.2613f);
    EXPECT_LE(double(off) / double(got.size()), 0.03);
    std::printf("[ upscale ] %s: %zu of %zu values differ (max %.4f)\n", name.c_str(), off,
                got.size(), double(worst));
  }
}

TEST(MediaPrep, UpscaleSizeRule) {
  int64_t h = 0, w = 0;
  upscaled_size(37, 53, UpscalePolicy{2.0, 2048}, &h, &w);
  EXPECT_EQ(h, 74);
  EXPECT_EQ(w, 106);
  upscaled_size(1500, 1000, UpscalePolicy{2.0, 2048}, &h, &w);  // capped at 2048
  EXPECT_EQ(h, 2048);
  EXPECT_EQ(w, 1365);
  upscaled_size(3000, 1000, UpscalePolicy{2.0, 2048}, &h, &w);  // already above: unchanged
  EXPECT_EQ(h, 3000);
  EXPECT_EQ(w, 1000);
  upscaled_size(37, 53, UpscalePolicy{std::nullopt, 2048}, &h, &w);
  EXPECT_EQ(h, 37);
  EXPECT_EQ(w, 53);
}

TEST(MediaPrep, AudioFeatures) {
  const auto c = cases();
  ASSERT_TRUE(c.contains("audio"));
  for (const auto& [name, info] : c["audio"].items()) {
    SCOPED_TRACE(name);
    auto a = decode_wav(read_prep_bytes(kPrepDir + "media/" + name), name);
    ASSERT_TRUE(a.ok()) << a.status().message();
    const MelFeatures f = dmel_features(a->samples);
    EXPECT_EQ(f.frames, info["frames"].get<int64_t>());
    auto mel = read_npy_f32(kPrepDir + "pre/" + name + ".mel.npy");
    auto ids = read_npy_f32(kPrepDir + "pre/" + name + ".ids.npy");
    ASSERT_TRUE(mel.ok() && ids.ok());
    ASSERT_EQ(mel->data.size(), f.log_mel.size());
    float worst = 0;
    size_t id_diff = 0;
    for (size_t i = 0; i < f.log_mel.size(); ++i) {
      worst = std::max(worst, std::fabs(f.log_mel[i] - mel->data[i]));
      if (float(f.ids[i]) != ids->data[i]) {
        ++id_diff;
        // Only a reference value next to a bin boundary (centres 0.6 apart) may round the
        // other way.
        const float c = std::clamp(mel->data[i], -7.0f, 2.0f);
        const float frac = std::fmod(c + 7.0f, 0.6f);
        EXPECT_LT(std::fabs(frac - 0.3f), 1e-4f) << "id differs away from a boundary at " << i;
      }
    }
    EXPECT_LT(worst, 1e-4f);
    std::printf("[ audio ] %s: %lld frames, log-mel max |diff| %.2e, %zu ids differ\n",
                name.c_str(), (long long)f.frames, double(worst), id_diff);
  }
}

}  // namespace
}  // namespace inkling
