// `inkling generate --dump-activations` against the transformers reference dump of the same
// prompt (tests/fixtures/full/activations, made by tools/dump_activations.py): every name the
// reference has must be produced with its shape and values, compared in execution order so a
// failure names the first module where the engine departs from transformers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"
#include "base/npy.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kFixture = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full";
const std::string kRefDir = kFixture + "/activations";

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// Largest |ours - ref| over the first `rows` rows, relative to the largest |ref|.
double rel_error(const NpyArray& ours, const NpyArray& ref) {
  double err = 0, scale = 1e-30;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    err = std::max(err, std::fabs(double(ours.data[i]) - double(ref.data[i])));
    scale = std::max(scale, std::fabs(double(ref.data[i])));
  }
  return err / scale;
}

class CliActivations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kRefDir + "/manifest.json")) GTEST_SKIP() << "no fixture";
  }
  TempDir dir_;
};

TEST_F(CliActivations, EveryModuleMatchesTransformersInOrder) {
  const nlohmann::json ref = read_json_file(kRefDir + "/manifest.json");
  ASSERT_TRUE(ref.is_object() && ref.contains("arrays")) << "bad reference manifest";
  const auto ids = ref["ids"].get<std::vector<int32_t>>();
  // -n 3: the prompt, then two generated tokens fed back; their rows follow the prompt's.
  const std::string out = dir_.path() + "/act";
  const auto r = run_cli({"generate", "-m", kFixture + "/og", "--token-ids", join_ids(ids), "-n",
                          "3", "--temperature", "0", "--dump-activations", out},
                         dir_.path(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json ours = read_json_file(out + "/manifest.json");
  ASSERT_TRUE(ours.is_object() && ours.contains("arrays")) << r.err;
  const auto fed = ours["ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(fed.size(), ids.size() + 2);
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), fed.begin()));

  size_t compared = 0;
  for (const auto& [name, shape_json] : ref["arrays"].items()) {
    const auto shape = shape_json.get<std::vector<int64_t>>();
    ASSERT_TRUE(ours["arrays"].contains(name)) << "the engine does not produce " << name;
    auto want = read_npy_f32(kRefDir + "/" + name + ".npy");
    auto got = read_npy_f32(out + "/" + name + ".npy");
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_TRUE(got.ok()) << got.status().message();
    // Same trailing dimensions; the rows of the prompt first, then one per fed-back token.
    ASSERT_EQ(got->shape.size(), shape.size()) << name;
    ASSERT_EQ(got->shape[0], int64_t(fed.size())) << name;
    for (size_t d = 1; d < shape.size(); ++d) ASSERT_EQ(got->shape[d], shape[d]) << name;
    got->data.resize(want->data.size());  // the prompt's rows
    const bool ids_tensor = name.find("topk_ids") != std::string::npos;
    if (ids_tensor) {
      ASSERT_EQ(got->data, want->data) << "first mismatch at " << name;
    } else {
      ASSERT_LE(rel_error(*got, *want), 1e-4) << "first mismatch at " << name;
    }
    ++compared;
  }
  // Every module of every layer: 5 layers of this fixture (4 MoE) and the model-level names.
  EXPECT_GE(compared, 100u);
}

}  // namespace
}  // namespace inkling
