// `inkling serve` with image and audio content parts (OpenAI chat format) on a tiny random model
// with towers (make_tiny_chat_model --towers 1): data: URLs and input_audio are accepted and cost
// their tiles/frames in prompt tokens; a repeated image is reused from the prefix cache, another
// image is not; local paths only under --media-dir; remote URLs, bad
// base64 and undecodable files are 400s with a code naming the problem. The same on a tiny
// Inkling 2 model (make_tiny_chat_model --inkling2 1: its ViT, one token per 40x40 tile) through
// chat completions, Responses and Messages, where audio is refused.
#include <httplib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;

const std::string kMedia = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/media/";
const std::string kModel = INKLING_BINARY_DIR "/tiny_mm_model";

std::string base64(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string in((std::istreambuf_iterator<char>(f)), {});
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v =
        uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += k[(v >> 18) & 63], out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Made once per build folder, aside and renamed into place (other test processes may use it).
void ensure_media_model(const std::string& dir, const char* flag) {
  namespace fs = std::filesystem;
  if (fs::exists(dir + "/model.safetensors")) return;
  const std::string tmp = dir + ".tmp." + std::to_string(getpid());
  if (testing::spawn_wait({INKLING_BINARY_DIR "/make_tiny_chat_model", tmp, testing::kTokenizerDir,
                           flag, "1"}) != 0)
    return;
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  fs::remove_all(tmp, ec);
}

class ServerMedia : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ensure_media_model(kModel, "--towers");
    server_ = new testing::ServerProcess({"--media-dir", kMedia, "--ctx-size", "2048"}, kModel);
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0);
    }
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(server_);
    ASSERT_GT(server_->port(), 0) << "server did not start";
  }
  static json chat(const json& parts, int* status) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", parts}}})},
                 {"max_tokens", 4},
                 {"temperature", 0}};
    return testing::post_json(server_->port(), "/v1/chat/completions", body, status);
  }
  static json image(const std::string& url) {
    return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
  }
  static inline testing::ServerProcess* server_ = nullptr;
};

TEST_F(ServerMedia, ImageAndAudioPartsCostTheirRows) {
  int status = 0;
  const json text = {{"type", "text"}, {"text", "What is this?"}};
  json plain = chat(json::array({text}), &status);
  ASSERT_EQ(status, 200) << plain.dump();
  const int64_t base = plain["usage"]["prompt_tokens"];
  // 37x53 upscaled 2x (the default) -> 74x106: 10 rows x 14 columns of 8x8 tiles.
  json r =
      chat(json::array({image("data:image/png;base64," + base64(kMedia + "rgb_37x53.png")), text}),
           &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<int64_t>(), base + 140 + 3);  // + part markers
  // 0.23 s = 5 frames.
  json a =
      chat(json::array(
               {{{"type", "input_audio"},
                 {"input_audio", {{"data", base64(kMedia + "tone_0.23s.wav")}, {"format", "wav"}}}},
                text}),
           &status);
  ASSERT_EQ(status, 200) << a.dump();
  EXPECT_EQ(a["usage"]["prompt_tokens"].get<int64_t>(), base + 5 + 4);  // + part markers
  // The same image again: the whole prompt but its last token comes from the prefix cache, and
  // the answer is the same. Another image in its place reuses nothing from the image on.
  json r2 =
      chat(json::array({image("data:image/png;base64," + base64(kMedia + "rgb_37x53.png")), text}),
           &status);
  EXPECT_EQ(r2["choices"][0]["message"], r["choices"][0]["message"]);
  EXPECT_EQ(r2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(),
            r2["usage"]["prompt_tokens"].get<int64_t>() - 1);
  json r3 = chat(
      json::array({image("data:image/png;base64," + base64(kMedia + "palette_21x33.png")), text}),
      &status);
  ASSERT_EQ(status, 200) << r3.dump();
  EXPECT_LT(r3["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), base);
  // A local path under --media-dir.
  json l = chat(json::array({image(kMedia + "photo_64x90.jpg"), text}), &status);
  EXPECT_EQ(status, 200) << l.dump();
}

TEST_F(ServerMedia, BadPartsAre400s) {
  int status = 0;
  auto code = [&](const json& part) {
    json r = chat(json::array({part}), &status);
    EXPECT_EQ(status, 400) << r.dump();
    return r["error"]["code"].is_string() ? r["error"]["code"].get<std::string>() : "";
  };
  EXPECT_EQ(code(image("https://example.com/cat.png")), "remote_url_not_supported");
  EXPECT_EQ(code(image("http://127.0.0.1:1/x.png")), "remote_url_not_supported");
  EXPECT_EQ(code(image("/etc/passwd")), "invalid_path");
  EXPECT_EQ(code(image(kMedia + "../../../../CMakeLists.txt")), "invalid_path");
  EXPECT_EQ(code(image("data:image/png;base64,@@@@")), "invalid_base64");
  EXPECT_EQ(code(image("data:image/png,rawbytes")), "invalid_data_url");
  EXPECT_EQ(code(image("data:image/png;base64,AAAAAAAA")), "invalid_image");
  EXPECT_EQ(code({{"type", "input_audio"}, {"input_audio", {{"data", "AAAA"}, {"format", "wav"}}}}),
            "invalid_audio");
  EXPECT_EQ(code({{"type", "input_audio"}, {"input_audio", {{"data", "AAAA"}, {"format", "mp3"}}}}),
            "unsupported_audio_format");
  EXPECT_EQ(code({{"type", "video_url"}, {"video_url", {{"url", "x"}}}}), "unsupported_content");
}

const std::string kV2Media =
    std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/inkling2_vision/media/";
const std::string kV2Model = INKLING_BINARY_DIR "/tiny_inkling2_vision_model";

TEST(ServerMediaInkling2, ImagePartsOnEveryApiAndNoAudio) {
  ensure_media_model(kV2Model, "--inkling2");
  testing::ServerProcess srv({"--ctx-size", "2048"}, kV2Model);
  ASSERT_GT(srv.port(), 0) << "server did not start";
  int status = 0;
  auto chat = [&](const json& parts) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", parts}}})},
                 {"max_tokens", 4},
                 {"temperature", 0}};
    return testing::post_json(srv.port(), "/v1/chat/completions", body, &status);
  };
  const json text = {{"type", "text"}, {"text", "What is this?"}};
  const std::string rgba = base64(kV2Media + "rgba_83x41.png");  // 2 x 3 tiles of 40x40
  const json img = {{"type", "image_url"},
                    {"image_url", {{"url", "data:image/png;base64," + rgba}}}};
  json plain = chat(json::array({text}));
  ASSERT_EQ(status, 200) << plain.dump();
  const int64_t base = plain["usage"]["prompt_tokens"];
  json r = chat(json::array({img, text}));
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<int64_t>(), base + 6 + 3);  // + part markers
  json r2 = chat(json::array({img, text}));
  EXPECT_EQ(r2["choices"][0]["message"], r["choices"][0]["message"]);
  EXPECT_EQ(r2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(),
            r2["usage"]["prompt_tokens"].get<int64_t>() - 1);
  json other = chat(json::array(
      {{{"type", "image_url"},
        {"image_url", {{"url", "data:image/jpeg;base64," + base64(kV2Media + "photo_64x90.jpg")}}}},
       text}));
  ASSERT_EQ(status, 200) << other.dump();
  EXPECT_LT(other["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), base);
  json audio = chat(json::array(
      {{{"type", "input_audio"},
        {"input_audio", {{"data", base64(kMedia + "tone_0.23s.wav")}, {"format", "wav"}}}}}));
  EXPECT_EQ(status, 400) << audio.dump();
  EXPECT_NE(audio.dump().find("Inkling 2 takes no audio"), std::string::npos) << audio.dump();
  json resp = testing::post_json(
      srv.port(), "/v1/responses",
      {{"max_output_tokens", 3},
       {"input",
        json::array({{{"role", "user"},
                      {"content", json::array({{{"type", "input_image"},
                                                {"image_url", "data:image/png;base64," + rgba}},
                                               {{"type", "input_text"}, {"text", "hi"}}})}}})}},
      &status);
  EXPECT_EQ(status, 200) << resp.dump();
  json msg = testing::post_json(
      srv.port(), "/v1/messages",
      {{"max_tokens", 3},
       {"messages",
        json::array(
            {{{"role", "user"},
              {"content",
               json::array(
                   {{{"type", "image"},
                     {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", rgba}}}},
                    {{"type", "text"}, {"text", "hi"}}})}}})}},
      &status);
  EXPECT_EQ(status, 200) << msg.dump();
  EXPECT_GE(msg["usage"]["input_tokens"].get<int64_t>(), 6);
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace inkling
