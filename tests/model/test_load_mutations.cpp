// Robustness of the whole load path against corrupted checkpoints: deterministic random
// mutations of a real fixture (header bytes flipped, JSON characters replaced, truncations,
// config fields altered) must each either load (and then run one forward step) or fail with a
// Status — never crash, hang or read out of bounds (run under ASan to check the last part).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/tmp_files.h"
#include "inkling/engine.h"

namespace inkling {
namespace {

using testing::read_file;
using testing::TempDir;
using testing::write_file;

struct Outcome {
  int loaded = 0, rejected = 0;
};

void try_load(const std::string& dir, Outcome* o) {
  auto e = Engine::load(dir, EngineOptions{1, 16});
  if (!e.ok()) {
    EXPECT_FALSE(e.status().message().empty());
    ++o->rejected;
    return;
  }
  ++o->loaded;
  auto s = e.value()->new_session();
  const std::vector<int32_t> ids = {1, 2, 3};
  auto r = s->prefill(ids);  // runs, or refuses cleanly (e.g. a tiny max_position_embeddings)
  if (!r.ok()) {
    EXPECT_NE(r.status().message().find("[session]"), std::string::npos) << r.status().message();
  }
}

TEST(LoadMutations, CorruptedSafetensorsNeverCrash) {
  const std::string src = testing::fixture_dir("hfspell") + "/og";
  if (!std::filesystem::exists(src + "/model.safetensors")) GTEST_SKIP() << "fixture missing";
  const std::string bytes = read_file(src + "/model.safetensors");
  const std::string config = read_file(src + "/config.json");
  uint64_t hlen = 0;
  std::memcpy(&hlen, bytes.data(), 8);
  std::mt19937 rng(1234);
  TempDir dir;
  write_file(dir.file("config.json"), config);
  Outcome o;
  const char kJsonChars[] = "{}[],:\"0123456789-eE. aZ\\";
  for (int i = 0; i < 300; ++i) {
    std::string m = bytes;
    switch (i % 4) {
      case 0:  // flip a byte inside the header (length prefix included)
        m[size_t(rng() % (8 + hlen))] ^= char(1 + rng() % 255);
        break;
      case 1:  // replace a header byte by a JSON-significant character
        m[8 + size_t(rng() % hlen)] = kJsonChars[rng() % (sizeof(kJsonChars) - 1)];
        break;
      case 2:  // truncate anywhere
        m.resize(size_t(rng() % m.size()));
        break;
      case 3:  // corrupt tensor data only: must load and run (values are just different)
        for (int k = 0; k < 16; ++k)
          m[8 + hlen + size_t(rng() % (m.size() - 8 - hlen))] = char(rng());
        break;
    }
    write_file(dir.file("model.safetensors"), m);
    try_load(dir.path(), &o);
  }
  std::printf("[mutations] safetensors: %d loaded, %d rejected\n", o.loaded, o.rejected);
  EXPECT_GT(o.rejected, 100);
  EXPECT_GE(o.loaded, 75);  // at least the data-only mutations
}

// A named pipe (FIFO) in place of a checkpoint file: opening or reading one waits for a writer,
// i.e. for ever. Each must be refused at once with the file named (the alarm ends a hang).
TEST(LoadMutations, PipesInPlaceOfFilesAreRefusedNotWaitedOn) {
  const std::string src = testing::fixture_dir("hfspell") + "/og";
  if (!std::filesystem::exists(src + "/model.safetensors")) GTEST_SKIP() << "fixture missing";
  for (const char* name : {"model.safetensors", "config.json", "model.safetensors.index.json"}) {
    TempDir dir;
    write_file(dir.file("config.json"), read_file(src + "/config.json"));
    write_file(dir.file("model.safetensors"), read_file(src + "/model.safetensors"));
    std::filesystem::remove(dir.file(name));
    ASSERT_EQ(::mkfifo(dir.file(name).c_str(), 0600), 0) << name;
    ::alarm(30);
    auto e = Engine::load(dir.path(), EngineOptions{1, 16});
    ::alarm(0);
    ASSERT_FALSE(e.ok()) << name;
    EXPECT_NE(e.status().message().find(dir.file(name)), std::string::npos)
        << name << ": " << e.status().message();
    EXPECT_NE(e.status().message().find("not a regular file"), std::string::npos)
        << name << ": " << e.status().message();
  }
}

TEST(LoadMutations, AlteredConfigValuesNeverCrash) {
  const std::string src = testing::fixture_dir("hfspell") + "/og";
  if (!std::filesystem::exists(src + "/config.json")) GTEST_SKIP() << "fixture missing";
  const auto config = nlohmann::json::parse(read_file(src + "/config.json"));
  TempDir dir;
  std::filesystem::copy_file(src + "/model.safetensors", dir.file("model.safetensors"));
  const nlohmann::json values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   7,
                                   1000000,
                                   1e300,
                                   0.5,
                                   "x",
                                   nullptr,
                                   nlohmann::json::array(),
                                   nlohmann::json::object(),
                                   true};
  Outcome o;
  for (const auto& [key, _] : config["text_config"].items()) {
    for (const auto& v : values) {
      auto c = config;
      c["text_config"][key] = v;
      write_file(dir.file("config.json"), c.dump());
      try_load(dir.path(), &o);
    }
  }
  std::printf("[mutations] config: %d loaded, %d rejected\n", o.loaded, o.rejected);
  EXPECT_GT(o.rejected, 50);
}

}  // namespace
}  // namespace inkling
