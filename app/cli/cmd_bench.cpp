// `inkling bench -m DIR`: prefill and decode tokens/s next to this machine's limits (read
// bandwidth, FMA peak) and the model's cost per token, printed as roofline ratios. All numbers
// of one report come from one process run, so their ratios are comparable on a noisy machine.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/cpus.h"
#include "bench_draft.h"
#include "commands.h"
#include "draft_option.h"
#include "expert_parallel_option.h"
#include "inkling/engine.h"
#include "kv_option.h"
#include "model/config.h"
#include "model/cost.h"
#include "numerics_option.h"
#include "ops/amx_gemm.h"
#include "ops/attention.h"
#include "ops/machine_hwy.h"
#include "ops/tuning.h"
#include "ops/tuning_cache.h"

namespace inkling::cli {

namespace {

// The kernel the registry bound to the routed experts (else the largest group) for one token,
// e.g. "avx512-bf16 q4" or "hwy quant"; INKLING_NO_BF16DOT=1 selects the portable kernels.
std::string q4_decode_kernel(const ModelInfo& info) {
  const ModelInfo::Storage* best = nullptr;  // the routed experts, else the largest group
  for (const ModelInfo::Storage& s : info.storage) {
    const bool experts = s.group == "routed experts";
    if (!best || experts || (best->group != "routed experts" && s.bytes > best->bytes)) best = &s;
    if (experts) break;
  }
  if (!best) return "";
  const std::string k = best->kernel_one;
  return k.rfind("hwy", 0) == 0 ? k + " (" + simd_target_name() + ")" : k;
}

struct BenchArgs {
  std::string model_dir;
  int64_t prompt = 512, gen = 128, context = 0;
  int threads = 0;  // 0: one per CPU this process may use
  int64_t chunk = 256;
  bool json = false;
  ExpertParallelArgs ep;
  KvCacheType kv_type = KvCacheType::kF32;
  std::string numerics = "fast";       // --numerics (numerics_option.h)
  std::vector<int64_t> attn_contexts;  // time the decode attention alone at these contexts
  int batch = 0;  // also time Engine::step over this many sessions, one token each
  int draft = 0;  // also time speculative decoding with K = 1..draft MTP drafts (bench_draft.h)
  int64_t draft_vocab = 0;  // the drafts' head over ids [0, draft_vocab) (0 = all)
  std::string ab_tuning;    // "default" or a tuning file: alternate decode segments with it
};

// The decode tuning in effect: values and where they came from.
nlohmann::json tuning_json() {
  return {{"values", tuning_to_json(DecodeTuning::current())}, {"source", decode_tuning_source()}};
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes per weight element by role, from the storage the engine bound (bytes and elements per
// module group): exact for checkpoints that quantize some roles and keep others in bf16.
WeightBytes weight_bytes(const ModelInfo& info) {
  WeightBytes wb;
  const std::pair<const char*, double*> roles[] = {
      {"attention", &wb.attention},   {"dense mlp", &wb.dense_mlp},   {"router", &wb.router},
      {"routed experts", &wb.expert}, {"shared experts", &wb.shared}, {"lm_head", &wb.head},
      {"embed", &wb.embed},           {"message gates", &wb.gates}};
  for (const auto& [group, out] : roles) {
    double bytes = 0, elements = 0;
    for (const ModelInfo::Storage& s : info.storage)
      if (s.group == group) bytes += double(s.bytes), elements += double(s.elements);
    if (elements > 0) *out = bytes / elements;
  }
  return wb;
}

// The kernels the format registry bound, per module group and storage format and shape class.
nlohmann::json kernels_json(const ModelInfo& info) {
  nlohmann::json out = nlohmann::json::array();
  for (const ModelInfo::Storage& s : info.storage)
    out.push_back({{"group", s.group},
                   {"format", s.format},
                   {"one_token", s.kernel_one},
                   {"few_tokens", s.kernel_few},
                   {"gemm", s.kernel_gemm}});
  return out;
}

// Per role; the message gates only for a model that has them (Inkling 2's looped core).
nlohmann::json weight_bytes_json(const WeightBytes& wb, const ModelInfo& info) {
  nlohmann::json j = {{"attention", wb.attention},
                      {"dense_mlp", wb.dense_mlp},
                      {"router", wb.router},
                      {"routed_experts", wb.expert},
                      {"shared_experts", wb.shared},
                      {"lm_head", wb.head},
                      {"embed", wb.embed}};
  for (const ModelInfo::Storage& s : info.storage)
    if (s.group == "message gates") j["message_gates"] = wb.gates;
  return j;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int64_t n, int64_t vocab) {
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = pick(rng);
  return t;
}

// Seconds per decode token spent in attention, all layers, with `context` keys cached: the
// kernel runs on synthetic caches of the model's shapes (its cost does not depend on values).
// Sliding layers read a ring of W keys, global layers every key.
double attention_seconds(const ModelConfig& c, int64_t context, KvCacheType kv_type,
                         ThreadPool& pool) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (auto& x : v) x = nd(rng);
  };
  double total = 0;
  for (int sliding = 0; sliding < 2; ++sliding) {
    int n_layers = 0;
    const LayerSpec* spec = nullptr;
    for (const LayerSpec& l : c.layers)
      if (l.sliding == bool(sliding)) ++n_layers, spec = &l;
    if (!spec) continue;
    AttentionShape s;
    s.n_heads = spec->n_heads, s.n_kv_heads = spec->n_kv_heads, s.head_dim = spec->head_dim;
    s.d_rel = c.d_rel, s.rel_extent = spec->rel_extent, s.window = sliding ? c.window : 0;
    s.log_floor = (!sliding && c.log_floor) ? *c.log_floor : 0.0, s.log_alpha = c.log_alpha;
    const int64_t row = int64_t(s.n_kv_heads) * s.head_dim;
    const int64_t rows = sliding ? int64_t(c.window) : context + 1;
    std::vector<float> k, v, q, r, P, out(size_t(s.n_heads) * s.head_dim);
    fill(k, size_t(rows * row)), fill(v, size_t(rows * row));
    fill(q, size_t(s.n_heads) * s.head_dim), fill(r, size_t(s.n_heads) * c.d_rel);
    fill(P, size_t(c.d_rel) * s.rel_extent);
    KvView kv{k.data(), v.data(), sliding ? rows : 0, row, bool(sliding)};
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    if (kv_type == KvCacheType::kBF16) {
      for (size_t i = 0; i < k.size(); ++i) k16[i] = f32_to_bf16(k[i]), v16[i] = f32_to_bf16(v[i]);
      kv.k = k16.data(), kv.v = v16.data(), kv.type = KvType::kBF16;
    }
    std::vector<double> times;
    for (int rep = 0; rep < 15; ++rep) {
      const double t0 = now_s();
      attention(q.data(), r.data(), 1, context, kv, P.data(), s, out.data(), &pool);
      times.push_back(now_s() - t0);
    }
    std::sort(times.begin(), times.end());
    total += n_layers * times[times.size() / 2];
  }
  return total;
}

int run_bench(const BenchArgs& args) {
  BenchArgs a = args;
  if (a.threads <= 0) a.threads = available_cpus();
  auto numerics = numerics_option(a.numerics);
  if (!numerics.ok()) return fail(numerics.status().message(), 2);
  EngineOptions opts;                // with --expert-parallel, ranks > 0 only serve experts
  opts.numerics = numerics.value();  // before ep.start: the expert ranks bind kernels with it
  ExpertParallel ep;
  if (auto rc = ep.start(a.ep, a.model_dir, a.threads, &opts)) return *rc;
  auto cfg = load_config(a.model_dir);
  if (!cfg.ok()) return fail(cfg.status().message());
  opts.n_threads = a.threads;
  opts.prefill_chunk = a.chunk;
  opts.kv_type = a.kv_type;
  auto loaded = Engine::load(a.model_dir, opts);
  if (!loaded.ok()) return fail(loaded.status().message());
  std::shared_ptr<Engine> engine = loaded.value();
  const ModelConfig& c = cfg.value();
  const ModelInfo& info = engine->info();
  WeightBytes wb = weight_bytes(info);
  wb.kv = a.kv_type == KvCacheType::kBF16 ? 2.0 : 4.0;
  std::mt19937_64 rng(1234);
  auto log = [&](const char* msg) {
    if (!a.json) std::fprintf(stderr, "[bench] %s\n", msg);
  };

  // Machine limits first, with the same number of threads as the engine.
  log("measuring memory read bandwidth and FMA peak");
  ThreadPool probe_pool(a.threads);
  const double bw_before = measure_read_bandwidth_gbs(probe_pool);
  const double peak_before = measure_fma_gflops(probe_pool);

  // Warm-up: touch every weight page (a short prefill routes to most experts) and the decode path.
  log("warm-up");
  {
    auto s = engine->new_session();
    const auto warm = random_tokens(rng, std::min<int64_t>(64, a.prompt), info.unpadded_vocab);
    if (auto r = s->prefill(warm); !r.ok()) return fail(r.status().message());
    for (int i = 0; i < 2; ++i)
      if (auto r = s->decode(warm[size_t(i)]); !r.ok()) return fail(r.status().message());
  }

  // Prefill of a fresh prompt.
  log("prefill");
  auto session = engine->new_session();
  const auto prompt = random_tokens(rng, a.prompt, info.unpadded_vocab);
  double t0 = now_s();
  if (auto r = session->prefill(prompt); !r.ok()) return fail(r.status().message());
  const double prefill_s = now_s() - t0;

  // Fill the cache to the requested context (untimed, synthetic keys/values: running 32k tokens
  // through the model first would take far longer than the measurement), then decode.
  // Room for every timed step now: a cache filled to exactly 2^k positions would otherwise
  // double (copying it) inside the timed decode, a cost real generation pays once per doubling.
  if (Status st = session->reserve(std::max(a.context, session->position()) + a.gen); !st.ok())
    return fail(st.message());
  if (a.context > session->position()) {
    log("filling the cache to the requested context");
    if (Status st = session->fast_forward(a.context - session->position(), 7); !st.ok())
      return fail(st.message());
  }
  const int64_t ctx0 = session->position();
  log("decode");
  const auto gen = random_tokens(rng, a.gen, info.unpadded_vocab);
  // Decode in segments of kSegment steps, each preceded by a short read probe (untimed): on a
  // shared machine the bandwidth moves within seconds, so every segment is also compared with the
  // bandwidth of its own moment (decode_ratio_interleaved, the median over segments).
  constexpr int64_t kSegment = 4;
  ReadProbe seg_probe(probe_pool, size_t(256) << 20);  // one buffer for every segment's probe
  std::vector<double> seg_bw, seg_rate;
  double decode_s = 0;
  // --ab-tuning: odd segments run with the other tuning (B), even ones with the one in effect (A).
  const DecodeTuning tune_a = DecodeTuning::current();
  const std::string source_a = decode_tuning_source();
  DecodeTuning tune_b = DecodeTuning::defaults();
  std::string source_b = "default";
  if (!a.ab_tuning.empty() && a.ab_tuning != "default") {
    TuningFile f;
    std::string err;
    if (!read_tuning_file(a.ab_tuning, &f, &err)) return fail("--ab-tuning: " + err, 2);
    tune_b = f.tuning, source_b = "file " + a.ab_tuning;
  }
  std::vector<double> ab_ratio[2], ab_rate[2];
  for (int64_t i = 0; i < a.gen; i += kSegment) {
    const int64_t n = std::min(kSegment, a.gen - i);
    const int side = a.ab_tuning.empty() ? 0 : int((i / kSegment) % 2);
    if (!a.ab_tuning.empty())
      side ? set_decode_tuning(tune_b, source_b) : set_decode_tuning(tune_a, source_a);
    seg_bw.push_back(seg_probe.measure(2));
    t0 = now_s();
    for (int64_t j = i; j < i + n; ++j)
      if (auto r = session->decode(gen[size_t(j)]); !r.ok()) return fail(r.status().message());
    const double dt = now_s() - t0;
    decode_s += dt;
    seg_rate.push_back(double(n) / dt);
    ab_rate[side].push_back(double(n) / dt);
    ab_ratio[side].push_back(double(n) / dt / (seg_bw.back() * 1e9));  // x bytes/token below
  }
  if (!a.ab_tuning.empty()) set_decode_tuning(tune_a, source_a);

  // Batched decode (continuous batching): `batch` sessions at the same context, one token each
  // per Engine::step, against the single-session decode just measured.
  double batch_tok_s = 0;
  if (a.batch > 0) {
    log("batched decode");
    std::vector<std::unique_ptr<Session>> owned;
    std::vector<Session*> ss;
    std::vector<std::vector<int32_t>> toks(size_t(a.batch));
    for (int b = 0; b < a.batch; ++b) {
      owned.push_back(engine->new_session());
      Session* s = owned.back().get();
      const auto p = random_tokens(rng, 1, info.unpadded_vocab);
      if (auto r = s->prefill(p); !r.ok()) return fail(r.status().message());
      if (Status st = s->reserve(ctx0 + a.gen + 1); !st.ok()) return fail(st.message());
      if (ctx0 > 1)
        if (Status st = s->fast_forward(ctx0 - 1, 11 + uint64_t(b)); !st.ok())
          return fail(st.message());
      ss.push_back(s);
      toks[size_t(b)] = random_tokens(rng, a.gen, info.unpadded_vocab);
    }
    std::vector<std::span<const int32_t>> in(size_t(a.batch));
    auto run_step = [&](int64_t j) {
      for (int b = 0; b < a.batch; ++b) in[size_t(b)] = {&toks[size_t(b)][size_t(j)], 1};
      return engine->step(ss, in);
    };
    if (Status st = run_step(0); !st.ok()) return fail(st.message());  // warm-up
    t0 = now_s();
    for (int64_t j = 1; j < a.gen; ++j)
      if (Status st = run_step(j); !st.ok()) return fail(st.message());
    batch_tok_s = double(a.batch) * double(a.gen - 1) / (now_s() - t0);
  }

  // Speculative decoding against plain greedy decoding, from the same random prompt.
  nlohmann::json spec;
  if (a.draft > 0) {
    log("speculative decoding");
    auto r = bench_draft(*engine, prompt, a.gen, a.draft, a.draft_vocab);
    if (!r.ok()) return fail("--draft: " + r.status().message(), 2);
    spec = std::move(r).value();
  }

  // The limits again: on a shared machine they drift during a run. The larger of the two
  // readings is the ceiling (the conservative choice for our ratios).
  log("measuring the limits again");
  const double bw_after = measure_read_bandwidth_gbs(probe_pool);
  const double peak_after = measure_fma_gflops(probe_pool);
  const double bw = std::max(bw_before, bw_after), peak = std::max(peak_before, peak_after);

  const double prefill_tok_s = double(a.prompt) / prefill_s;
  const double decode_tok_s = double(a.gen) / decode_s;
  const TokenCost dc = decode_cost(c, wb, ctx0 + a.gen / 2);
  const TokenCost pc = prefill_cost(c, a.prompt);
  const double bytes = dc.bytes_per_token(), flops = pc.flops_per_token();
  const double decode_ceiling = bw * 1e9 / bytes;
  const double decode_ratio = decode_tok_s / decode_ceiling;
  const double prefill_ratio = prefill_tok_s * flops / (peak * 1e9);
  std::vector<double> seg_ratio;
  for (size_t i = 0; i < seg_rate.size(); ++i)
    seg_ratio.push_back(seg_rate[i] * bytes / (seg_bw[i] * 1e9));
  const double bw_interleaved = median(seg_bw), decode_ratio_interleaved = median(seg_ratio);

  // Decode at other contexts, projected: the measured step minus its attention time plus the
  // attention time (and the KV bytes) at the new context.
  nlohmann::json projected = nlohmann::json::array();
  if (!a.attn_contexts.empty()) {
    log("timing decode attention at the requested contexts");
    const double attn_here = attention_seconds(c, ctx0 + a.gen / 2, a.kv_type, probe_pool);
    for (int64_t n : a.attn_contexts) {
      const double attn = attention_seconds(c, n, a.kv_type, probe_pool);
      const double step = 1.0 / decode_tok_s - attn_here + attn;
      const double ceiling = bw * 1e9 / decode_cost(c, wb, n).bytes_per_token();
      projected.push_back({{"context", n},
                           {"attention_ms_per_token", attn * 1e3},
                           {"decode_tok_s", 1.0 / step},
                           {"decode_ratio", 1.0 / step / ceiling},
                           {"vs_measured", (1.0 / step) / decode_tok_s}});
    }
  }

  // --expert-parallel: the exchange alone (the other ranks answer at once), per MoE layer.
  nlohmann::json ep_json;
  if (dist::Cluster* cl = ep.cluster()) {
    log("timing the expert-parallel exchange alone");
    auto one = cl->time_exchange(1, c.hidden, c.n_routed, c.top_k, 200);
    auto chunk = cl->time_exchange(a.chunk, c.hidden, c.n_routed, c.top_k, 10);
    if (!one.ok()) return fail(one.status().message());
    if (!chunk.ok()) return fail(chunk.status().message());
    const int moe_layers = c.moe_visits();  // a looped core's MoE layers once per pass
    ep_json = {{"ranks", cl->size()},
               {"moe_layers", moe_layers},
               {"exchange_us_one_row", one.value() * 1e6},
               {"exchange_us_chunk", chunk.value() * 1e6},
               {"exchange_ms_per_decode_token", one.value() * moe_layers * 1e3},
               {"exchange_ms_per_chunk", chunk.value() * moe_layers * 1e3}};
  }

  nlohmann::json ab_json;
  if (!a.ab_tuning.empty()) {
    auto side = [&](int k, const DecodeTuning& t, const std::string& src) {
      std::vector<double> r = ab_ratio[k];
      for (double& x : r) x *= bytes;
      return nlohmann::json{{"values", tuning_to_json(t)},
                            {"source", src},
                            {"segments", r.size()},
                            {"decode_tok_s_median", median(ab_rate[k])},
                            {"decode_ratio_interleaved", median(r)}};
    };
    ab_json = {{"a", side(0, tune_a, source_a)}, {"b", side(1, tune_b, source_b)}};
    const double ra = ab_json["a"]["decode_ratio_interleaved"].get<double>();
    const double rb = ab_json["b"]["decode_ratio_interleaved"].get<double>();
    ab_json["a_over_b"] = rb > 0 ? ra / rb : 0.0;
  }

  if (a.json) {
    nlohmann::json j = {{"model_dir", a.model_dir},
                        {"host",
                         {{"cpu", cpu_model_name()},
                          {"flags", cpu_kernel_flags()},
                          {"simd_target", simd_target_name()},
                          {"cpus_available", available_cpus_source()}}},
                        {"tuning", tuning_json()},
                        {"cpu", cpu_model_name()},
                        {"cpus_available", available_cpus_source()},
                        {"threads", a.threads},
                        {"simd_target", simd_target_name()},
                        {"kv_type", info.kv_type},
                        {"numerics", info.numerics},
                        {"resident_bytes", info.resident_bytes},
                        {"q4_decode_kernel", q4_decode_kernel(info)},
                        {"kernels", kernels_json(info)},
                        {"amx_gemm", amx_gemm_status()},
                        {"prompt_tokens", a.prompt},
                        {"gen_tokens", a.gen},
                        {"context", ctx0},
                        {"prefill_tok_s", prefill_tok_s},
                        {"decode_tok_s", decode_tok_s},
                        {"bandwidth_gbs", bw},
                        {"fma_gflops", peak},
                        {"bandwidth_gbs_before_after", {bw_before, bw_after}},
                        {"fma_gflops_before_after", {peak_before, peak_after}},
                        {"bytes_per_token", bytes},
                        {"flops_per_token", flops},
                        {"decode_ceiling_tok_s", decode_ceiling},
                        {"decode_ratio", decode_ratio},
                        {"bandwidth_gbs_interleaved", bw_interleaved},
                        {"decode_ratio_interleaved", decode_ratio_interleaved},
                        {"decode_segments", seg_ratio.size()},
                        {"prefill_gflops", prefill_tok_s * flops / 1e9},
                        {"prefill_ratio", prefill_ratio},
                        {"weight_bytes_per_element", weight_bytes_json(wb, info)},
                        {"batch", a.batch},
                        {"batch_decode_tok_s", batch_tok_s},
                        {"batch_speedup", a.batch > 0 ? batch_tok_s / decode_tok_s : 0.0},
                        {"projected", projected}};
    if (a.draft > 0) j["speculative"] = spec;
    if (!ab_json.is_null()) j["tuning_ab"] = ab_json;
    if (!ep_json.is_null()) j["expert_parallel"] = ep_json;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model:     %s (%s)\n", a.model_dir.c_str(), info.layout.c_str());
  std::printf("host:      %s (%s)\n", cpu_model_name().c_str(), available_cpus_source().c_str());
  std::printf(
      "machine:   %d threads, SIMD %s (4-bit decode: %s), read bandwidth %.1f GB/s (%.1f / %.1f "
      "before / after), "
      "FMA peak %.1f GFLOP/s (%.1f / %.1f)\n",
      a.threads, simd_target_name().c_str(), q4_decode_kernel(info).c_str(), bw, bw_before,
      bw_after, peak, peak_before, peak_after);
  std::printf("numerics:  %s (--numerics; KV cache %s)\n", info.numerics.c_str(),
              info.kv_type.c_str());
  std::printf("amx gemm:  %s (bf16 weights, 17+ tokens)\n", amx_gemm_status().c_str());
  std::printf("decode cost at context %lld (bytes per token):\n%s",
              static_cast<long long>(ctx0 + a.gen / 2), dc.describe().c_str());
  std::printf("prefill cost per token (prompt %lld): %.2f GFLOP\n",
              static_cast<long long>(a.prompt), flops / 1e9);
  std::printf("prefill:   %lld tokens in %.2f s = %.2f tok/s = %.1f GFLOP/s\n",
              static_cast<long long>(a.prompt), prefill_s, prefill_tok_s,
              prefill_tok_s * flops / 1e9);
  std::printf("decode:    %lld tokens at context %lld in %.2f s = %.3f tok/s (ceiling %.3f)\n",
              static_cast<long long>(a.gen), static_cast<long long>(ctx0), decode_s, decode_tok_s,
              decode_ceiling);
  std::printf("decode_ratio  = %.3f  (decode tok/s / (bandwidth / bytes per token))\n",
              decode_ratio);
  std::printf(
      "decode_ratio_interleaved = %.3f  (median over %zu segments of %d steps, each against a "
      "probe just before it; median probe %.1f GB/s)\n",
      decode_ratio_interleaved, seg_ratio.size(), int(kSegment), bw_interleaved);
  std::printf("tuning:    %s (%s)\n", tuning_to_json(DecodeTuning::current()).dump().c_str(),
              decode_tuning_source().c_str());
  if (!ab_json.is_null())
    std::printf("tuning A/B: A %s %.3f, B %s %.3f (decode_ratio_interleaved), A/B = %.3f\n",
                ab_json["a"]["source"].get<std::string>().c_str(),
                ab_json["a"]["decode_ratio_interleaved"].get<double>(),
                ab_json["b"]["source"].get<std::string>().c_str(),
                ab_json["b"]["decode_ratio_interleaved"].get<double>(),
                ab_json["a_over_b"].get<double>());
  std::printf("prefill_ratio = %.3f  (prefill FLOP/s / FMA peak)\n", prefill_ratio);
  if (a.batch > 0)
    std::printf(
        "batched:   %d sessions, one token each per Engine::step: %.3f tok/s = %.2f x the "
        "single-session decode\n",
        a.batch, batch_tok_s, batch_tok_s / decode_tok_s);
  if (a.draft > 0) {
    std::printf(
        "speculative: greedy from the random prompt (%lld tokens); plain %.3f tok/s, one "
        "decode step %.3f ms\n",
        static_cast<long long>(a.prompt), spec["plain_decode_tok_s"].get<double>(),
        spec["decode_step_ms"].get<double>());
    for (const auto& r : spec["runs"]) {
      if (!r.contains("decode_tok_s")) {
        std::printf("  K=%d: verify of %d rows = %.2f decode steps (no MTP depth %d to draft)\n",
                    r["draft"].get<int>(), r["draft"].get<int>() + 1,
                    r["verify_cost_vs_decode"].get<double>(), r["draft"].get<int>());
        continue;
      }
      std::printf(
          "  --draft %d: %.3f tok/s = %.2f x plain, %.2f tokens/round, verify of %d rows "
          "= %.2f decode steps, acceptance",
          r["draft"].get<int>(), r["decode_tok_s"].get<double>(), r["speedup"].get<double>(),
          r["tokens_per_round"].get<double>(), r["draft"].get<int>() + 1,
          r["verify_cost_vs_decode"].get<double>());
      for (const auto& x : r["acceptance"]) std::printf(" %.3f", x.get<double>());
      std::printf("%s\n", r["same_ids"].get<bool>() ? "" : "  (ids differ from plain)");
    }
  }
  for (const auto& p : projected)
    std::printf(
        "projected decode at context %6lld: attention %.2f ms/token, %.3f tok/s, ratio %.3f, "
        "%.3f x measured\n",
        static_cast<long long>(p["context"].get<int64_t>()),
        p["attention_ms_per_token"].get<double>(), p["decode_tok_s"].get<double>(),
        p["decode_ratio"].get<double>(), p["vs_measured"].get<double>());
  if (!ep_json.is_null())
    std::printf(
        "expert parallel: %d ranks; exchange alone per MoE layer %.1f us (1 row), %.1f us "
        "(%lld rows) = %.2f ms per decode token, %.1f ms per chunk over %d MoE layers\n",
        ep_json["ranks"].get<int>(), ep_json["exchange_us_one_row"].get<double>(),
        ep_json["exchange_us_chunk"].get<double>(), static_cast<long long>(a.chunk),
        ep_json["exchange_ms_per_decode_token"].get<double>(),
        ep_json["exchange_ms_per_chunk"].get<double>(), ep_json["moe_layers"].get<int>());
  return 0;
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  app.add_option("-m,--model", a->model_dir, "model folder (config.json + safetensors)")
      ->required();
  app.add_option("--prompt-tokens", a->prompt, "prefill length (random token ids)")
      ->check(CLI::PositiveNumber);
  app.add_option("--gen-tokens", a->gen, "decode steps to time")->check(CLI::PositiveNumber);
  app.add_option("--context", a->context,
                 "fill the cache to this many tokens before timing decode (default: the prompt)");
  app.add_option("-t,--threads", a->threads,
                 "worker threads, engine and probes (0 = one per CPU this process may use)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--chunk", a->chunk, "prefill chunk (tokens per forward call)")
      ->check(CLI::PositiveNumber);
  add_kv_type_option(app, &a->kv_type);
  add_numerics_option(app, &a->numerics);
  add_expert_parallel_options(app, &a->ep);
  app.add_option("--batch", a->batch,
                 "also time Engine::step over this many sessions at the same context, one token "
                 "each (continuous batching), against the single-session decode")
      ->check(CLI::Range(0, 256));
  app.add_option("--attention-contexts", a->attn_contexts,
                 "also time decode attention on synthetic caches at these contexts and project "
                 "decode speed there (e.g. 1024,8192,32768)")
      ->delimiter(',');
  add_draft_options(
      app, &a->draft, &a->draft_vocab,
      "also time speculative decoding with K = 1..N MTP drafts per round against plain "
      "greedy decoding (acceptance, tokens per round, verify cost vs one decode step)");
  app.add_option("--ab-tuning", a->ab_tuning,
                 "A/B the decode tuning in one run: odd decode segments use this one (\"default\" "
                 "or a tuning file), even ones the tuning in effect");
  app.add_flag("--json", a->json, "print one JSON object instead of the report");
  return [a]() { return run_bench(*a); };
}

}  // namespace inkling::cli
