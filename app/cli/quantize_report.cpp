// The size table (module groups, matrices, storage specs, parameters, GiB) and the memory lines
// (KV cache of the global layers per token, the sliding layers' rings, conv states, scratch).
#include "quantize_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "quantize/run_memory.h"

namespace inkling::cli {

using namespace inkling::quant;  // the plan types this report reads

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string count_str(double n) {
  char b[32];
  if (n >= 1e9)
    std::snprintf(b, sizeof b, "%.2f B", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(b, sizeof b, "%.2f M", n / 1e6);
  else
    std::snprintf(b, sizeof b, "%.0f", n);
  return b;
}

struct Row {
  int64_t matrices = 0;
  double params = 0;
  uint64_t bytes = 0;
  std::map<std::string, int64_t> specs;  // "q4/g64" -> matrices
};

}  // namespace

uint64_t print_report(const ModelConfig& c, const Plan& plan, const ReportOptions& o) {
  Row rows[kGroupCount];
  Row small;
  int64_t kept_by_shape = 0;
  std::string kept_example;
  for (const PlanItem& item : plan.items) {
    if (const Module* m = std::get_if<Module>(&item)) {
      Row& r = rows[size_t(m->group)];
      const int64_t count = m->n > 0 ? m->n : 1;
      r.matrices += count;
      r.params += double(m->total_rows()) * double(m->cols);
      r.bytes += module_bytes(*m, m->float_dtype);
      const std::string spec =
          m->spec.quantized ? m->spec.str() : std::string("float ") + dtype_name(m->float_dtype);
      r.specs[spec] += count;
      if (!m->kept_why.empty()) {
        kept_by_shape += count;
        if (kept_example.empty()) kept_example = m->path + " (" + m->kept_why + ")";
      }
    } else {
      const SmallTensor& t = std::get<SmallTensor>(item);
      double n = 1;
      for (int64_t d : t.shape) n *= double(d);
      small.matrices += 1;
      small.params += n;
      small.bytes += uint64_t(n) * dtype_size(t.dtype);
    }
  }
  // One unit for the table, chosen by the total, so tiny test models show real numbers too.
  uint64_t total_bytes = small.bytes;
  for (const Row& r : rows) total_bytes += r.bytes;
  const char* unit = total_bytes >= uint64_t(kGiB) ? "GiB"
                     : total_bytes >= (1u << 20)   ? "MiB"
                                                   : "KiB";
  const double scale = total_bytes >= uint64_t(kGiB) ? kGiB
                       : total_bytes >= (1u << 20)   ? 1048576.0
                                                     : 1024.0;
  std::printf("  %-16s %9s  %-30s %12s %10s\n", "module group", "matrices", "storage", "parameters",
              unit);
  Row total;
  auto line = [&](const char* label, const Row& r, const std::string& storage) {
    std::printf("  %-16s %9lld  %-30s %12s %10.3f\n", label, static_cast<long long>(r.matrices),
                storage.c_str(), count_str(r.params).c_str(), double(r.bytes) / scale);
    total.params += r.params;
    total.bytes += r.bytes;
  };
  for (int g = 0; g < kGroupCount; ++g) {
    const Row& r = rows[g];
    if (r.matrices == 0) continue;
    std::string storage;
    for (const auto& [spec, n] : r.specs)
      storage += (storage.empty() ? "" : ", ") + spec +
                 (r.specs.size() > 1 ? " x" + std::to_string(n) : std::string());
    line(group_label(Group(g)), r, storage);
  }
  line("norms & small", small, "as stored");
  std::printf("  %-16s %9s  %-30s %12s %10.3f\n", "total", "", "", count_str(total.params).c_str(),
              double(total.bytes) / scale);
  if (kept_by_shape > 0)
    std::printf("  kept as floats because of their shape: %lld matrices, e.g. %s\n",
                static_cast<long long>(kept_by_shape), kept_example.c_str());

  const RunMemory mem = run_memory(c, o.context);
  const char* layers = c.cache_slots().size() > c.layers.size() ? "layer visits" : "layers";
  std::printf(
      "\n  KV cache at %lld tokens: f32 %.3f GiB, bf16 %.3f GiB (%d global %s: %.1f KiB "
      "per token in f32; %d sliding %s: rings of %lld rows)\n",
      static_cast<long long>(o.context), mem.kv_f32() / kGiB, mem.kv_bf16() / kGiB, mem.n_global,
      layers, mem.global_per_token / 1024, mem.n_sliding, layers, static_cast<long long>(mem.ring));
  std::printf("  conv states %.3f GiB, session scratch %.3f GiB (prefill chunk %lld)\n",
              mem.conv / kGiB, mem.scratch / kGiB, static_cast<long long>(kRunPrefillChunk));
  const double kv32 = mem.kv_f32(), kv16 = mem.kv_bf16(), conv = mem.conv, scratch = mem.scratch;
  const double with32 = double(total.bytes) + kv32 + conv + scratch;
  const double with16 = double(total.bytes) + kv16 + conv + scratch;
  std::printf("  memory to run: %.2f GiB with an f32 KV cache, %.2f GiB with bf16\n", with32 / kGiB,
              with16 / kGiB);
  if (o.memory_gib > 0) {
    const double left = o.memory_gib - with32 / kGiB;
    if (left >= 0)
      std::printf("  fits %.0f GiB with %lld tokens (f32 KV): yes, %.2f GiB left for the system\n",
                  o.memory_gib, static_cast<long long>(o.context), left);
    else
      std::printf("  fits %.0f GiB with %lld tokens (f32 KV): no, %.2f GiB short\n", o.memory_gib,
                  static_cast<long long>(o.context), -left);
  }
  if (o.mtp_bytes && *o.mtp_bytes > 0)
    std::printf("  MTP tensors copied as stored: %.3f GiB on disk (not loaded for text)\n",
                double(*o.mtp_bytes) / kGiB);
  return total.bytes;
}

void print_auto(const QuantizeResult& r) {
  if (r.auto_units.empty()) return;
  std::printf("\n  recipe auto: %zu module groups, costs measured over %lld calibration tokens%s\n",
              r.auto_units.size(), static_cast<long long>(r.sensitivity_tokens),
              r.sensitivity_seconds > 0 ? "" : " (read from the sensitivity table)");
  std::printf("  %-16s %-10s %12s %14s\n", "group", "storage", "KiB", "KL nats/token");
  uint64_t bytes = 0;
  for (const auto& u : r.auto_units) {
    std::printf("  %-16s %-10s %12.1f %14.3g\n", u.unit.c_str(), u.storage.c_str(),
                double(u.bytes) / 1024, u.kl);
    bytes += u.bytes;
  }
  std::printf(
      "  %.4f GiB of the %.4f GiB budget; predicted KL %.4g nats/token (the costs summed)\n",
      double(bytes) / kGiB, double(r.budget_bytes) / kGiB, r.predicted_kl);
}

}  // namespace inkling::cli
