// `inkling inspect -m DIR [--ctx N] [--kv-type T] [--numerics M]`: detected layout, config
// summary, per-layer kinds, tensor count and bytes by dtype, weights by module/format/kernels (the
// kernels of the numerics mode), what was dropped or left unused, and with --ctx the memory a
// session of N tokens needs.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "dist/expert_plan.h"
#include "inkling/engine.h"
#include "kv_option.h"
#include "model_path.h"
#include "numerics_option.h"
#include "ops/formats.h"

namespace inkling::cli {

namespace {

// "12.3 GiB" / "456.7 MiB"
std::string human(uint64_t b) {
  char buf[32];
  const double gib = double(b) / (1024.0 * 1024 * 1024);
  if (gib >= 1.0)
    std::snprintf(buf, sizeof buf, "%.2f GiB", gib);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1024.0 * 1024));
  return buf;
}

void print_plan(const ModelInfo& info, int64_t ctx) {
  const MemoryPlan p = memory_plan(info, ctx);
  std::printf("session of %lld tokens (KV %s):\n", static_cast<long long>(ctx),
              info.kv_type.c_str());
  std::printf("  weights mapped %12s  (checkpoint files, through the page cache)\n",
              human(p.weights_mapped).c_str());
  std::printf("  weights copied %12s  (norms, convs, biases as f32)\n",
              human(p.weights_copied).c_str());
  if (p.weights_tiles > 0)
    std::printf(
        "  weight tiles   %12s  (fast numerics: 4-bit weights regrouped at load, a copy; the"
        " mapped pages it copies are not read again; INKLING_NO_Q4_TILES=1 skips it)\n",
        human(p.weights_tiles).c_str());
  std::printf("  KV cache       %12s  (%s if it grows by doubling instead of being reserved)\n",
              human(p.kv).c_str(), human(p.kv_doubling).c_str());
  std::printf("  conv states    %12s\n", human(p.conv_states).c_str());
  std::printf("  scratch        %12s\n", human(p.scratch).c_str());
  std::printf("  total          %12s  (%llu bytes)\n", human(p.total()).c_str(),
              static_cast<unsigned long long>(p.total()));
}

// --expert-parallel N: what each rank holds, and what one token costs on the wire per MoE layer.
void print_expert_plan(const ModelInfo& info, int n) {
  std::printf("expert parallel over %d ranks (expert e on rank e mod %d; rank 0 runs the rest):\n",
              n, n);
  for (const dist::RankPlan& p : dist::plan_ranks(info, n))
    std::printf("  rank %d: %3d routed experts per MoE layer, %12s experts + %12s other = %s\n",
                p.rank, p.experts_per_layer_max, human(p.expert_bytes).c_str(),
                human(p.replicated_bytes).c_str(), human(p.total()).c_str());
  const int moe_layers = info.moe_visits;  // a looped core's layers once per pass
  const dist::ExchangeCost c = dist::exchange_cost(info.hidden, info.n_routed, info.top_k, n);
  std::printf(
      "  per token and MoE layer (expected, uniform routing): %.0f bytes out, %.0f bytes back, "
      "%.1f messages; x %d MoE layer visits = %.1f KiB and %.0f messages per decode token\n",
      c.bytes_out, c.bytes_back, c.messages, moe_layers,
      (c.bytes_out + c.bytes_back) * moe_layers / 1024.0, c.messages * moe_layers);
}

}  // namespace

Runner add_inspect(CLI::App& app) {
  auto model_dir = std::make_shared<std::string>();
  auto ctx = std::make_shared<int64_t>(0);
  auto kv_type = std::make_shared<KvCacheType>(KvCacheType::kF32);
  app.add_option("-m,--model", *model_dir, "model folder (config.json + safetensors)")->required();
  app.add_option("--ctx", *ctx,
                 "also print the memory one session of this many tokens needs (weights, KV, "
                 "scratch)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  add_kv_type_option(app, kv_type.get());
  auto numerics = std::make_shared<std::string>("fast");
  add_numerics_option(app, numerics.get());
  auto ep_ranks = std::make_shared<int>(0);
  app.add_option("--expert-parallel", *ep_ranks,
                 "also print the plan of `--expert-parallel` over N ranks: bytes per rank and "
                 "per token on the wire")
      ->check(CLI::Range(1, 4096));
  return [=]() -> int {
    auto mode = numerics_option(*numerics);
    if (!mode.ok()) return fail(mode.status().message(), 2);
    if (std::string bad = check_model_folder(*model_dir); !bad.empty()) return fail(bad, 2);
    EngineOptions opts;
    opts.n_threads = 1;
    opts.kv_type = *kv_type;
    opts.numerics = mode.value();
    opts.tune_on_first_use = false;  // inspect never decodes
    auto engine = Engine::load(*model_dir, opts);
    if (!engine.ok()) return fail(engine.status().message());
    const ModelInfo& info = engine.value()->info();
    std::printf("model:   %s\n", info.model_dir.c_str());
    std::printf("type:    %s (config spelling: %s)\n", info.model_type.c_str(),
                info.config_format.c_str());
    std::printf("layout:  %s\n", info.layout.c_str());
    std::printf("%s\n", info.summary.c_str());
    std::printf("layers:");
    for (size_t i = 0; i < info.layer_kinds.size(); ++i)
      std::printf(" %zu:%s", i, info.layer_kinds[i].c_str());
    std::printf("\neos:    ");
    for (int32_t e : info.eos_ids) std::printf(" %d", e);
    std::printf("\ntensors: %lld\n", static_cast<long long>(info.n_tensors));
    for (const auto& [dt, b] : info.bytes_by_dtype)
      std::printf("  %-8s %12llu bytes (%.2f MiB)\n", dt.c_str(),
                  static_cast<unsigned long long>(b), double(b) / 1048576.0);
    std::printf("weights by module and format:\n");
    for (const auto& st : info.storage) {
      std::printf("  %-15s %-16s %6lld matrices %12llu bytes (%.2f MiB)\n", st.group.c_str(),
                  st.format.c_str(), static_cast<long long>(st.matrices),
                  static_cast<unsigned long long>(st.bytes), double(st.bytes) / 1048576.0);
      std::printf("  %-15s kernels: 1 token %s | 2-%lld %s | %lld+ %s\n", "", st.kernel_one.c_str(),
                  static_cast<long long>(kFewMaxTokens), st.kernel_few.c_str(),
                  static_cast<long long>(kGemmMinTokens), st.kernel_gemm.c_str());
    }
    const double mib = 1048576.0;
    std::printf("memory: %.2f MiB mapped weights + %.2f MiB f32 small tensors",
                double(info.mapped_bytes) / mib, double(info.copied_bytes) / mib);
    if (info.tile_bytes > 0)
      std::printf(
          " + %.2f MiB load-time tiles (a copy of the 4-bit weights in the int8 gemm's "
          "order; INKLING_NO_Q4_TILES=1 skips it)",
          double(info.tile_bytes) / mib);
    std::printf("\n");
    if (info.resident_bytes > 0)
      std::printf(
          "        (%.2f MiB of the mapped pages made resident at load, page tables and all; "
          "INKLING_NO_POPULATE=1 skips it)\n",
          double(info.resident_bytes) / mib);
    std::printf(
        "        + per session: %.2f MiB scratch, KV (%s) %.1f KiB per token of context + %.2f "
        "MiB of sliding rings\n",
        double(info.session_bytes) / mib, info.kv_type.c_str(),
        double(info.kv_bytes_per_token) / 1024.0, double(info.kv_sliding_bytes) / mib);
    std::printf("numerics: %s (%s)\n", info.numerics.c_str(),
                info.numerics == "exact"
                    ? "f32 activations in every product"
                    : "activations rounded for the products: bf16 against bf16 weights, int8 per "
                      "block against affine-quantized ones; the kernels above show each");
    std::printf("vision tower: %s\n", info.vision_status.c_str());
    if (info.vision_status == "bound")
      std::printf("  tiles %dx%d, placeholder id %d, upscale %s\n", info.vision_patch,
                  info.vision_patch, info.image_token_id, info.upscale.c_str());
    std::printf("audio tower:  %s\n", info.audio_status.c_str());
    if (info.audio_status == "bound")
      std::printf("  16 kHz WAV, 20 frames per second, placeholder id %d\n", info.audio_token_id);
    std::printf("dropped (towers/MTP): %zu\n", info.dropped.size());
    std::printf("unused:  %zu\n", info.unused.size());
    for (const auto& u : info.unused) std::printf("  %s\n", u.c_str());
    if (*ctx > 0) print_plan(info, *ctx);
    if (*ep_ranks > 0) print_expert_plan(info, *ep_ranks);
    return 0;
  };
}

}  // namespace inkling::cli
