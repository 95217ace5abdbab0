// Inkling 2's image input against transformers (tests/fixtures/inkling2_vision,
// tools/make_inkling2_vision_fixtures.py): Inkling2ImageProcessor's pixel_values bit-exact
// (transparency on the checkerboard, padding, normalisation, tile order); the ViT's projector
// rows within 5e-6 of max|row|; merged-prompt logits within 1e-4 of max|logit| and greedy ids
// identical, in both layouts and both model types (inkling2, inkling2_loop); and the errors an
// Inkling 2 model gives for audio, an upscale and too many tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "../common/fixtures.h"
#include "../common/media_prompt.h"
#include "base/npy.h"
#include "inkling/media.h"
#include "media/image.h"
#include "media/image_prep.h"

namespace inkling {
namespace {

const std::string kV2Dir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/inkling2_vision/";

std::vector<uint8_t> v2_bytes(const std::string& file) {
  std::ifstream f(kV2Dir + "media/" + file, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::shared_ptr<Engine> load_v2(const std::string& folder, Numerics numerics = Numerics::kExact) {
  EngineOptions o;
  o.n_threads = 2;
  o.prefill_chunk = 16;  // image spans cross chunk boundaries
  o.numerics = numerics;
  auto e = Engine::load(kV2Dir + "model/" + folder, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : nullptr;
}

TEST(Inkling2Vision, PixelValuesBitExact) {
  const auto cases = testing::read_json(kV2Dir + "pre/cases.json");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string file = c["file"].get<std::string>();
    SCOPED_TRACE(file);
    ImageLimits limits;
    limits.keep_alpha = true;
    auto img = decode_image(v2_bytes(file), file, limits);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, c["width"].get<int64_t>());
    EXPECT_EQ(img->height, c["height"].get<int64_t>());
    EXPECT_EQ(!img->alpha.empty(), c["has_transparency"].get<bool>());
    composite_checkerboard(&*img);
    EXPECT_TRUE(img->alpha.empty());
    const ImageTiles t = tile_image_padded(*img, 40);
    EXPECT_EQ(t.rows, c["rows"].get<int64_t>());
    EXPECT_EQ(t.cols, c["cols"].get<int64_t>());
    auto ref = read_npy_f32(kV2Dir + "pre/" + file + ".npy");
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    ASSERT_EQ(t.pixel_values.size(), ref->data.size());
    size_t diff = 0;
    for (size_t i = 0; i < ref->data.size(); ++i) diff += t.pixel_values[i] != ref->data[i];
    EXPECT_EQ(diff, 0u) << "values differing from pixel_values";
  }
}

struct V2Case {
  std::vector<int32_t> prompt, greedy;
  std::vector<MediaEmbedding> media;
};

V2Case encode_v2_case(const Engine& e, const nlohmann::json& j) {
  V2Case c;
  c.prompt = testing::json_ids(j, "prompt_ids");
  c.greedy = testing::json_ids(j, "greedy");
  for (size_t i = 0; i < j["images"].size(); ++i) {
    const std::string file = j["images"][i].get<std::string>();
    auto r = encode_image(e, v2_bytes(file), file);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {};
    EXPECT_EQ(r->rows, j["grids"][i][0].get<int64_t>() * j["grids"][i][1].get<int64_t>()) << file;
    c.media.push_back(std::move(*r));
  }
  return c;
}

// Every reference case whose model is `model`, run on the folder `folder` (a layout of it).
void check_cases(const std::string& folder, const std::string& model) {
  auto engine = load_v2(folder);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->info().vision_status, "bound");
  EXPECT_EQ(engine->info().family, "inkling2");
  EXPECT_EQ(engine->info().audio_status, "none (Inkling 2 has no audio tower)");
  int n = 0;
  for (const char* name : {"one", "two", "three", "loop_one"}) {
    const std::string ref_json = kV2Dir + "ref/" + name + ".json";
    if (!std::ifstream(ref_json)) continue;
    const auto j = testing::read_json(ref_json);
    if (j["model"] != model) continue;
    SCOPED_TRACE(std::string(folder) + " " + name);
    ++n;
    V2Case c = encode_v2_case(*engine, j);
    ASSERT_FALSE(c.prompt.empty());
    auto rows = read_npy_f32(kV2Dir + "ref/" + name + ".vision.npy");
    ASSERT_TRUE(rows.ok());
    std::vector<float> got;
    for (const MediaEmbedding& m : c.media) got.insert(got.end(), m.data.begin(), m.data.end());
    ASSERT_EQ(got.size(), rows->data.size());
    const float dr = testing::max_rel_diff(got, rows->data);
    EXPECT_LT(dr, 5e-6f);
    // And against the same rows in float64: ours vs exact next to transformers' f32 vs exact.
    auto rows64 = read_npy_f32(kV2Dir + "ref/" + name + ".vision_f64.npy");
    ASSERT_TRUE(rows64.ok());
    const float d64 = testing::max_rel_diff(got, rows64->data),
                ref64 = testing::max_rel_diff(rows->data, rows64->data);
    std::printf("[ %s ] %s: tower rows vs float64 %.2e (transformers f32: %.2e)\n", folder.c_str(),
                name, double(d64), double(ref64));
    EXPECT_LT(d64, 2e-6f);
    const float dl = testing::check_media_prompt(*engine, c.prompt, c.media,
                                                 kV2Dir + "ref/" + name + ".logits.npy", c.greedy);
    std::printf("[ %s ] %s: %zu tokens, tower rows %.2e, logits %.2e of max\n", folder.c_str(),
                name, c.prompt.size(), double(dr), double(dl));
  }
  EXPECT_GT(n, 0) << "no reference case for " << model;
}

TEST(Inkling2Vision, OriginalLayoutRowsLogitsGreedy) {
  check_cases("hf", "hf");
}
TEST(Inkling2Vision, TransformersLayoutRowsLogitsGreedy) {
  check_cases("tf", "hf");
}
TEST(Inkling2Vision, LoopModelRowsLogitsGreedy) {
  check_cases("loop", "loop");
}

// Fast numerics on the same f32 checkpoint: the matrices keep f32 products, the attention rounds
// its keys, values and queries to bf16, so the rows move by bf16 rounding, no more.
TEST(Inkling2Vision, FastNumericsRowsWithinBf16Rounding) {
  auto exact = load_v2("hf"), fast = load_v2("hf", Numerics::kFast);
  ASSERT_TRUE(exact && fast);
  auto a = encode_image(*exact, v2_bytes("photo_64x90.jpg"), "photo");
  auto b = encode_image(*fast, v2_bytes("photo_64x90.jpg"), "photo");
  ASSERT_TRUE(a.ok() && b.ok());
  const float d = testing::max_rel_diff(b->data, a->data);
  std::printf("fast vs exact tower rows: %.2e of max |row|\n", double(d));
  EXPECT_GT(d, 0.0f);  // the bf16 attention ran
  EXPECT_LT(d, 1e-2f);
}

TEST(Inkling2Vision, ClearErrors) {
  auto engine = load_v2("hf");
  ASSERT_TRUE(engine);
  const std::vector<uint8_t> wav = [] {
    std::ifstream f(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/media/tone_0.23s.wav",
                    std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  }();
  auto audio = encode_audio(*engine, wav, "tone.wav");
  ASSERT_FALSE(audio.ok());
  EXPECT_NE(audio.status().message().find("Inkling 2 takes no audio"), std::string::npos)
      << audio.status().message();
  auto refused = [&](const char* file, const MediaOptions& o, const std::string& needle) {
    auto r = encode_image(*engine, v2_bytes(file), file, o);
    ASSERT_FALSE(r.ok()) << file;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  MediaOptions up, few, tiny;
  up.upscale = 2.0;
  few.max_image_tiles = 3;  // photo_64x90: 3 x 2 tiles
  tiny.max_image_pixels = 100;
  refused("rgb_37x53.png", up, "does not resize");
  refused("photo_64x90.jpg", few, "6 tiles of 40x40, over the limit of 3");
  refused("photo_64x90.jpg", tiny, "exceeds the limit");
}

}  // namespace
}  // namespace inkling
