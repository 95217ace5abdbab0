// `inkling quantize` end to end: the bundled fixtures quantized at every width and group the
// format registry runs, loaded by the engine, against transformers run on the dequantized weights
// (tests/fixtures/quantize, made by tools/make_quantize_refs.py): logits within 1e-4 of the
// largest, greedy ids identical. Also the output layout (mlx-vlm names, config.json, side files,
// MTP, shards), sources in different layouts giving the same tensors, same-width MLX sources
// copied byte for byte, and the dry run on the Inkling-Small shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/run_cli.h"
#include "../common/tmp_files.h"
#include "base/npy.h"
#include "inkling/engine.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using testing::fixture_path;
using ::testing::HasSubstr;
using testing::read_tensors;
using testing::run_cli;
using testing::RunResult;
using testing::table_gib;
using testing::TempDir;

nlohmann::json refs() {
  return testing::read_json(fixture_path("quantize/refs.json"));
}

RunResult quantize(const std::vector<std::string>& extra, const std::string& scratch) {
  std::vector<std::string> args = {"quantize", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args, scratch, 120);
}

std::shared_ptr<Engine> load(const std::string& dir) {
  EngineOptions o;
  o.n_threads = 2;
  o.numerics = Numerics::kExact;  // parity with transformers on the dequantized weights: exact
  auto e = Engine::load(dir, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? e.value() : nullptr;
}

// Every case of one source: quantize, load, compare. Cases whose width this build's registry
// does not run are counted and reported (the quantizer itself is tested at every width in
// tests/ops/test_affine_quantize.cpp).
void check_source(const std::string& source) {
  const nlohmann::json r = refs();
  ASSERT_TRUE(r.is_object()) << "missing tests/fixtures/quantize/refs.json";
  const auto widths = testing::registered_affine_widths();
  auto ref = read_npy_f32(fixture_path("quantize/" + source + ".npy"));
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const int64_t tail = r["tail"].get<int64_t>(), vocab = ref->shape[2];
  const auto prompt = testing::json_ids(
      testing::read_json(fixture_path(r["prompts"][source].get<std::string>())), "prompt_ids");
  TempDir tmp;
  int checked = 0;
  std::vector<std::string> skipped;
  for (const auto& c : r["cases"]) {
    if (c["source"] != source) continue;
    const std::vector<std::string> args = c["args"].get<std::vector<std::string>>();
    const int bits = std::stoi(args[1]);
    std::string label;
    for (const auto& a : args) label += " " + a;
    if (!widths.count(bits)) {
      skipped.push_back(label);
      continue;
    }
    SCOPED_TRACE(source + label);
    const std::string out = tmp.file("out" + std::to_string(checked));
    std::vector<std::string> q = {"-m", fixture_path(r["models"][source].get<std::string>()), "-o",
                                  out};
    q.insert(q.end(), args.begin(), args.end());
    const RunResult res = quantize(q, tmp.path());
    ASSERT_EQ(res.exit_code, 0) << res.err;
    auto engine = load(out);
    ASSERT_TRUE(engine);
    auto got = engine->new_session()->prefill_all_logits(prompt);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(engine->info().unpadded_vocab, vocab);
    const int64_t index = c["index"].get<int64_t>();
    float max_ref = 0, max_diff = 0;
    for (int64_t t = 0; t < tail; ++t)
      for (int64_t v = 0; v < vocab; ++v) {
        const float want = ref->data[size_t((index * tail + t) * vocab + v)];
        const float have = (*got)[size_t((int64_t(prompt.size()) - tail + t) * vocab + v)];
        max_ref = std::max(max_ref, std::fabs(want));
        max_diff = std::max(max_diff, std::fabs(want - have));
      }
    EXPECT_LE(max_diff, 1e-4f * max_ref) << "max |diff| " << max_diff << " of max " << max_ref;
    const size_t n = c["greedy_checked"].get<size_t>();
    const auto want_ids = c["greedy"].get<std::vector<int32_t>>();
    const auto ids = testing::greedy_ids(*engine, prompt, n);
    EXPECT_EQ(ids, std::vector<int32_t>(want_ids.begin(), want_ids.begin() + long(n)));
    ++checked;
  }
  std::string s;
  for (const auto& k : skipped) s += "\n   " + k;
  std::printf(
      "[ quantize ] %s: %d cases checked; %zu skipped (width not registered in this build)%s\n",
      source.c_str(), checked, skipped.size(), s.c_str());
  EXPECT_GT(checked, 0);
}

TEST(QuantizeParity, OriginalLayoutF32AtEveryWidthAndGroup) {
  check_source("og");
}
TEST(QuantizeParity, Nvfp4RequantizedAtEveryWidthAndGroup) {
  check_source("nvfp4");
}
TEST(QuantizeParity, MlxCommunity4BitRequantized) {
  check_source("mlx4");
}
TEST(QuantizeParity, MlxVlmMixedRequantized) {
  check_source("mlxvlm");
}

// The transformers layout of the same weights quantizes to the same tensors as the original
// layout (sanitize makes both one canonical set); only the original's MTP junk differs.
TEST(QuantizeOutput, TransformersAndOriginalLayoutsGiveTheSameTensors) {
  TempDir tmp;
  ASSERT_EQ(quantize({"-m", fixture_path("full/og"), "-o", tmp.file("og")}, tmp.path()).exit_code,
            0);
  ASSERT_EQ(quantize({"-m", fixture_path("full/hf"), "-o", tmp.file("hf")}, tmp.path()).exit_code,
            0);
  auto og = read_tensors(tmp.file("og")), hf = read_tensors(tmp.file("hf"));
  og.erase("model.mtp.layers.0.foo.weight");
  ASSERT_EQ(og.size(), hf.size());
  for (const auto& [name, t] : og) {
    ASSERT_TRUE(hf.count(name)) << name;
    EXPECT_EQ(hf[name].dtype, t.dtype) << name;
    EXPECT_EQ(hf[name].shape, t.shape) << name;
    EXPECT_TRUE(hf[name].bytes == t.bytes) << name;
  }
}

// An MLX source at the target width and group is copied, not requantized: the experts of the
// mlx-community layout come out byte for byte.
TEST(QuantizeOutput, SameWidthMlxExpertsAreCopiedByteForByte) {
  TempDir tmp;
  const std::string src = fixture_path("quant_mlx4/model");
  ASSERT_EQ(
      quantize({"-m", src, "-o", tmp.file("o"), "--bits", "4", "--group-size", "64"}, tmp.path())
          .exit_code,
      0);
  auto in = read_tensors(src), out = read_tensors(tmp.file("o"));
  int compared = 0;
  for (int layer : {1, 2, 3})
    for (const char* p : {"gate_proj", "up_proj", "down_proj"})
      for (const char* leaf : {"weight", "scales", "biases"}) {
        const std::string a =
            "model.llm.layers." + std::to_string(layer) + ".mlp.experts." + p + "." + leaf;
        const std::string b = "language_model.model.layers." + std::to_string(layer) +
                              ".mlp.switch_mlp." + p + "." + leaf;
        ASSERT_TRUE(in.count(a) && out.count(b)) << a << " / " << b;
        EXPECT_TRUE(in[a].bytes == out[b].bytes) << b;
        ++compared;
      }
  EXPECT_EQ(compared, 27);
}

TEST(QuantizeOutput, MlxVlmLayoutConfigSideFilesAndMtp) {
  TempDir tmp;
  // A source with a tokenizer, a chat template and ModelOpt's hf_quant_config.json.
  const std::string src = tmp.file("src");
  fs::copy(fixture_path("quant_nvfp4/model"), src);
  testing::write_file(src + "/tokenizer.json", "{}");
  testing::write_file(src + "/chat_template.jinja", "{{ messages }}");
  testing::write_file(src + "/generation_config.json", "{\"temperature\": 0.6}");
  testing::write_file(src + "/mtp.safetensors", "");  // replaced below by a real MTP file
  {
    testing::SafetensorsBuilder b;
    b.add_f32("model.mtp.layers.0.eh_proj.weight", {2, 3}, {1, 2, 3, 4, 5, 6});
    b.write(src + "/mtp.safetensors");
  }
  const RunResult r = quantize({"-m", src, "-o", tmp.file("o"), "--recipe", "mixed"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string o = tmp.file("o");
  for (const char* f : {"tokenizer.json", "chat_template.jinja", "generation_config.json",
                        "config.json", "model.safetensors"})
    EXPECT_TRUE(fs::exists(o + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(o + "/hf_quant_config.json"));
  EXPECT_FALSE(fs::exists(tmp.file("o.partial")));
  auto t = read_tensors(o);
  const std::string L = "language_model.model.layers.";
  for (const std::string& name :
       {L + "0.self_attn.qkvr_proj.weight", L + "0.self_attn.qkvr_proj.scales",
        L + "0.self_attn.k_sconv.conv.weight", L + "0.self_attn.rel_proj",
        L + "0.mlp.down_proj.biases", L + "1.mlp.gate_weight", L + "1.mlp.e_score_correction_bias",
        L + "1.mlp.global_scale", L + "2.mlp.switch_mlp.gate_proj.weight",
        L + "2.mlp.switch_mlp.gate_scale", L + "3.mlp.shared_experts.down_proj.scales",
        std::string("language_model.lm_head.biases"),
        std::string("language_model.model.embed_tokens.weight"),
        std::string("language_model.model.embed_norm.weight"),
        std::string("model.mtp.layers.0.eh_proj.weight")})
    EXPECT_TRUE(t.count(name)) << name;
  EXPECT_EQ(t[L + "0.self_attn.k_sconv.conv.weight"].shape, (std::vector<int64_t>{32, 4, 1}));
  EXPECT_EQ(t[L + "2.mlp.switch_mlp.gate_proj.weight"].dtype, DType::U32);
  EXPECT_EQ(t[L + "2.mlp.switch_mlp.gate_proj.weight"].shape, (std::vector<int64_t>{8, 64, 16}));
  EXPECT_EQ(t[L + "3.mlp.shared_experts.down_proj.scales"].dtype, DType::BF16);
  EXPECT_EQ(t[L + "1.mlp.e_score_correction_bias"].dtype, DType::F32);  // kept as stored
  EXPECT_EQ(t[L + "1.mlp.gate_weight"].dtype, DType::BF16);  // the router is never quantized
  const auto cfg = testing::read_json(o + "/config.json");
  ASSERT_TRUE(cfg.is_object());
  EXPECT_EQ(cfg["quantization"], cfg["quantization_config"]);
  EXPECT_EQ(cfg["quantization"]["bits"], 4);
  EXPECT_EQ(cfg["quantization"]["group_size"], 64);
  EXPECT_EQ(cfg["quantization"][L + "0.self_attn.qkvr_proj"]["bits"], 8);
  EXPECT_EQ(cfg["text_config"]["intermediate_size"], 64);         // expert width (original
  EXPECT_EQ(cfg["text_config"]["dense_intermediate_size"], 128);  // spelling, as mlx-vlm reads)

  // --mtp drop leaves the MTP tensors out.
  ASSERT_EQ(quantize({"-m", src, "-o", tmp.file("d"), "--mtp", "drop"}, tmp.path()).exit_code, 0);
  EXPECT_FALSE(read_tensors(tmp.file("d")).count("model.mtp.layers.0.eh_proj.weight"));
}

// Small shards: an index, several files, and the same tensors and logits as one file.
TEST(QuantizeOutput, ShardsAndIndex) {
  TempDir tmp;
  const std::string src = fixture_path("full/og");
  ASSERT_EQ(quantize({"-m", src, "-o", tmp.file("one")}, tmp.path()).exit_code, 0);
  ASSERT_EQ(
      quantize({"-m", src, "-o", tmp.file("many"), "--max-shard-mb", "0.05"}, tmp.path()).exit_code,
      0);
  int shards = 0;
  for (const auto& e : fs::directory_iterator(tmp.file("many")))
    shards += e.path().extension() == ".safetensors";
  EXPECT_GE(shards, 4);
  EXPECT_TRUE(fs::exists(tmp.file("many") + "/model.safetensors.index.json"));
  auto a = read_tensors(tmp.file("one")), b = read_tensors(tmp.file("many"));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(b.count(name) && b[name].bytes == t.bytes) << name;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  auto e1 = load(tmp.file("one")), e2 = load(tmp.file("many"));
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ(e1->new_session()->prefill_all_logits(prompt).value(),
            e2->new_session()->prefill_all_logits(prompt).value());
}

// The summary names what was kept as floats because of its shape, and the recipe.
TEST(QuantizeOutput, SummaryTable) {
  TempDir tmp;
  const RunResult r = run_cli({"quantize", "-m", fixture_path("full/og"), "-o", tmp.file("o"),
                               "--group-size", "32", "--override", "experts=8"},
                              tmp.path(), 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("recipe uniform, main spec q4/g32"));
  EXPECT_THAT(r.out, HasSubstr("routed experts"));
  EXPECT_THAT(r.out, HasSubstr("q8/g32"));
  EXPECT_THAT(r.out, HasSubstr("kept as floats because of their shape"));
  EXPECT_THAT(r.err, HasSubstr("100.0%"));  // the final progress line (stderr is not a tty)
}

// ---- dry run -------------------------------------------------------------------------------

TEST(QuantizeDryRun, InklingSmallFitsIn128GiBWithTheFitRecipe) {
  TempDir tmp;
  const std::string cfg = fixture_path("quantize/inkling_small");  // config.json only
  const RunResult r = run_cli({"quantize", "--dry-run", "-m", cfg, "--recipe", "fit-128gb",
                               "--memory-gb", "128", "--context", "32768"},
                              tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::printf("%s", r.out.c_str());
  // Routed experts: 40 MoE layers x 256 experts x 3 matrices of 2048 x 4096, 3 bits + a bf16
  // scale and bias per 64 weights = 3.5 bits per weight.
  const double experts = 40.0 * 256 * 3 * 2048 * 4096 * 3.5 / 8 / (1024.0 * 1024 * 1024);
  EXPECT_NEAR(table_gib(r.out, "routed experts"), experts, 1e-3);
  EXPECT_NEAR(table_gib(r.out, "total"), 110.934, 0.01);
  EXPECT_THAT(r.out, HasSubstr("fits 128 GiB with 32768 tokens (f32 KV): yes"));
  EXPECT_THAT(r.out, HasSubstr("7 global layers: 56.0 KiB per token in f32"));
  // The uniform 4-bit recipe does not fit.
  const RunResult u = run_cli(
      {"quantize", "--dry-run", "-m", cfg + "/config.json", "--memory-gb", "128"}, tmp.path());
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_NEAR(table_gib(u.out, "routed experts"), experts * 4.5 / 3.5, 1e-3);
  EXPECT_THAT(u.out, HasSubstr("fits 128 GiB with 32768 tokens (f32 KV): no"));
}

// The dry run of a real folder agrees with what a real run writes.
TEST(QuantizeDryRun, MatchesTheWrittenSizes) {
  TempDir tmp;
  const std::vector<std::string> spec = {"--recipe", "mixed", "--bits", "3", "--dtype", "f32"};
  std::vector<std::string> dry = {"quantize", "--dry-run", "-m", fixture_path("full/og")};
  dry.insert(dry.end(), spec.begin(), spec.end());
  const RunResult d = run_cli(dry, tmp.path());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  std::vector<std::string> real = {"quantize", "-m", fixture_path("full/og"), "-o", tmp.file("o")};
  real.insert(real.end(), spec.begin(), spec.end());
  const RunResult w = run_cli(real, tmp.path());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  for (const char* g :
       {"embedding", "lm_head", "attention", "dense MLP", "routed experts", "shared experts"})
    EXPECT_NEAR(table_gib(d.out, g), table_gib(w.out, g), 1e-9) << g;
}

}  // namespace
}  // namespace inkling
