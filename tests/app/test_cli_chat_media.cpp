// `inkling chat` attachments on a tiny random model with towers (make_tiny_chat_model --towers 1)
// and the media fixtures: after "/image FILE" (or "/audio FILE") and a question, the chat prefills
// exactly the expanded prompt that `inkling generate --image/--audio` builds from the same rendered
// conversation, a later turn reuses that state (only its new tokens are prefilled), and a bad file
// is one error line while the chat goes on without it. The random model's answers are not shown
// (its tokens never open a text block), so the checks read /stats.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

const std::string kMedia = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/media/";
const std::string kTok = std::string(INKLING_SOURCE_DIR) + "/tests/data/inkling";

class CliChatMedia : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    namespace fs = std::filesystem;
    if (!fs::exists(kTok + "/tokenizer.json") || fs::exists(model() + "/model.safetensors")) return;
    const std::string tmp = model() + ".tmp." + std::to_string(getpid());
    const std::string maker = std::string(INKLING_BINARY_DIR) + "/make_tiny_chat_model";
    if (std::system((maker + " " + tmp + " " + kTok + " --towers 1 > /dev/null").c_str()) != 0)
      return;
    std::error_code ec;
    fs::rename(tmp, model(), ec);
    fs::remove_all(tmp, ec);
  }
  static std::string model() { return std::string(INKLING_BINARY_DIR) + "/tiny_chat_towers"; }
  void SetUp() override {
    if (!std::filesystem::exists(kTok + "/tokenizer.json")) GTEST_SKIP() << "no tokenizer data";
    ASSERT_TRUE(std::filesystem::exists(model() + "/model.safetensors"));
  }

  // Pipes `input` into a greedy chat; stdout is the answers.
  testing::RunResult chat(const std::string& input) {
    write_file(dir_.path() + "/in.txt", input);
    auto r = run_cli({"chat", "-m", model(), "-n", "8", "--temp", "0", "--show-reasoning"},
                     dir_.path(), 120, dir_.path() + "/in.txt");
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }
  // The prompt length `generate` prefills for one user message of `parts`, with `media` options.
  size_t generate_prompt(const nlohmann::json& parts, const std::vector<std::string>& media) {
    const nlohmann::json req = {
        {"messages", nlohmann::json::array({{{"role", "user"}, {"content", parts}}})}};
    write_file(dir_.path() + "/req.json", req.dump());
    auto r =
        run_cli({"render", "-m", model(), "--ids"}, dir_.path(), 30, dir_.path() + "/req.json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string ids;
    for (int32_t id : nlohmann::json::parse(r.out).get<std::vector<int32_t>>())
      ids += (ids.empty() ? "" : ",") + std::to_string(id);
    std::vector<std::string> args = {"generate", "-m", model(), "--token-ids",
                                     ids,        "-n", "1",     "--json"};
    args.insert(args.end(), media.begin(), media.end());
    r = run_cli(args, dir_.path(), 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_object() ? j["prompt_ids"].size() : 0;
  }

  TempDir dir_;
};

// The prompt tokens each turn prefilled, from the "last answer" block of each /stats.
std::vector<size_t> prefilled(const std::string& out) {
  std::vector<size_t> n;
  const std::string key = "last answer:";
  for (size_t p = out.find(key); p != std::string::npos; p = out.find(key, p + 1)) {
    const size_t e = out.find("prompt eval", p), slash = out.find('/', e);
    if (e == std::string::npos || slash == std::string::npos) break;
    n.push_back(std::stoul(out.substr(slash + 1)));
  }
  return n;
}

TEST_F(CliChatMedia, ImageTurnPrefillsGeneratesPrompt) {
  const std::string q = "What is in the picture?";
  // /reset drops the attachment: the same question is then the text-only prompt.
  auto r = chat("/image " + kMedia + "photo_64x90.jpg\n" + q +
                "\n/stats\nAnd now?\n/stats\n/reset\n" + q + "\n/stats\n");
  EXPECT_EQ(r.err, "");
  const size_t want = generate_prompt({{{"type", "image"}}, {{"type", "text"}, {"text", q}}},
                                      {"--image", kMedia + "photo_64x90.jpg"});
  const size_t plain = generate_prompt({{{"type", "text"}, {"text", q}}}, {});
  ASSERT_GT(want, plain + 100);  // the photo's tiles
  const auto n = prefilled(r.out);
  ASSERT_EQ(n.size(), 3u) << r.out;
  EXPECT_EQ(n[0], want);
  // The second turn extends the first prompt's state: only its new tokens are prefilled.
  EXPECT_GT(n[1], 0u);
  EXPECT_LT(n[1], 20u);
  EXPECT_EQ(n[2], plain);
}

// A named pipe or a folder is refused at once (reading a FIFO would wait for a writer for ever).
TEST_F(CliChatMedia, PipesAndFoldersAreRefusedNotWaitedOn) {
  const std::string fifo = dir_.path() + "/pipe.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = chat("/image " + fifo + "\n/audio " + dir_.path() + "\n/stats\n");
  EXPECT_THAT(r.err, HasSubstr("/image: " + fifo + ": not a regular file"));
  EXPECT_THAT(r.err, HasSubstr("/audio: " + dir_.path() + ": not a regular file"));
}

// Bad files are one line each and attach nothing; the good ones that follow go with the message.
TEST_F(CliChatMedia, BadFilesThenAudioAndImageInOneMessage) {
  const std::string q = "What do you hear?";
  auto r = chat("/image " + kMedia + "missing.png\n/image " + kMedia + "tone_0.23s.wav\n/audio " +
                kMedia + "photo_64x90.jpg\n/image\n/audio " + kMedia + "tone_0.23s.wav\n/image " +
                kMedia + "tiny_3x2.png\n" + q + "\n/stats\n");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 4) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/image: " + kMedia + "missing.png: cannot open the file"));
  EXPECT_THAT(r.err, HasSubstr("not a PNG or JPEG"));
  EXPECT_THAT(r.err, HasSubstr("/audio: "));
  EXPECT_THAT(r.err, HasSubstr("/image: give a file name"));
  const size_t want =
      generate_prompt({{{"type", "audio"}}, {{"type", "image"}}, {{"type", "text"}, {"text", q}}},
                      {"--audio", kMedia + "tone_0.23s.wav", "--image", kMedia + "tiny_3x2.png"});
  EXPECT_EQ(prefilled(r.out), std::vector<size_t>{want}) << r.out;
}

}  // namespace
}  // namespace inkling
