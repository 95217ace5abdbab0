// `inkling inspect -m DIR`: detected layout, config summary, per-layer kinds, tensor count and
// bytes by dtype, and what was dropped or left unused.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "inkling/engine.h"

namespace inkling::cli {

Runner add_inspect(CLI::App& app) {
  auto model_dir = std::make_shared<std::string>();
  app.add_option("-m,--model", *model_dir, "model folder (config.json + safetensors)")->required();
  return [=]() -> int {
    EngineOptions opts;
    opts.n_threads = 1;
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
      std::printf("  %-15s kernels: 1 token %s | 2-7 %s | 8+ %s\n", "", st.kernel_one.c_str(),
                  st.kernel_few.c_str(), st.kernel_gemm.c_str());
    }
    const double mib = 1048576.0;
    std::printf("memory: %.2f MiB mapped weights (not copied) + %.2f MiB f32 small tensors\n",
                double(info.mapped_bytes) / mib, double(info.copied_bytes) / mib);
    std::printf("        + per session: %.2f MiB scratch, KV %.1f KiB per token of context\n",
                double(info.session_bytes) / mib, double(info.kv_bytes_per_token) / 1024.0);
    std::printf("dropped (towers/MTP): %zu\n", info.dropped.size());
    std::printf("unused:  %zu\n", info.unused.size());
    for (const auto& u : info.unused) std::printf("  %s\n", u.c_str());
    return 0;
  };
}

}  // namespace inkling::cli
