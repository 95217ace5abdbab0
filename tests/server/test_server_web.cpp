// The chat page `inkling serve` answers at /: served as HTML without an API key (the page sends
// the key with its API calls), self-contained (no URL to anywhere else: no CDN, no fonts, no
// images), and the API it calls is what the server implements.
#include <httplib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "server_process.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;

// On the demo model: it loads in a tenth of a second.
const std::string kWebDemo = INKLING_SOURCE_DIR "/models/inkling-demo";

TEST(ServerWeb, ServesTheSelfContainedChatPage) {
  if (!std::filesystem::exists(kWebDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  testing::ServerProcess server({"--api-key", "web-key"}, kWebDemo);
  ASSERT_GT(server.port(), 0) << "server did not start";
  httplib::Client c("127.0.0.1", server.port());
  auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(r->get_header_value("Content-Security-Policy"), HasSubstr("connect-src 'self'"));
  // Attached images and audio are shown from data: URLs, and from nowhere else.
  EXPECT_THAT(r->get_header_value("Content-Security-Policy"), HasSubstr("img-src 'self' data:;"));
  EXPECT_THAT(r->get_header_value("Content-Security-Policy"), HasSubstr("media-src data:;"));
  const std::string& page = r->body;
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_THAT(page, HasSubstr("<title>inkling chat</title>"));
  EXPECT_THAT(page, HasSubstr("</html>"));
  EXPECT_THAT(page, HasSubstr("id=\"attach\""));  // images and audio can be attached
  // Nothing loaded from elsewhere: no absolute URL, no src/href attribute with a scheme or a
  // protocol-relative URL (the Markdown renderer's links are built from model text, checked
  // against http(s)/mailto), no @import.
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_FALSE(std::regex_search(
      page, std::regex(R"(\b(src|href|action)\s*=\s*["']?\s*(//|[a-zA-Z][a-zA-Z0-9+.-]*:))")));
  EXPECT_EQ(page.find(" src="), std::string::npos);  // no <script src>, <img src>, ...
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("//cdn"), std::string::npos);
  // The API it streams from, relative to this server.
  EXPECT_THAT(page, HasSubstr("\"v1/chat/completions\""));

  // HEAD too; the API itself still wants the key.
  auto h = c.Head("/");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 401);
  // Only GET: a POST to / is refused.
  auto p = c.Post("/", "{}", "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 405);
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace inkling
