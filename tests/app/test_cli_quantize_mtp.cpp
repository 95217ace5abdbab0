// `inkling quantize --mtp quantize`: the MTP draft depths' matrices written MLX affine under the
// release's names (model.mtp.layers.<d>.*), loaded by the engine. Each depth's teacher-forced
// logits equal, within 1e-4 of the largest, the same forward with f32 weights dequantized in this
// test from the written codes (an unpacker of its own, not the engine's); every dequantized value
// is within the quantizer's step of the source; greedy speculative decoding with quantized depths
// is token-identical to plain greedy; config.json and `inkling inspect` describe the depths; a
// damaged quantized MTP tensor fails with one error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/run_cli.h"
#include "../common/speculative_run.h"
#include "../common/tmp_files.h"
#include "inkling/engine.h"
#include "inkling/speculative.h"
#include "model/mtp.h"
#include "ops/affine_quantize.h"
#include "ops/formats.h"
#include "ops/quant.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using testing::fixture_path;
using ::testing::HasSubstr;
using testing::json_ids;
using testing::read_json;
using testing::read_tensors;
using testing::run_cli;
using testing::RunResult;
using testing::StoredTensor;
using testing::TempDir;

const std::string kDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
const std::string kMulti = fixture_path("mtp/multi");

bool have_demo() {
  return fs::exists(kDemo + "/model.safetensors");
}

// The trunk kept as stored (floats), only the MTP depths quantized: differences are the depths'.
RunResult quantize_mtp(const std::string& src, const std::string& out,
                       const std::vector<std::string>& extra, const std::string& scratch) {
  std::vector<std::string> args = {"quantize", "-q",      "-m",         src,
                                   "-o",       out,       "--override", "language_model.*=off",
                                   "--mtp",    "quantize"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args, scratch, 120);
}

float to_f32(DType t, const std::string& bytes, size_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  if (t == DType::BF16) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  ADD_FAILURE() << "scales of dtype " << dtype_name(t);
  return 0;
}

// A written affine matrix dequantized here: row r's codes are one little-endian bit stream,
// element c at bits [c*bits, (c+1)*bits); w = f32(scale) * q + f32(bias), rounded after the
// product and after the sum (MLX's mx.dequantize with f32 scales, docs/quantization.md).
struct Dequantized {
  int64_t rows = 0, cols = 0;
  std::vector<float> w;  // [rows, cols]
};
Dequantized dequantize(const std::map<std::string, StoredTensor>& t, const std::string& module,
                       int bits, int group) {
  Dequantized d;
  auto it = t.find(module + ".weight");
  if (it == t.end() || !t.count(module + ".scales") || !t.count(module + ".biases")) {
    ADD_FAILURE() << module << ": not written as codes + scales + biases";
    return d;
  }
  const StoredTensor &codes = it->second, &s = t.at(module + ".scales"),
                     &b = t.at(module + ".biases");
  EXPECT_EQ(codes.dtype, DType::U32) << module;
  d.rows = codes.shape[0];
  d.cols = codes.shape[1] * 32 / bits;
  EXPECT_EQ(s.shape, (std::vector<int64_t>{d.rows, d.cols / group})) << module;
  d.w.resize(size_t(d.rows * d.cols));
  const auto* bytes = reinterpret_cast<const uint8_t*>(codes.bytes.data());
  const int64_t row_bytes = codes.shape[1] * 4;
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.cols; ++c) {
      uint32_t q = 0;
      for (int k = 0; k < bits; ++k) {
        const int64_t bit = c * bits + k;
        q |= uint32_t((bytes[r * row_bytes + bit / 8] >> (bit % 8)) & 1) << k;
      }
      const size_t g = size_t(r * (d.cols / group) + c / group);
      const float sc = to_f32(s.dtype, s.bytes, g), bi = to_f32(b.dtype, b.bytes, g);
      volatile float prod = sc * float(q);  // two roundings, no fused multiply-add
      d.w[size_t(r * d.cols + c)] = prod + bi;
    }
  return d;
}

// A dense f32 view of rows [r0, r0 + n) taking every `step`-th row (2 for one half of the
// interleaved w13_dn).
MatView dense_view(const Dequantized& d, int64_t r0, int64_t step) {
  MatView v;
  v.dtype = DType::F32;
  v.format = WeightFormat::kDense;
  v.data = reinterpret_cast<const uint8_t*>(d.w.data() + r0 * d.cols);
  v.rows = d.rows / step;
  v.cols = d.cols;
  v.row_stride = d.cols * step;
  EXPECT_TRUE(bind_kernels(v));
  return v;
}

// The depth matrices of one depth, as written, with the views they replace.
struct DepthRef {
  std::map<std::string, Dequantized> mats;  // by module suffix
};

// Max |a - b| over max |b| for each depth's teacher-forced logits.
std::vector<double> depth_errors(const std::vector<std::vector<float>>& got,
                                 const std::vector<std::vector<float>>& ref) {
  std::vector<double> out;
  for (size_t d = 0; d < ref.size(); ++d) {
    double diff = 0, big = 0;
    for (size_t i = 0; i < ref[d].size(); ++i) {
      big = std::max(big, double(std::fabs(ref[d][i])));
      diff = std::max(diff, double(std::fabs(got[d][i] - ref[d][i])));
    }
    out.push_back(diff / big);
  }
  return out;
}

double argmax_agreement(const std::vector<float>& a, const std::vector<float>& b, int64_t V) {
  const size_t rows = a.size() / size_t(V);
  size_t same = 0;
  for (size_t r = 0; r < rows; ++r)
    same += argmax(std::span<const float>(a.data() + r * size_t(V), size_t(V))) ==
            argmax(std::span<const float>(b.data() + r * size_t(V), size_t(V)));
  return double(same) / double(rows);
}

// Quantizes `src`'s depths at `bits`/`group` (plus `extra`), then checks the written tensors, the
// exact f32 reference and the distance to the unquantized depths; returns that distance.
std::vector<double> check_exact(const std::string& src, int bits, int group,
                                const std::vector<std::string>& extra,
                                const std::vector<int32_t>& prompt, int expect_quantized) {
  TempDir tmp;
  const std::string out = tmp.file("q");
  std::vector<std::string> args = {"--bits", std::to_string(bits), "--group-size",
                                   std::to_string(group)};
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult r = quantize_mtp(src, out, args, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  auto qm = Model::load(out), fm = Model::load(out), sm = Model::load(src);
  EXPECT_TRUE(qm.ok() && fm.ok() && sm.ok()) << (qm.ok() ? "" : qm.status().message());
  if (!qm.ok() || !fm.ok() || !sm.ok()) return {};
  Model& F = *fm.value();
  const Model &Q = *qm.value(), &S = *sm.value();
  EXPECT_EQ(Q.weights.mtp.size(), S.config.mtp.depths.size());
  const auto t = read_tensors(out);
  const auto cfg = read_json(out + "/config.json");
  // Every MTP matrix the shapes allow is quantized; replace it in F by the f32 dequantization.
  std::vector<Dequantized> keep;
  keep.reserve(64);
  int quantized = 0;
  for (size_t d = 0; d < F.weights.mtp.size(); ++d) {
    const std::string D = "model.mtp.layers." + std::to_string(d) + ".";
    const std::string P = D + "transformer_block.";
    MtpDepthWeights& w = F.weights.mtp[d];
    const MtpDepthWeights& sw = S.weights.mtp[d];
    struct Slot {
      std::string module;
      MatView* view;
      const MatView* source;
      int64_t r0, step;
    };
    const std::vector<Slot> slots = {
        {D + "input_proj", &w.input_proj, &sw.input_proj, 0, 1},
        {P + "attn.wq_du", &w.block.attn.q, &sw.block.attn.q, 0, 1},
        {P + "attn.wk_dv", &w.block.attn.k, &sw.block.attn.k, 0, 1},
        {P + "attn.wv_dv", &w.block.attn.v, &sw.block.attn.v, 0, 1},
        {P + "attn.wr_du", &w.block.attn.r, &sw.block.attn.r, 0, 1},
        {P + "attn.wo_ud", &w.block.attn.o, &sw.block.attn.o, 0, 1},
        {P + "mlp.w13_dn", &w.block.dense.gate, &sw.block.dense.gate, 0, 2},
        {P + "mlp.w13_dn", &w.block.dense.up, &sw.block.dense.up, 1, 2},
        {P + "mlp.w2_md", &w.block.dense.down, &sw.block.dense.down, 0, 1},
    };
    for (const Slot& s : slots) {
      SCOPED_TRACE(s.module);
      const StoredTensor& codes = t.at(s.module + ".weight");
      if (codes.dtype != DType::U32) {  // kept as floats: recorded so in config.json
        EXPECT_FALSE(t.count(s.module + ".scales"));
        EXPECT_EQ(cfg["quantization"][s.module], false);
        EXPECT_EQ(s.view->format, WeightFormat::kDense);
        continue;
      }
      EXPECT_EQ(s.view->format, WeightFormat::kAffine);
      EXPECT_EQ(s.view->bits, bits);
      EXPECT_EQ(s.view->group, group);
      keep.push_back(dequantize(t, s.module, bits, group));
      const Dequantized& dq = keep.back();
      // Each written row is what the quantizer (mx.quantize bit for bit, tests/ops/
      // test_affine_quantize.cpp) makes of the source row at its place: gate row i at 2i and up
      // row i at 2i + 1 of w13_dn. A row mix-up or a wrong bit order would differ.
      const StoredTensor &codes_t = t.at(s.module + ".weight"), &sc_t = t.at(s.module + ".scales"),
                         &bi_t = t.at(s.module + ".biases");
      const size_t cb = size_t(affine_code_bytes(dq.cols, bits)),
                   sb = size_t(affine_scale_bytes(dq.cols, group, sc_t.dtype));
      std::vector<float> row(size_t(dq.cols));
      std::vector<uint8_t> c(cb), sc(sb), bi(sb);
      int64_t differ = 0;
      double worst = 0;
      for (int64_t i = 0; i < s.source->rows; ++i) {
        dequant_row(*s.source, i, row.data());
        EXPECT_TRUE(affine_quantize_row(row.data(), dq.cols, bits, group, sc_t.dtype, c.data(),
                                        sc.data(), bi.data()));
        const size_t wr = size_t(s.r0 + i * s.step);
        differ += std::memcmp(c.data(), codes_t.bytes.data() + wr * cb, cb) != 0 ||
                  std::memcmp(sc.data(), sc_t.bytes.data() + wr * sb, sb) != 0 ||
                  std::memcmp(bi.data(), bi_t.bytes.data() + wr * sb, sb) != 0;
        for (int64_t k = 0; k < dq.cols; ++k)
          worst = std::max(
              worst, double(std::fabs(dq.w[wr * size_t(dq.cols) + size_t(k)] - row[size_t(k)])));
      }
      EXPECT_EQ(differ, 0) << "rows not the quantization of their source row";
      EXPECT_GT(worst, 0.0);  // really quantized
      *s.view = dense_view(dq, s.r0, s.step);
      if (s.r0 == 0) ++quantized;
    }
  }
  EXPECT_EQ(quantized, expect_quantized);
  ThreadPool pool(2);
  const auto got = mtp_teacher_forced(Q, prompt, 256, &pool);
  const auto ref = mtp_teacher_forced(F, prompt, 256, &pool);
  const auto src_logits = mtp_teacher_forced(S, prompt, 256, &pool);
  const auto exact = depth_errors(got, ref);
  const auto vs_src = depth_errors(got, src_logits);
  for (size_t d = 0; d < exact.size(); ++d) {
    std::printf(
        "[mtp q%d/g%d] depth %zu: vs dequantized f32 %.2e, vs source depths %.2e, "
        "argmax agreement with the source depths %.3f\n",
        bits, group, d, exact[d], vs_src[d],
        argmax_agreement(got[d], src_logits[d], Q.config.unpadded_vocab));
    EXPECT_LE(exact[d], 1e-4) << "depth " << d;
  }
  return vs_src;
}

TEST(QuantizeMtp, DemoDepthsMatchTheirDequantizationExactly) {
  if (!have_demo()) GTEST_SKIP() << "no demo model";
  const auto prompt = json_ids(read_json(fixture_path("demo/prompt.json")), "prompt_ids");
  // 2 depths x 8 matrices (w13_dn counted once), every row length a multiple of 64.
  const auto q4 = check_exact(kDemo, 4, 64, {}, prompt, 16);
  const auto q8 = check_exact(kDemo, 8, 64, {}, prompt, 16);
  ASSERT_EQ(q4.size(), 2u);
  ASSERT_EQ(q8.size(), 2u);
  // Quantization error of the depths themselves: 8 bits is far closer than 4.
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_LT(q8[d], 0.02) << d;
    EXPECT_LT(q4[d], 0.25) << d;
    EXPECT_LT(q8[d], q4[d]) << d;
  }
}

TEST(QuantizeMtp, RandomThreeDepthsOddShapesAndSeparateMtpFile) {
  // Hidden 64, dense width 48, global heads 6 x 12: at group 32 the matrices whose rows are 48
  // or 72 long stay floats (recorded false in config.json); 3 bits straddles u32 words.
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  // Per depth: input_proj, q, k, v, r, w13 quantized; wo_ud only in the banded depths 0 and 2
  // (8 heads x 16 = 128 columns; the global depth 1 has 6 x 12 = 72); w2_md (48 columns) never.
  const auto e = check_exact(kMulti, 3, 32, {}, prompt, 7 + 6 + 7);
  EXPECT_EQ(e.size(), 3u);
}

using testing::spec_greedy;

// Greedy speculative decoding with quantized depths is plain greedy (the trunk verifies every
// token); K = 2 runs both depths. The acceptance of 8-bit and 4-bit depths is printed (bf16:
// tests/model/test_speculative.cpp; figures in docs/performance.md).
TEST(QuantizeMtp, GreedySpeculativeWithQuantizedDepthsIsPlainGreedy) {
  if (!have_demo()) GTEST_SKIP() << "no demo model";
  TempDir tmp;
  const std::string ref = fixture_path("demo/");
  const std::vector<std::vector<int32_t>> prompts = {
      json_ids(read_json(ref + "greedy.json"), "prompt_ids"),
      json_ids(read_json(ref + "prompt.json"), "prompt_ids")};
  std::vector<std::vector<int32_t>> want;
  for (int bits : {8, 4}) {
    const std::string out = tmp.file("q" + std::to_string(bits));
    const RunResult r = quantize_mtp(kDemo, out, {"--bits", std::to_string(bits)}, tmp.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto e = Engine::load(out, EngineOptions{2, 256});
    ASSERT_TRUE(e.ok()) << e.status().message();
    for (size_t p = 0; p < prompts.size(); ++p) {
      // The trunk is stored alike in both outputs: one plain run per prompt.
      if (want.size() <= p) want.push_back(testing::greedy_ids(*e.value(), prompts[p], 64));
      SpeculativeStats st;
      EXPECT_EQ(spec_greedy(*e.value(), prompts[p], 64, 2, &st), want[p])
          << "q" << bits << " prompt " << p;
      std::printf("[spec] depths q%d/g64, prompt %zu, K=2: %.2f tokens/round, acceptance", bits, p,
                  st.tokens_per_round());
      for (size_t i = 0; i < st.drafted.size(); ++i) std::printf(" %.2f", st.acceptance(i));
      std::printf("\n");
      EXPECT_GT(st.acceptance(0), 0.0) << bits;
    }
  }
}

TEST(QuantizeMtp, RandomDepthsSpeculativeIsPlainGreedy) {
  TempDir tmp;
  const std::string out = tmp.file("q");
  const RunResult r = quantize_mtp(kMulti, out, {"--group-size", "32"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  auto e = Engine::load(out, EngineOptions{2, 5});  // chunked prompt
  ASSERT_TRUE(e.ok()) << e.status().message();
  const auto want = testing::greedy_ids(*e.value(), prompt, 48);
  for (int k : {1, 3}) EXPECT_EQ(spec_greedy(*e.value(), prompt, 48, k, nullptr), want) << k;
}

// config.json records the depths like the trunk's modules; inspect shows their formats; the
// other MTP tensors stay as stored; the dry run counts the depths.
TEST(QuantizeMtp, ConfigInspectAndNames) {
  TempDir tmp;
  const std::string out = tmp.file("q");
  const RunResult r = quantize_mtp(kMulti, out,
                                   {"--group-size", "32", "--override", "mtp=8", "--override",
                                    "model.mtp.layers.1.input_proj=4:64"},
                                   tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = read_tensors(out);
  const auto src = read_tensors(kMulti);
  size_t mtp = 0;
  for (const auto& [name, st] : t) {
    if (name.rfind("model.mtp.layers.", 0) != 0) continue;
    ++mtp;
    const bool matrix_part = name.find(".scales") != std::string::npos ||
                             name.find(".biases") != std::string::npos || st.dtype == DType::U32;
    if (matrix_part) continue;
    // Norms, convs, rel_logits_proj, global_scale and float-kept matrices: byte for byte.
    ASSERT_TRUE(src.count(name)) << name;
    EXPECT_EQ(st.shape, src.at(name).shape) << name;
    EXPECT_EQ(st.dtype, src.at(name).dtype) << name;
    EXPECT_EQ(st.bytes, src.at(name).bytes) << name;
  }
  // 3 depths x 20 tensors, + 2 sidecars per quantized matrix (20 of the 24), + the unknown
  // model.mtp.layers.0.foo.weight of the trunk's file, copied as stored.
  EXPECT_EQ(mtp, 3u * 20 + 2 * 20 + 1);
  const std::string D1 = "model.mtp.layers.1.";
  EXPECT_EQ(t.at(D1 + "input_proj.weight").shape, (std::vector<int64_t>{64, 16}));  // 4 bits
  EXPECT_EQ(t.at(D1 + "input_proj.scales").shape, (std::vector<int64_t>{64, 2}));   // g64
  EXPECT_EQ(t.at("model.mtp.layers.0.transformer_block.mlp.w13_dn.weight").shape,
            (std::vector<int64_t>{96, 16}));  // 8 bits: 64 / 4 words
  const auto cfg = read_json(out + "/config.json");
  const auto& q = cfg["quantization"];
  EXPECT_EQ(q["bits"], 4);
  EXPECT_EQ(q["group_size"], 32);
  EXPECT_EQ(q[D1 + "input_proj"],
            (nlohmann::json{{"group_size", 64}, {"bits", 4}, {"mode", "affine"}}));
  EXPECT_EQ(q["model.mtp.layers.0.transformer_block.attn.wq_du"]["bits"], 8);
  EXPECT_EQ(q["model.mtp.layers.0.transformer_block.mlp.w2_md"], false);   // 48 columns
  EXPECT_EQ(q["model.mtp.layers.1.transformer_block.attn.wo_ud"], false);  // 72 columns
  EXPECT_EQ(cfg["quantization_config"], q);
  auto m = Model::load(out);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value()->weights.mtp[1].input_proj.bits, 4);
  EXPECT_EQ(m.value()->weights.mtp[0].block.attn.q.bits, 8);
  const RunResult ins = run_cli({"inspect", "-m", out}, tmp.path(), 60);
  ASSERT_EQ(ins.exit_code, 0) << ins.err;
  EXPECT_THAT(ins.out, ::testing::ContainsRegex("mtp +affine q8/g32"));
  EXPECT_THAT(ins.out, ::testing::ContainsRegex("mtp +affine q4/g64"));
  EXPECT_THAT(ins.out, ::testing::ContainsRegex("mtp +BF16"));
  // Depth 1 is global: wo_ud (72 columns) and w2_md (48) stay floats.
  EXPECT_THAT(ins.out, HasSubstr("depth 1 matrices: affine q4/g64 x1, affine q8/g32 x6, BF16 x2"));

  // The dry run's table has the depths' row.
  const RunResult dry =
      run_cli({"quantize", "--dry-run", "-m", kMulti, "--mtp", "quantize", "--group-size", "32"},
              tmp.path(), 60);
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, ::testing::ContainsRegex("MTP depths +24 +float BF16 x4, q4/g32 x20"));
}

// Requantizing an output with quantized depths: --mtp keep copies them byte for byte and
// config.json still describes them (at a main spec that differs from theirs).
TEST(QuantizeMtp, KeepOfQuantizedDepthsCopiesThemWithTheirSpecs) {
  TempDir tmp;
  const std::string q = tmp.file("q"), k = tmp.file("k");
  RunResult r = quantize_mtp(kMulti, q, {"--group-size", "32"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"quantize", "-q", "-m", q, "-o", k, "--bits", "8", "--group-size", "64"}, tmp.path(),
              60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = read_tensors(q), b = read_tensors(k);
  size_t mtp = 0;
  for (const auto& [name, st] : a) {
    if (name.rfind("model.mtp.", 0) != 0) continue;
    ++mtp;
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(b.at(name).bytes, st.bytes) << name;
  }
  EXPECT_EQ(mtp, 3u * 20 + 2 * 20 + 1);
  const auto cfg = read_json(k + "/config.json");
  EXPECT_EQ(cfg["quantization"]["bits"], 8);
  EXPECT_EQ(cfg["quantization"]["model.mtp.layers.0.input_proj"],
            (nlohmann::json{{"group_size", 32}, {"bits", 4}, {"mode", "affine"}}));
  EXPECT_EQ(cfg["quantization"]["model.mtp.layers.0.transformer_block.mlp.w2_md"], false);
  auto m = Model::load(k);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value()->weights.mtp[2].block.dense.gate.bits, 4);
}

// Usage errors of the option, and a source without depths.
TEST(QuantizeMtp, OptionErrors) {
  TempDir tmp;
  RunResult r =
      run_cli({"quantize", "-m", kMulti, "-o", tmp.file("a"), "--modules", "mtp"}, tmp.path(), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mtp quantize"));
  r = run_cli({"quantize", "-m", kMulti, "-o", tmp.file("b"), "--override", "mtp=8"}, tmp.path(),
              60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("matches no module"));
  // full/og: the trunk of mtp/multi, without its mtp.safetensors.
  r = run_cli({"quantize", "-m", fixture_path("full/og"), "-o", tmp.file("c"), "--mtp", "quantize"},
              tmp.path(), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mtp quantize, but the source has no MTP tensors"));
  EXPECT_FALSE(fs::exists(tmp.file("c")));
  // The same without mtp_config.
  const std::string bare = tmp.file("bare");
  fs::copy(fixture_path("full/og"), bare);
  auto cfg = read_json(bare + "/config.json");
  cfg.erase("mtp_config");
  testing::write_file(bare + "/config.json", cfg.dump());
  r = run_cli({"quantize", "-m", bare, "-o", tmp.file("d"), "--mtp", "quantize"}, tmp.path(), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("config.json: --mtp quantize, but the config declares no MTP"));
}

// A quantized MTP tensor that is damaged: one load error naming the checkpoint tensor.
TEST(QuantizeMtp, DamagedQuantizedDepthTensorsAreNamed) {
  TempDir tmp;
  const std::string out = tmp.file("q");
  const RunResult r = quantize_mtp(kMulti, out, {"--group-size", "32"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tensors = read_tensors(out);
  const std::string P = "model.mtp.layers.2.transformer_block.";
  struct Case {
    std::string label, drop, reshape;
    std::vector<int64_t> shape;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"missing scales",
       P + "attn.wk_dv.scales",
       "",
       {},
       P + "attn.wk_dv.weight: dtype U32 holds quantized codes, but there is no scales "
           "tensor"},
      {"missing biases",
       P + "mlp.w13_dn.biases",
       "",
       {},
       P + "mlp.w13_dn.weight: MLX affine weight without its biases tensor"},
      {"codes shape", "", P + "attn.wr_du.weight", {32, 4}, P + "attn.wr_du.weight: expected"},
      {"fused codes shape",
       "",
       P + "mlp.w13_dn.weight",
       {48, 8},
       P + "mlp.w13_dn.weight: expected [96, 8], got [48, 8]"},
      {"scales shape",
       "",
       "model.mtp.layers.0.input_proj.scales",
       {64, 2},
       "model.mtp.layers.0.input_proj.scales: expected [64, 4], got [64, 2]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string dir = tmp.file("bad");
    fs::remove_all(dir);
    fs::copy(out, dir);
    testing::SafetensorsBuilder b;
    for (const auto& [name, st] : tensors) {
      if (name == c.drop) continue;
      std::vector<int64_t> shape = st.shape;
      std::string bytes = st.bytes;
      if (name == c.reshape) {
        shape = c.shape;
        int64_t n = 1;
        for (int64_t x : shape) n *= x;
        bytes.resize(size_t(n) * dtype_size(st.dtype));
      }
      b.add(name, dtype_name(st.dtype), shape, bytes);
    }
    b.write(dir + "/model.safetensors");
    auto m = Model::load(dir);
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(m.status().message(), HasSubstr(c.want));
    const RunResult ins = run_cli({"inspect", "-m", dir}, tmp.path(), 60);
    EXPECT_NE(ins.exit_code, 0);
    EXPECT_THAT(ins.err, HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace inkling
