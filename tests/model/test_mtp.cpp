// MTP draft depths (spec/inkling-mtp.md): config parsing of mtp_config and its HF spellings,
// binding, and each depth's teacher-forced logits against tools/mtp_reference.py on the demo
// model and on a random fixture with three depths (tests/fixtures/mtp, tools/make_mtp_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "../common/fixtures.h"
#include "../common/tmp_files.h"
#include "model/mtp.h"

namespace inkling {
namespace {

using testing::json_ids;
using testing::read_json;

const std::string kFix = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mtp/";

// sum_i word_i * (2i + 1) mod 2^64 over the file's little-endian 64-bit words, zero-padded
// (tools/make_mtp_fixtures.py: checksum).
uint64_t checksum(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return 0;
  std::string raw = std::move(text).value();
  raw.resize((raw.size() + 7) / 8 * 8, '\0');
  uint64_t sum = 0;
  for (size_t i = 0; i < raw.size() / 8; ++i) {
    uint64_t w = 0;
    std::memcpy(&w, raw.data() + i * 8, 8);
    sum += w * (2 * uint64_t(i) + 1);
  }
  return sum;
}

// Each depth's logits at the stored rows within 1e-4 relative (max|diff| / max|ref|) of the
// reference, and the argmax of every row equal.
void check_depths(const std::string& model_dir, const std::string& ref_dir, size_t want_depths) {
  auto m = Model::load(model_dir);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Model& model = *m.value();
  ASSERT_EQ(model.weights.mtp.size(), want_depths);
  const auto ref = read_json(ref_dir + "/ref.json");
  const auto prompt = json_ids(ref, "prompt_ids");
  ASSERT_FALSE(prompt.empty());
  // The fixture was made from these weights (after a retrain: python3 tools/make_mtp_fixtures.py).
  if (ref.contains("model_checksum")) {
    ASSERT_EQ(std::to_string(checksum(model_dir + "/model.safetensors")),
              ref["model_checksum"].get<std::string>())
        << model_dir << " changed since " << ref_dir
        << " was made: regenerate it with python3 tools/make_mtp_fixtures.py --demo";
  }
  ThreadPool pool(2);
  for (int64_t chunk : {int64_t(256), int64_t(7)}) {  // one chunk, and rows split over calls
    const auto got = mtp_teacher_forced(model, prompt, chunk, &pool);
    ASSERT_EQ(got.size(), want_depths);
    const int64_t V = model.config.unpadded_vocab;
    for (size_t d = 0; d < want_depths; ++d) {
      const auto& jd = ref["depths"][d];
      const int64_t rows = jd["rows"].get<int64_t>();
      ASSERT_EQ(int64_t(got[d].size()), rows * V);
      auto npy = read_npy_f32(ref_dir + "/depth" + std::to_string(d) + ".npy");
      ASSERT_TRUE(npy.ok()) << npy.status().message();
      const auto stored = jd["stored_rows"].get<std::vector<int64_t>>();
      ASSERT_EQ(npy->shape, (std::vector<int64_t>{int64_t(stored.size()), V}));
      float max_diff = 0, max_ref = 0;
      for (size_t i = 0; i < stored.size(); ++i)
        for (int64_t v = 0; v < V; ++v) {
          const float r = npy->data[i * size_t(V) + size_t(v)];
          max_ref = std::max(max_ref, std::fabs(r));
          max_diff = std::max(max_diff, std::fabs(r - got[d][size_t(stored[i] * V + v)]));
        }
      size_t same = 0;
      const auto want_argmax = jd["argmax"].get<std::vector<int32_t>>();
      for (int64_t p = 0; p < rows; ++p)
        same += argmax(std::span<const float>(got[d].data() + p * V, size_t(V))) ==
                want_argmax[size_t(p)];
      std::printf(
          "[mtp] %s depth %zu chunk %lld: max|diff| %.3g, max|logit| %.3g, ratio %.3g, "
          "argmax %zu/%lld\n",
          ref_dir.substr(ref_dir.rfind('/') + 1).c_str(), d, (long long)chunk, max_diff, max_ref,
          max_diff / max_ref, same, (long long)rows);
      EXPECT_LE(max_diff, 1e-4f * max_ref) << "depth " << d;
      EXPECT_EQ(same, size_t(rows)) << "depth " << d;
    }
  }
}

TEST(Mtp, RandomThreeDepthsMatchReference) {
  check_depths(kFix + "multi", kFix + "multi", 3);
}

TEST(Mtp, DemoModelDepthsMatchReference) {
  const std::string demo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
  if (!std::filesystem::exists(demo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  check_depths(demo, kFix + "demo", 2);
}

// The summary tools/export_demo.py writes next to the demo model whenever it is (re)exported
// (tests/fixtures/demo/mtp.json: per-depth argmax of every row, row 0's first 16 logits), so
// this check follows the model without a separate regeneration step.
TEST(Mtp, DemoModelMatchesExportSummary) {
  const std::string demo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
  const std::string summary = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo/mtp.json";
  if (!std::filesystem::exists(demo + "/model.safetensors") || !std::filesystem::exists(summary))
    GTEST_SKIP() << "no demo model";
  auto m = Model::load(demo);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto ref = read_json(summary);
  const auto prompt = json_ids(ref, "prompt_ids");
  ThreadPool pool(2);
  const auto got = mtp_teacher_forced(*m.value(), prompt, 256, &pool);
  ASSERT_EQ(got.size(), ref["depths"].size());
  const int64_t V = m.value()->config.unpadded_vocab;
  for (size_t d = 0; d < got.size(); ++d) {
    const auto& jd = ref["depths"][d];
    const auto want = jd["argmax"].get<std::vector<int32_t>>();
    ASSERT_EQ(int64_t(got[d].size()), int64_t(want.size()) * V);
    for (size_t p = 0; p < want.size(); ++p)
      EXPECT_EQ(argmax(std::span<const float>(got[d].data() + p * size_t(V), size_t(V))), want[p])
          << "depth " << d << " row " << p;
    const auto row0 = jd["logits_row0_first16"].get<std::vector<float>>();
    const float tol = 1e-4f * jd["logits_max_abs"].get<float>();
    for (size_t v = 0; v < row0.size(); ++v)
      EXPECT_NEAR(got[d][v], row0[v], tol) << "depth " << d << " logit " << v;
  }
}

TEST(Mtp, ConfigSpellings) {
  const std::string base =
      R"("hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 1, "head_dim": 4, "swa_num_attention_heads": 2,
         "swa_num_key_value_heads": 2, "swa_head_dim": 4, "sliding_window_size": 6,
         "rel_extent": 10, "vocab_size": 16)";
  // OG: top-level mtp_config.
  auto og = parse_config(R"({"mtp_config": {"num_nextn_predict_layers": 3, "local_layer_ids":
      [0, 2], "chain_hidden_post_norm": false, "local_extent": 5}, "text_config": {)" +
                             base + "}}",
                         "og");
  ASSERT_TRUE(og.ok()) << og.status().message();
  ASSERT_EQ(og->mtp.depths.size(), 3u);
  EXPECT_TRUE(og->mtp.depths[0].sliding);
  EXPECT_FALSE(og->mtp.depths[1].sliding);
  EXPECT_EQ(og->mtp.depths[0].rel_extent, 5);  // local_extent
  EXPECT_EQ(og->mtp.depths[0].n_kv_heads, 2);  // sliding geometry
  EXPECT_EQ(og->mtp.depths[1].rel_extent, 10);
  EXPECT_EQ(og->mtp.depths[1].n_kv_heads, 1);  // global geometry
  EXPECT_TRUE(og->mtp.depths[1].dense);
  EXPECT_TRUE(og->mtp.hidden_first);
  // HF: flat fields in the text config; local extent defaults to the window.
  auto hf = parse_config(R"({"num_mtp_layers": 2, "mtp_local_layer_ids": [1],
      "mtp_hidden_states_first": false, )" +
                             base + "}",
                         "hf");
  ASSERT_TRUE(hf.ok()) << hf.status().message();
  ASSERT_EQ(hf->mtp.depths.size(), 2u);
  EXPECT_FALSE(hf->mtp.depths[0].sliding);
  EXPECT_TRUE(hf->mtp.depths[1].sliding);
  EXPECT_EQ(hf->mtp.depths[1].rel_extent, 6);
  EXPECT_FALSE(hf->mtp.hidden_first);
  // No MTP at all.
  auto none = parse_config("{" + base + "}", "none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->mtp.depths.empty());
  // Bad input: one error naming the field.
  for (const auto& [json, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"mtp_config": {"num_nextn_predict_layers": 2, "local_layer_ids": [2]}, )",
            "mtp_config.local_layer_ids"},
           {R"({"mtp_config": {"num_nextn_predict_layers": -1}, )",
            "mtp_config.num_nextn_predict_layers"},
           {R"({"mtp_config": {"num_nextn_predict_layers": 1, "chain_hidden_post_norm": true}, )",
            "mtp_config.chain_hidden_post_norm"},
           {R"({"mtp_config": 3, )", "mtp_config"},
           {R"({"num_mtp_layers": 1, "mtp_hidden_states_first": 1, )",
            "mtp_hidden_states_first"}}) {
    auto r = parse_config(json + base + "}", "bad");
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.status().message().find("'" + field + "'"), std::string::npos)
        << r.status().message();
  }
}

// A checkpoint whose MTP tensors are malformed fails at load naming the tensor; one without any
// (the `full` fixture declares a depth but ships only a junk MTP tensor) loads without depths.
TEST(Mtp, BindChecksShapesAndToleratesAbsentDepths) {
  auto full = Model::load(testing::fixture_dir("full") + "/og");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full.value()->config.mtp.depths.size(), 1u);
  EXPECT_TRUE(full.value()->weights.mtp.empty());

  auto multi = Model::load(kFix + "multi");
  ASSERT_TRUE(multi.ok()) << multi.status().message();
  const ModelConfig& c = multi.value()->config;
  auto trunk = sanitize(refs_from_store(multi.value()->store), nullptr);
  auto depths = sanitize_mtp(refs_from_store(multi.value()->store));
  ASSERT_TRUE(trunk.ok() && depths.ok());
  ASSERT_TRUE(depths->count("mtp.2.mlp.gate_proj.weight"));  // fused w13 split, renamed
  // Transposed projection: the error names the checkpoint tensor and both shapes.
  TensorMap bad = trunk.value();
  for (auto [n, r] : depths.value()) {
    if (n == "mtp.1.self_attn.q_proj.weight") std::swap(r.shape[0], r.shape[1]);
    bad.emplace(n, r);
  }
  auto w = bind_weights(c, bad);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("model.mtp.layers.1.transformer_block.attn.wq_du.weight"),
            std::string::npos)
      << w.status().message();
  // A missing tensor of depth 2.
  bad = trunk.value();
  for (const auto& [n, r] : depths.value())
    if (n != "mtp.2.hidden_norm.weight") bad.emplace(n, r);
  w = bind_weights(c, bad);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("'model.mtp.layers.2.hidden_norm.weight'"), std::string::npos)
      << w.status().message();
}

// Inkling-Small's layout: shards listed by model.safetensors.index.json and the depths in an
// mtp.safetensors the index does not list; the depths still load (and only once).
TEST(Mtp, SeparateMtpFileBesideAnIndex) {
  testing::TempDir dir;
  const std::string src = kFix + "multi";
  std::filesystem::copy_file(src + "/config.json", dir.path() + "/config.json");
  std::filesystem::copy_file(src + "/model.safetensors", dir.path() + "/shard-1.safetensors");
  std::filesystem::copy_file(src + "/mtp.safetensors", dir.path() + "/mtp.safetensors");
  auto shard = TensorStore::from_files({dir.path() + "/shard-1.safetensors"});
  ASSERT_TRUE(shard.ok());
  nlohmann::json index = {{"weight_map", nlohmann::json::object()}};
  for (const auto& [name, t] : shard->all()) index["weight_map"][name] = "shard-1.safetensors";
  testing::write_file(dir.path() + "/model.safetensors.index.json", index.dump());
  auto m = Model::load(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value()->weights.mtp.size(), 3u);
  EXPECT_TRUE(m.value()->mtp_store.has_value());
  // Without mtp.safetensors the config's depths are declared but not bound.
  std::filesystem::remove(dir.path() + "/mtp.safetensors");
  auto bare = Model::load(dir.path());
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_TRUE(bare.value()->weights.mtp.empty());
}

}  // namespace
}  // namespace inkling
