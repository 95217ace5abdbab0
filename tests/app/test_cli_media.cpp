// `inkling generate --image/--audio` on the multimodal fixture (tests/fixtures/mm): the prompt's
// one-per-part placeholders are expanded and filled, and the greedy continuation equals
// transformers'; bad files and count mismatches exit 2 with one line. The same for Inkling 2
// (tests/fixtures/inkling2_vision: its ViT, both model types), where audio is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/run_cli.h"

namespace inkling {
namespace {

const std::string kDir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/";

std::string scratch() {
  const std::string d = std::string(INKLING_BINARY_DIR) + "/cli_media_" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(d);
  return d;
}

// The reference prompt with each run of placeholders collapsed to one (as a template renders).
std::string collapsed_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0 && ids[i] == ids[i - 1] && (ids[i] == 490 || ids[i] == 491)) continue;
    s += (s.empty() ? "" : ",") + std::to_string(ids[i]);
  }
  return s;
}

TEST(CliMedia, GenerateGreedyMatchesReference) {
  const auto j = testing::read_json(kDir + "ref/jpeg_and_audio.json");
  const auto r = testing::run_cli(
      {"generate", "-m", kDir + "model/og", "--token-ids",
       collapsed_ids(testing::json_ids(j, "prompt_ids")), "--image", kDir + "media/photo_64x90.jpg",
       "--audio", kDir + "media/tone_0.23s.wav", "-n", "8", "--temp", "0", "--json"},
      scratch());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), testing::json_ids(j, "greedy"));
}

TEST(CliMedia, Errors) {
  const std::string ids = "5,490,6";
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "-m", kDir + "model/og", "--token-ids", ids,
                                     "-n",       "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args, scratch());
  };
  auto r = run({"--image", kDir + "media/tone_0.23s.wav"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a PNG or JPEG"), std::string::npos) << r.err;
  r = run({"--audio", kDir + "media/tone_0.23s.wav"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("1 image and 0 audio placeholders but 0 --image and 1 --audio"),
            std::string::npos)
      << r.err;
  r = run({"--image", kDir + "media/missing.png"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
}

const std::string kV2 = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/inkling2_vision/";

TEST(CliMedia, Inkling2GenerateGreedyMatchesReference) {
  for (const char* name : {"two", "loop_one"}) {
    SCOPED_TRACE(name);
    const auto j = testing::read_json(kV2 + "ref/" + name + ".json");
    std::vector<std::string> args = {"generate",
                                     "-m",
                                     kV2 + "model/" + j["model"].get<std::string>(),
                                     "--token-ids",
                                     collapsed_ids(testing::json_ids(j, "prompt_ids")),
                                     "-n",
                                     "8",
                                     "--temp",
                                     "0",
                                     "--numerics",
                                     "exact",
                                     "--json"};
    for (const auto& f : j["images"])
      args.insert(args.end(), {"--image", kV2 + "media/" + f.get<std::string>()});
    const auto r = testing::run_cli(args, scratch());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto out = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(out.is_object()) << r.out;
    EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), testing::json_ids(j, "greedy"));
  }
  const auto r = testing::run_cli({"generate", "-m", kV2 + "model/hf", "--token-ids", "5,6", "-n",
                                   "1", "--audio", kDir + "media/tone_0.23s.wav"},
                                  scratch());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Inkling 2 takes no audio"), std::string::npos) << r.err;
  // A text-only Inkling 2 folder: one line saying it has no vision tower.
  const auto t = testing::run_cli(
      {"generate", "-m", std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/inkling2/hf",
       "--token-ids", "5,6", "-n", "1", "--image", kV2 + "media/rgb_37x53.png"},
      scratch());
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find("this model has no usable vision tower"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace inkling
