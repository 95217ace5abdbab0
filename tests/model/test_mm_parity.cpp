// Image and audio input end to end against transformers' InklingForConditionalGeneration
// (tests/fixtures/mm, tools/make_mm_fixtures.py): tower rows within 1e-4 relative, merged-prompt
// logits within 1e-4 of max |logit| and 8 greedy ids identical, in both checkpoint layouts; and
// the placeholder/row count checks.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "../common/fixtures.h"
#include "../common/media_prompt.h"
#include "inkling/media.h"

namespace inkling {
namespace {

const std::string kDir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// The fixture's processor does not upscale (its preprocessor_config.json says null).
std::shared_ptr<Engine> load(const std::string& layout) {
  EngineOptions o;
  o.n_threads = 2;
  o.prefill_chunk = 32;  // several chunks per prompt: rows must follow their positions
  auto e = Engine::load(kDir + "model/" + layout, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : nullptr;
}

struct Case {
  std::vector<int32_t> prompt, greedy;
  std::vector<MediaEmbedding> media;
};

Case encode_case(const Engine& e, const std::string& name) {
  Case c;
  const auto j = testing::read_json(kDir + "ref/" + name + ".json");
  c.prompt = testing::json_ids(j, "prompt_ids");
  c.greedy = testing::json_ids(j, "greedy");
  for (const auto& m : j["media"]) {
    const std::string file = m["file"].get<std::string>();
    const auto bytes = read_bytes(kDir + "media/" + file);
    auto r = m["kind"] == "image" ? encode_image(e, bytes, file) : encode_audio(e, bytes, file);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return c;
    EXPECT_EQ(r->rows, m["rows"].get<int64_t>()) << file;
    c.media.push_back(std::move(*r));
  }
  return c;
}

class MmParity : public ::testing::TestWithParam<std::string> {};

TEST_P(MmParity, TowerRowsLogitsAndGreedy) {
  auto engine = load(GetParam());
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->info().vision_status, "bound");
  EXPECT_EQ(engine->info().audio_status, "bound");
  for (const char* name : {"image_png", "jpeg_and_audio", "mixed"}) {
    SCOPED_TRACE(name);
    Case c = encode_case(*engine, name);
    ASSERT_FALSE(c.prompt.empty());
    for (MediaKind kind : {MediaKind::kImage, MediaKind::kAudio}) {
      const std::string file =
          kDir + "ref/" + name + (kind == MediaKind::kImage ? ".vision.npy" : ".audio.npy");
      auto ref = read_npy_f32(file);
      if (!ref.ok()) continue;
      std::vector<float> got;
      for (const MediaEmbedding& m : c.media)
        if (m.kind == kind) got.insert(got.end(), m.data.begin(), m.data.end());
      ASSERT_EQ(got.size(), ref->data.size());
      const float d = testing::max_rel_diff(got, ref->data);
      EXPECT_LT(d, 1e-4f);
      std::printf("[ %s ] %s %s rows: max diff / max |ref| = %.2e\n", GetParam().c_str(), name,
                  kind == MediaKind::kImage ? "vision" : "audio", double(d));
    }
    const float d = testing::check_media_prompt(*engine, c.prompt, c.media,
                                                kDir + "ref/" + name + ".logits.npy", c.greedy);
    std::printf("[ %s ] %s logits (%zu tokens): max diff / max |logit| = %.2e\n",
                GetParam().c_str(), name, c.prompt.size(), double(d));
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, MmParity, ::testing::Values("hf", "og"));

TEST(MmPrompt, PlaceholderExpansionAndCountChecks) {
  auto engine = load("og");
  ASSERT_TRUE(engine);
  Case c = encode_case(*engine, "jpeg_and_audio");
  ASSERT_EQ(c.media.size(), 2u);
  const int32_t img = engine->info().image_token_id, aud = engine->info().audio_token_id;
  // One placeholder per part, as the chat template renders them, expands to the reference.
  std::vector<int32_t> collapsed;
  for (size_t i = 0; i < c.prompt.size(); ++i)
    if (!(i > 0 && c.prompt[i] == c.prompt[i - 1] && (c.prompt[i] == img || c.prompt[i] == aud)))
      collapsed.push_back(c.prompt[i]);
  auto expanded = expand_media_placeholders(*engine, collapsed, c.media);
  ASSERT_TRUE(expanded.ok()) << expanded.status().message();
  EXPECT_EQ(*expanded, c.prompt);
  // Too few attachments, too many, or the wrong kind: one clear error each.
  auto few = expand_media_placeholders(*engine, collapsed, std::span(c.media).first(1));
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("more image/audio placeholders"), std::string::npos);
  std::vector<MediaEmbedding> swapped = {c.media[1], c.media[0]};
  auto wrong = expand_media_placeholders(*engine, collapsed, swapped);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("is an image part but attachment 1 is audio"),
            std::string::npos)
      << wrong.status().message();
  // Rows that do not match the placeholders in the (already expanded) prompt.
  auto session = engine->new_session();
  std::vector<int32_t> short_prompt = c.prompt;
  short_prompt.erase(std::find(short_prompt.rbegin(), short_prompt.rend(), aud).base() - 1);
  auto bad = prefill_media(*engine, *session, short_prompt, c.media);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("placeholder tokens but the attachments have"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(session->position(), 0);
}

TEST(MmLoad, TextFixturesKeepLoadingWithUnusableTowers) {
  // The text fixtures' og/ folders hold junk tower tensors: the towers are reported unusable,
  // the text model loads, and an image request names the reason.
  auto e = Engine::load(testing::fixture_dir("full") + "/og");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_NE((*e)->info().audio_status.find("missing tensor model.audio.final_norm.weight"),
            std::string::npos)
      << (*e)->info().audio_status;
  EXPECT_EQ((*e)->info().vision_status, "absent");
  const auto png = read_bytes(kDir + "media/rgb_37x53.png");
  auto r = encode_image(**e, png, "x.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no usable vision tower"), std::string::npos);
}

}  // namespace
}  // namespace inkling
