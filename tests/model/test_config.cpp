// parse_config / load_config: layer classification precedence, both MLP-width spellings,
// aliases, the top-level InklingConfig wrapper, eos handling, log-scaling floor, per-layer
// derived fields, and one clear error (naming the field) for each kind of bad input.
#include "model/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/tmp_files.h"

namespace inkling {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

ModelConfig parse_ok(const json& j) {
  auto r = parse_config(j.dump(), "cfg.json");
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << j.dump();
  return r.ok() ? r.value() : ModelConfig{};
}

// Expects a failure mentioning the source and every one of `parts` (field names).
void expect_text_error(const std::string& text, std::initializer_list<std::string> parts) {
  auto r = parse_config(text, "some/dir/config.json");
  ASSERT_FALSE(r.ok()) << "accepted: " << text;
  const std::string& m = r.status().message();
  EXPECT_THAT(m, HasSubstr("[config]"));
  EXPECT_THAT(m, HasSubstr("some/dir/config.json"));
  for (const auto& p : parts) EXPECT_THAT(m, HasSubstr(p)) << text;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}
void expect_error(const json& j, std::initializer_list<std::string> parts) {
  expect_text_error(j.dump(), parts);
}

std::vector<int> globals(const ModelConfig& c) {
  std::vector<int> g;
  for (size_t i = 0; i < c.layers.size(); ++i)
    if (!c.layers[i].sliding) g.push_back(int(i));
  return g;
}
std::vector<int> dense(const ModelConfig& c) {
  std::vector<int> d;
  for (size_t i = 0; i < c.layers.size(); ++i)
    if (c.layers[i].dense) d.push_back(int(i));
  return d;
}

// ---- (a) layer classification ---------------------------------------------------------------

TEST(Config, DefaultLayerClassificationIsIPlusOneMod6) {
  const auto c = parse_ok({{"num_hidden_layers", 12}});
  ASSERT_EQ(c.layers.size(), 12u);
  EXPECT_EQ(globals(c), (std::vector<int>{5, 11}));
  EXPECT_TRUE(dense(c).empty()) << "no mlp_layer_types and no dense_mlp_idx: every layer MoE";
  EXPECT_TRUE(c.has_moe());
  const auto b = parse_ok({{"num_hidden_layers", 66}});
  EXPECT_EQ(globals(b).size(), 11u);
  EXPECT_EQ(globals(b).front(), 5);
  EXPECT_EQ(globals(b).back(), 65);
}

TEST(Config, LocalLayerIdsBeatDefault) {
  const auto c = parse_ok({{"num_hidden_layers", 4}, {"local_layer_ids", {0, 2}}});
  EXPECT_EQ(globals(c), (std::vector<int>{1, 3}));
  const auto none = parse_ok({{"num_hidden_layers", 3}, {"local_layer_ids", json::array()}});
  EXPECT_EQ(globals(none), (std::vector<int>{0, 1, 2}));
}

TEST(Config, LayerTypesBeatLocalLayerIds) {
  const auto c =
      parse_ok({{"num_hidden_layers", 4},
                {"local_layer_ids", {0, 1, 2, 3}},
                {"layer_types", {"hybrid", "hybrid_sliding", "hybrid_sliding", "hybrid"}}});
  EXPECT_EQ(globals(c), (std::vector<int>{0, 3}));
  // transformers' generic spellings are accepted too.
  const auto g = parse_ok(
      {{"num_hidden_layers", 2}, {"layer_types", {"sliding_attention", "full_attention"}}});
  EXPECT_EQ(globals(g), (std::vector<int>{1}));
}

TEST(Config, MlpLayerTypesBeatDenseMlpIdx) {
  const auto a = parse_ok({{"num_hidden_layers", 4}, {"dense_mlp_idx", 2}});
  EXPECT_EQ(dense(a), (std::vector<int>{0, 1}));
  const auto b = parse_ok({{"num_hidden_layers", 4},
                           {"dense_mlp_idx", 2},
                           {"mlp_layer_types", {"sparse", "dense", "sparse", "dense"}}});
  EXPECT_EQ(dense(b), (std::vector<int>{1, 3}));
  const auto all_dense = parse_ok({{"num_hidden_layers", 2}, {"dense_mlp_idx", 5}});
  EXPECT_EQ(dense(all_dense), (std::vector<int>{0, 1}));
  EXPECT_FALSE(all_dense.has_moe());
  const auto zero = parse_ok({{"num_hidden_layers", 3}, {"dense_mlp_idx", 0}});
  EXPECT_TRUE(dense(zero).empty());
}

TEST(Config, DenseOnlyModelSkipsTopKCheck) {
  // top_k > n_routed only matters when some layer is MoE.
  const auto c = parse_ok({{"num_hidden_layers", 2},
                           {"mlp_layer_types", {"dense", "dense"}},
                           {"n_routed_experts", 2},
                           {"num_experts_per_tok", 4}});
  EXPECT_FALSE(c.has_moe());
}

// ---- (b) MLP widths ---------------------------------------------------------------------------

TEST(Config, WidthsTransformersSpelling) {
  const auto c = parse_ok({{"intermediate_size", 4096}, {"moe_intermediate_size", 512}});
  EXPECT_EQ(c.dense_width, 4096);
  EXPECT_EQ(c.moe_width, 512);
  EXPECT_EQ(c.format, "hf");
}

TEST(Config, WidthsOriginalSpelling) {
  const auto c = parse_ok({{"intermediate_size", 2048}, {"dense_intermediate_size", 16384}});
  EXPECT_EQ(c.dense_width, 16384);
  EXPECT_EQ(c.moe_width, 2048);
  EXPECT_EQ(c.format, "og");
}

TEST(Config, WidthsNestedOriginalSpelling) {
  const auto c = parse_ok(
      {{"model_type", "inkling_mm_model"},
       {"text_config", {{"intermediate_size", 2048}, {"dense_intermediate_size", 16384}}}});
  EXPECT_EQ(c.dense_width, 16384);
  EXPECT_EQ(c.moe_width, 2048);
}

// ---- (c) aliases ------------------------------------------------------------------------------

TEST(Config, Aliases) {
  const auto a = parse_ok({{"sconv_kernel_size", 3},
                           {"sliding_window", 64},
                           {"num_local_experts", 16},
                           {"embedding_multiplier", 16.0}});
  EXPECT_EQ(a.conv_k, 3);
  EXPECT_EQ(a.window, 64);
  EXPECT_EQ(a.n_routed, 16);
  EXPECT_EQ(a.mup_divisor, 16.0);
  const auto b = parse_ok({{"conv_kernel_size", 5},
                           {"sliding_window_size", 32},
                           {"n_routed_experts", 8},
                           {"logits_mup_width_multiplier", 24.0}});
  EXPECT_EQ(b.conv_k, 5);
  EXPECT_EQ(b.window, 32);
  EXPECT_EQ(b.n_routed, 8);
  EXPECT_EQ(b.mup_divisor, 24.0);
  // A null value is treated as absent (falls back to the alias or the default).
  const auto c = parse_ok({{"sliding_window_size", nullptr}, {"sliding_window", 16}});
  EXPECT_EQ(c.window, 16);
}

TEST(Config, Defaults) {
  const auto c = parse_ok(json::object());
  EXPECT_EQ(c.vocab_size, 201024);
  EXPECT_EQ(c.unpadded_vocab, 201024);  // unset -> no slicing
  EXPECT_EQ(c.hidden, 6144);
  EXPECT_EQ(c.n_layers, 66);
  EXPECT_EQ(c.window, 512);
  EXPECT_EQ(c.rel_extent, 1024);
  EXPECT_EQ(c.conv_k, 4);
  EXPECT_EQ(c.dense_width, 24576);
  EXPECT_EQ(c.moe_width, 3072);
  EXPECT_EQ(c.top_k, 6);
  EXPECT_EQ(c.n_shared, 2);
  EXPECT_EQ(c.route_scale, 8.0);
  EXPECT_EQ(c.mup_divisor, 24.0);
  EXPECT_FALSE(c.log_floor.has_value());
  EXPECT_DOUBLE_EQ(c.log_alpha, 0.1);
  EXPECT_DOUBLE_EQ(c.rms_eps, 1e-6);
  EXPECT_EQ(c.model_type, "");
}

TEST(Config, ValuesAreRead) {
  const auto c = parse_ok({{"vocab_size", 1000},
                           {"unpadded_vocab_size", 990},
                           {"hidden_size", 64},
                           {"d_rel", 8},
                           {"rel_extent", 96},
                           {"log_scaling_alpha", 0.25},
                           {"rms_norm_eps", 1e-5},
                           {"num_experts_per_tok", 3},
                           {"n_shared_experts", 0},
                           {"route_scale", 2.5},
                           {"num_hidden_layers", 3},
                           {"n_routed_experts", 7}});
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_EQ(c.unpadded_vocab, 990);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.d_rel, 8);
  EXPECT_EQ(c.rel_extent, 96);
  EXPECT_DOUBLE_EQ(c.log_alpha, 0.25);
  EXPECT_DOUBLE_EQ(c.rms_eps, 1e-5);
  EXPECT_EQ(c.top_k, 3);
  EXPECT_EQ(c.n_shared, 0);
  EXPECT_EQ(c.route_scale, 2.5);
  EXPECT_EQ(c.n_routed, 7);
}

// ---- (d) top level ----------------------------------------------------------------------------

TEST(Config, TopLevelModelTypes) {
  for (const char* mt : {"inkling_mm_model", "inkling", "inkling_text"}) {
    const auto c = parse_ok(
        {{"model_type", mt}, {"text_config", {{"hidden_size", 32}, {"num_hidden_layers", 2}}}});
    EXPECT_EQ(c.model_type, mt);
    EXPECT_EQ(c.hidden, 32) << mt;
    EXPECT_EQ(c.n_layers, 2) << mt;
  }
  const auto bare = parse_ok({{"hidden_size", 48}, {"num_hidden_layers", 1}});
  EXPECT_EQ(bare.model_type, "");
  EXPECT_EQ(bare.hidden, 48);
  const auto nested_no_type = parse_ok({{"text_config", {{"hidden_size", 40}}}});
  EXPECT_EQ(nested_no_type.hidden, 40);
  // With a text_config, text fields at the top level are not the decoder's.
  const auto shadow = parse_ok(
      {{"model_type", "inkling"}, {"hidden_size", 999}, {"text_config", {{"hidden_size", 40}}}});
  EXPECT_EQ(shadow.hidden, 40);
}

TEST(Config, EosIntOrListTopLevelWins) {
  EXPECT_EQ(parse_ok({{"eos_token_id", 7}}).eos_ids, (std::vector<int32_t>{7}));
  EXPECT_EQ(parse_ok({{"eos_token_id", {7, 9}}}).eos_ids, (std::vector<int32_t>{7, 9}));
  EXPECT_TRUE(parse_ok(json::object()).eos_ids.empty());
  const auto c = parse_ok({{"model_type", "inkling_mm_model"},
                           {"eos_token_id", {200006, 200007}},
                           {"text_config", {{"eos_token_id", 2}}}});
  EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{200006, 200007}));
  const auto inner =
      parse_ok({{"model_type", "inkling_mm_model"}, {"text_config", {{"eos_token_id", 2}}}});
  EXPECT_EQ(inner.eos_ids, (std::vector<int32_t>{2}));
  const auto null_top =
      parse_ok({{"eos_token_id", nullptr}, {"text_config", {{"eos_token_id", 3}}}});
  EXPECT_EQ(null_top.eos_ids, (std::vector<int32_t>{3}));
}

// generation_config.json's eos ids (one or a list) are added to config.json's; a bad file or an
// id outside the vocabulary is one error naming generation_config.json.
TEST(Config, GenerationConfigEosIdsAreAdded) {
  testing::TempDir dir;
  json cfg = testing::tiny_config_json(false);
  cfg["eos_token_id"] = 3;
  testing::write_file(dir.path() + "/config.json", cfg.dump());
  auto plain = load_config(dir.path());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->eos_ids, (std::vector<int32_t>{3}));
  testing::write_file(dir.path() + "/generation_config.json", R"({"eos_token_id": [3, 5]})");
  auto both = load_config(dir.path());
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->eos_ids, (std::vector<int32_t>{3, 5}));
  testing::write_file(dir.path() + "/generation_config.json", R"({"do_sample": false})");
  EXPECT_EQ(load_config(dir.path())->eos_ids, (std::vector<int32_t>{3}));
  for (const char* bad : {R"({"eos_token_id": "x"})", R"({"eos_token_id": [1000000]})", "{"}) {
    testing::write_file(dir.path() + "/generation_config.json", bad);
    auto r = load_config(dir.path());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("generation_config.json")) << bad;
  }
}

// ---- (e) log scaling --------------------------------------------------------------------------

TEST(Config, LogScalingFloor) {
  EXPECT_FALSE(parse_ok({{"log_scaling_n_floor", nullptr}}).log_floor.has_value());
  EXPECT_FALSE(parse_ok(json::object()).log_floor.has_value());
  const auto c = parse_ok({{"log_scaling_n_floor", 128000}});
  ASSERT_TRUE(c.log_floor.has_value());
  EXPECT_EQ(*c.log_floor, 128000.0);
  const auto f = parse_ok({{"log_scaling_n_floor", 4.5}});
  ASSERT_TRUE(f.log_floor.has_value());
  EXPECT_EQ(*f.log_floor, 4.5);
}

// ---- (f) per-layer fields ---------------------------------------------------------------------

TEST(Config, PerLayerHeadsAndExtent) {
  const auto c = parse_ok({{"num_hidden_layers", 3},
                           {"layer_types", {"hybrid_sliding", "hybrid", "hybrid_sliding"}},
                           {"num_attention_heads", 8},
                           {"num_key_value_heads", 2},
                           {"head_dim", 16},
                           {"swa_num_attention_heads", 6},
                           {"swa_num_key_value_heads", 3},
                           {"swa_head_dim", 12},
                           {"sliding_window_size", 8},
                           {"rel_extent", 12}});
  for (int i : {0, 2}) {
    const LayerSpec& l = c.layers[size_t(i)];
    EXPECT_TRUE(l.sliding);
    EXPECT_EQ(l.n_heads, 6);
    EXPECT_EQ(l.n_kv_heads, 3);
    EXPECT_EQ(l.head_dim, 12);
    EXPECT_EQ(l.rel_extent, 8) << "sliding layers use R = window";
  }
  const LayerSpec& g = c.layers[1];
  EXPECT_FALSE(g.sliding);
  EXPECT_EQ(g.n_heads, 8);
  EXPECT_EQ(g.n_kv_heads, 2);
  EXPECT_EQ(g.head_dim, 16);
  EXPECT_EQ(g.rel_extent, 12);
}

TEST(Config, TinyFixtureConfigsParse) {
  for (bool og : {false, true}) {
    const auto c = parse_ok(testing::tiny_config_json(og));
    const testing::TinyDims d;
    ASSERT_EQ(c.layers.size(), 2u);
    EXPECT_TRUE(c.layers[0].sliding);
    EXPECT_TRUE(c.layers[0].dense);
    EXPECT_FALSE(c.layers[1].sliding);
    EXPECT_FALSE(c.layers[1].dense);
    EXPECT_EQ(c.dense_width, d.Id);
    EXPECT_EQ(c.moe_width, d.I);
    EXPECT_EQ(c.conv_k, d.K);
    EXPECT_EQ(c.unpadded_vocab, d.Vu);
    EXPECT_EQ(c.format, og ? "og" : "hf");
  }
}

// ---- (g) errors -------------------------------------------------------------------------------

TEST(ConfigBad, NotJson) {
  expect_text_error("{\"hidden_size\": 12,", {"not valid JSON"});
  expect_text_error("", {"not valid JSON"});
  expect_text_error("[1, 2]", {"not a JSON object"});
}

TEST(ConfigBad, WrongModelType) {
  expect_error({{"model_type", "llama"}}, {"model_type", "llama"});
}

TEST(ConfigBad, TextConfigNotObject) {
  expect_error({{"text_config", 3}}, {"text_config"});
}

TEST(ConfigBad, HiddenSizeString) {
  expect_error({{"hidden_size", "4096"}}, {"'hidden_size'", "integer"});
  expect_error({{"text_config", {{"hidden_size", "4096"}}}}, {"'text_config.hidden_size'"});
  expect_error({{"hidden_size", 12.5}}, {"'hidden_size'"});
  expect_error({{"hidden_size", true}}, {"'hidden_size'"});
  expect_error({{"hidden_size", -8}}, {"'hidden_size'"});
}

TEST(ConfigBad, ZeroLayers) {
  expect_error({{"num_hidden_layers", 0}}, {"'num_hidden_layers'"});
}

TEST(ConfigBad, ZeroSizedDimensions) {
  for (const char* f :
       {"num_key_value_heads", "swa_num_key_value_heads", "head_dim", "sliding_window_size",
        "conv_kernel_size", "num_experts_per_tok", "vocab_size", "unpadded_vocab_size"})
    expect_error({{f, 0}}, {std::string("'") + f + "'"});
}

TEST(ConfigBad, ImplausiblyLarge) {
  expect_error({{"hidden_size", int64_t(1) << 50}}, {"'hidden_size'"});
  // Values that do not fit the int field must not wrap around: 2^32 + 8 would become 8, and
  // 2^31 a negative layer count (a std::length_error crash before the fix in Fields::integer).
  expect_error({{"hidden_size", (int64_t(1) << 32) + 8}}, {"'hidden_size'"});
  expect_error({{"num_hidden_layers", int64_t(1) << 31}}, {"'num_hidden_layers'"});
  expect_error({{"text_config", {{"num_hidden_layers", (int64_t(1) << 32) + 2}}}},
               {"'text_config.num_hidden_layers'"});
  // Token ids are int32 and the logits row is vocab-wide: a vocabulary is bounded (2^24).
  expect_error({{"vocab_size", int64_t(1) << 33}}, {"'vocab_size'", "exceeds"});
  EXPECT_EQ(parse_ok({{"vocab_size", int64_t(1) << 24}}).vocab_size, int64_t(1) << 24);
}

// Every config value that sizes memory has an upper bound (src/model/config.cpp), reported as
// one error naming the field and the limit. Before these bounds, top_k + n_shared > 512 passed
// validation and overran route()'s fixed float[512] (a stack-buffer-overflow under ASan).
TEST(ConfigBad, ValuesThatSizeMemoryAreBounded) {
  struct Case {
    const char* field;
    int64_t value;
  };
  for (const Case& k :
       {Case{"vocab_size", (1 << 24) + 1}, Case{"unpadded_vocab_size", 1 << 25},
        Case{"hidden_size", (1 << 20) + 1}, Case{"num_hidden_layers", 4097},
        Case{"num_attention_heads", 8192}, Case{"num_key_value_heads", 8192},
        Case{"head_dim", 4097}, Case{"swa_num_attention_heads", 8192},
        Case{"swa_num_key_value_heads", 8192}, Case{"swa_head_dim", 4097},
        Case{"sliding_window_size", (1 << 24) + 1}, Case{"d_rel", 4097},
        Case{"rel_extent", (1 << 24) + 1}, Case{"conv_kernel_size", 257},
        Case{"intermediate_size", (1 << 20) + 1}, Case{"moe_intermediate_size", (1 << 20) + 1},
        Case{"n_routed_experts", (1 << 16) + 1}, Case{"num_experts_per_tok", 1025},
        Case{"n_shared_experts", 1025}}) {
    expect_error({{k.field, k.value}}, {std::string("'") + k.field + "'", "exceeds"});
    expect_error({{"text_config", {{k.field, k.value}}}},
                 {std::string("'text_config.") + k.field + "'", std::to_string(k.value)});
  }
  expect_error({{"dense_intermediate_size", 16384}, {"intermediate_size", (1 << 20) + 1}},
               {"'intermediate_size'", "exceeds"});
  expect_error({{"dense_intermediate_size", (1 << 20) + 1}}, {"'dense_intermediate_size'"});
  // The example from the issue: a top_k the router could never have been trained for.
  auto r = parse_config(
      json({{"model_type", "inkling_mm_model"},
            {"text_config", {{"n_routed_experts", 65536}, {"num_experts_per_tok", 100000}}}})
          .dump(),
      "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "[config] config.json: field 'text_config.num_experts_per_tok' = 100000 exceeds the "
            "supported maximum 1024");
  // Products of two in-range values: per-layer query and relative-state widths.
  expect_error({{"num_attention_heads", 4096}, {"num_key_value_heads", 1}, {"head_dim", 4096}},
               {"'num_attention_heads' x 'head_dim'", "exceeds"});
  expect_error({{"swa_num_attention_heads", 4096}, {"swa_num_key_value_heads", 1}, {"d_rel", 4096}},
               {"'swa_num_attention_heads' x 'd_rel'"});
}

// Values beyond int64 are too large, not wrapped into range (a float such as 1e30 converted
// to int64 is undefined behaviour; an unsigned 2^64 - 1 reads back as -1).
TEST(ConfigBad, ValuesBeyondInt64AreTooLarge) {
  expect_error({{"hidden_size", 1e30}}, {"'hidden_size'", "exceeds"});
  expect_error({{"max_position_embeddings", 1e300}}, {"'max_position_embeddings'", "exceeds"});
  expect_error({{"hidden_size", -1e30}}, {"'hidden_size'", "must be >= 1"});
  expect_error({{"num_experts_per_tok", uint64_t(-1)}}, {"'num_experts_per_tok'", "exceeds"});
  expect_text_error("{\"vocab_size\": 18446744073709551615}", {"'vocab_size'", "exceeds"});
  EXPECT_EQ(parse_ok({{"hidden_size", 4096.0}}).hidden, 4096);
}

// A config nested 100k levels deep is refused before it is parsed (nothing walks it recursively).
TEST(ConfigBad, DeeplyNestedJsonIsRefused) {
  expect_text_error("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}",
                    {"nested deeper than"});
}

// The bounds leave every published Inkling (spec section 9) and generous growth room alone.
TEST(Config, PublishedAndLargeShapesPass) {
  const json big = {{"model_type", "inkling_mm_model"},
                    {"text_config",
                     {{"vocab_size", 201024},
                      {"unpadded_vocab_size", 200058},
                      {"hidden_size", 6144},
                      {"num_hidden_layers", 66},
                      {"num_attention_heads", 64},
                      {"num_key_value_heads", 8},
                      {"head_dim", 128},
                      {"swa_num_attention_heads", 64},
                      {"swa_num_key_value_heads", 16},
                      {"swa_head_dim", 128},
                      {"sliding_window_size", 512},
                      {"d_rel", 16},
                      {"rel_extent", 1024},
                      {"model_max_length", 1048576},
                      {"sconv_kernel_size", 4},
                      {"dense_intermediate_size", 24576},
                      {"intermediate_size", 3072},
                      {"n_routed_experts", 256},
                      {"num_experts_per_tok", 6},
                      {"n_shared_experts", 2},
                      {"dense_mlp_idx", 2}}},
                    {"eos_token_id", 200006}};
  const auto c = parse_ok(big);
  EXPECT_EQ(c.hidden, 6144);
  EXPECT_EQ(c.n_layers, 66);
  EXPECT_EQ(c.top_k, 6);
  // Far beyond any published shape, at or inside every limit.
  const auto at = parse_ok({{"vocab_size", 1 << 24},
                            {"hidden_size", 1 << 20},
                            {"num_hidden_layers", 4096},
                            {"num_attention_heads", 256},
                            {"num_key_value_heads", 256},
                            {"head_dim", 4096},
                            {"swa_num_attention_heads", 4096},
                            {"swa_num_key_value_heads", 64},
                            {"swa_head_dim", 256},
                            {"d_rel", 256},
                            {"sliding_window_size", 1 << 24},
                            {"rel_extent", 1 << 24},
                            {"conv_kernel_size", 256},
                            {"intermediate_size", 1 << 20},
                            {"moe_intermediate_size", 1 << 20},
                            {"n_routed_experts", 1 << 16},
                            {"num_experts_per_tok", 1024},
                            {"n_shared_experts", 1024},
                            {"max_position_embeddings", int64_t(1) << 40}});
  EXPECT_EQ(at.top_k + at.n_shared, 2048);  // > 512: route() has no fixed buffer left
  EXPECT_EQ(at.max_positions, int64_t(1) << 40);
}

TEST(ConfigBad, NonNumbers) {
  expect_error({{"route_scale", "8"}}, {"'route_scale'"});
  expect_error({{"rms_norm_eps", -1.0}}, {"'rms_norm_eps'"});
  expect_error({{"logits_mup_width_multiplier", 0.0}}, {"'logits_mup_width_multiplier'"});
}

TEST(ConfigBad, LayerTypesWrongLength) {
  expect_error({{"num_hidden_layers", 3}, {"layer_types", {"hybrid", "hybrid"}}},
               {"'layer_types'", "3"});
  expect_error({{"num_hidden_layers", 1}, {"layer_types", "hybrid"}}, {"'layer_types'"});
}

TEST(ConfigBad, LayerTypesBadValue) {
  expect_error({{"num_hidden_layers", 2}, {"layer_types", {"hybrid", "local"}}},
               {"'layer_types[1]'", "local"});
  expect_error({{"num_hidden_layers", 2}, {"layer_types", {"hybrid", 1}}}, {"'layer_types[1]'"});
}

TEST(ConfigBad, MlpLayerTypes) {
  expect_error({{"num_hidden_layers", 2}, {"mlp_layer_types", {"dense"}}}, {"'mlp_layer_types'"});
  expect_error({{"num_hidden_layers", 2}, {"mlp_layer_types", {"dense", "moe2"}}},
               {"'mlp_layer_types[1]'"});
  expect_error({{"dense_mlp_idx", -1}}, {"'dense_mlp_idx'"});
}

TEST(ConfigBad, LocalLayerIdsOutOfRange) {
  expect_error({{"num_hidden_layers", 4}, {"local_layer_ids", {0, 4}}}, {"'local_layer_ids'", "4"});
  expect_error({{"num_hidden_layers", 4}, {"local_layer_ids", {-1}}}, {"'local_layer_ids'"});
  expect_error({{"num_hidden_layers", 4}, {"local_layer_ids", {"0"}}}, {"'local_layer_ids'"});
  expect_error({{"num_hidden_layers", 4}, {"local_layer_ids", 0}}, {"'local_layer_ids'"});
}

TEST(ConfigBad, UnpaddedVocabExceedsVocab) {
  expect_error({{"vocab_size", 100}, {"unpadded_vocab_size", 101}},
               {"'unpadded_vocab_size'", "101", "100"});
  expect_error({{"text_config", {{"vocab_size", 100}, {"unpadded_vocab_size", 101}}}},
               {"'text_config.unpadded_vocab_size'"});
}

TEST(ConfigBad, HeadsNotMultipleOfKvHeads) {
  expect_error({{"num_attention_heads", 6}, {"num_key_value_heads", 4}}, {"'num_attention_heads'"});
  expect_error({{"swa_num_attention_heads", 6}, {"swa_num_key_value_heads", 4}},
               {"'swa_num_attention_heads'"});
}

TEST(ConfigBad, TopKExceedsRoutedExperts) {
  expect_error({{"n_routed_experts", 4}, {"num_experts_per_tok", 5}},
               {"'num_experts_per_tok'", "5", "4"});
}

TEST(ConfigBad, EosOutsideVocab) {
  expect_error({{"vocab_size", 100}, {"eos_token_id", 100}}, {"'eos_token_id'", "100"});
  expect_error({{"vocab_size", 100}, {"eos_token_id", {5, -1}}}, {"'eos_token_id'"});
  expect_error({{"eos_token_id", "</s>"}}, {"'eos_token_id'"});
  expect_error({{"eos_token_id", {1, "x"}}}, {"'eos_token_id'"});
}

TEST(ConfigBad, EosTooLargeForInt32) {
  // 2^32 + 5 must not wrap around to the valid id 5.
  expect_error({{"vocab_size", 100}, {"eos_token_id", int64_t(4294967301)}}, {"'eos_token_id'"});
}

TEST(ConfigBad, LogScalingFloor) {
  expect_error({{"log_scaling_n_floor", 0}}, {"'log_scaling_n_floor'"});
  expect_error({{"log_scaling_n_floor", -3}}, {"'log_scaling_n_floor'"});
  expect_error({{"log_scaling_n_floor", "128000"}}, {"'log_scaling_n_floor'"});
}

TEST(ConfigLoad, MissingDirNamesConfigJson) {
  testing::TempDir dir;
  auto r = load_config(dir.file("nowhere"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nowhere/config.json"));
  EXPECT_THAT(r.status().message(), HasSubstr("[config]"));
}

TEST(ConfigLoad, ReadsConfigJson) {
  testing::TempDir dir;
  testing::write_file(dir.file("config.json"), testing::tiny_config_json(true).dump());
  auto r = load_config(dir.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->hidden, testing::TinyDims{}.H);
  testing::write_file(dir.file("config.json"), "{\"hidden_size\": }");
  auto bad = load_config(dir.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(dir.file("config.json")));
}

}  // namespace
}  // namespace inkling
