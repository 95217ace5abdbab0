// Jinja parity: every case of tests/fixtures/jinja/cases.jsonl (rendered by Jinja2 in
// transformers' chat-template environment by tools/make_chat_fixtures.py) must render
// byte-identically, or fail with the same message.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "text/jinja/jinja.h"

namespace inkling::jinja {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(JinjaParity, FixtureCases) {
  std::ifstream in(INKLING_SOURCE_DIR "/tests/fixtures/jinja/cases.jsonl");
  ASSERT_TRUE(in) << "missing tests/fixtures/jinja/cases.jsonl";
  std::string line;
  int total = 0, matched = 0;
  std::string report;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++total;
    auto row = nlohmann::ordered_json::parse(line);
    const std::string src = row["template"].get<std::string>();
    std::string got;
    bool ok = false;
    Result<Template> t = Template::parse(src);
    if (t.ok()) {
      Result<std::string> r = t->render_json(row["context"]);
      ok = r.ok();
      got = ok ? r.value() : r.status().message();
    } else {
      got = t.status().message();
    }
    bool same;
    if (row.contains("output")) {
      same = ok && got == row["output"].get<std::string>();
    } else {
      const std::string want = row["error"].get<std::string>();
      const std::string type = row["error_type"].get<std::string>();
      // raise_exception messages are exact; other errors are "[template] line ...: <message>".
      same = !ok && (type == "TemplateError"
                         ? got == want
                         : got.rfind("[template] line ", 0) == 0 && ends_with(got, ": " + want));
    }
    if (same) {
      ++matched;
    } else {
      report += "\n  template: " + src + "\n  want: " +
                (row.contains("output") ? row["output"].dump() : "error " + row["error"].dump()) +
                "\n  got:  " + (ok ? nlohmann::json(got).dump() : "error " + got) + "\n";
    }
  }
  std::printf("[jinja parity] %d / %d cases match\n", matched, total);
  EXPECT_GE(total, 150);
  EXPECT_EQ(matched, total) << report;
}

}  // namespace
}  // namespace inkling::jinja
