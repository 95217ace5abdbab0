// Quantization through the public API, built against an installed inkling
// (examples/CMakeLists.txt): plan, then quantize a model folder into an MLX affine folder with a
// progress callback and Ctrl-C-style cancellation, print the result's modules, then load the
// output and greedy-decode a few tokens from it.
//
//   quantize SRC_DIR DST_DIR [BITS] [IDS]     e.g. quantize tests/fixtures/full/og /tmp/q4 4
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <inkling/engine.h>
#include <inkling/quantize.h>
#include <inkling/sampler.h>

namespace {
std::atomic<bool> g_cancel{false};
void on_signal(int) {
  g_cancel.store(true);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SRC_DIR DST_DIR [BITS] [ID,ID,...]\n", argv[0]);
    return 2;
  }
  inkling::QuantizeOptions opts;
  opts.bits = argc > 3 ? std::atoi(argv[3]) : 4;
  opts.group_size = 64;
  opts.force = true;

  // The plan alone: what would be written, from config.json.
  auto plan = inkling::plan_quantization(argv[1], opts);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.status().message().c_str());
    return 1;
  }
  std::printf("plan: %zu modules, %llu bytes\n", plan->modules.size(),
              static_cast<unsigned long long>(plan->bytes));

  std::signal(SIGINT, on_signal);  // an interrupted run leaves DST.partial to resume
  uint64_t last_bytes = 0;
  auto result = inkling::quantize_model(
      argv[1], argv[2], opts,
      [&](const inkling::QuantizeEvent& e) {
        if (e.kind == inkling::QuantizeEvent::Kind::kWriting) last_bytes = e.bytes;
        if (e.kind == inkling::QuantizeEvent::Kind::kNotice)
          std::printf("note: %s\n", e.message.c_str());
      },
      &g_cancel);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().message().c_str());
    return 1;
  }
  if (result->cancelled) {
    std::printf("cancelled: run the same command again to resume\n");
    return 130;
  }
  int quantized = 0;
  for (const inkling::QuantizedModule& m : result->modules) quantized += m.storage != "float";
  std::printf("wrote %s: %s %s, %d of %zu modules quantized, %llu bytes (progress saw %llu)\n",
              argv[2], result->layout.c_str(), result->main_spec.c_str(), quantized,
              result->modules.size(), static_cast<unsigned long long>(result->bytes),
              static_cast<unsigned long long>(last_bytes));

  // The output is an ordinary model folder.
  auto engine = inkling::Engine::load(argv[2]);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().message().c_str());
    return 1;
  }
  std::vector<int32_t> ids;
  std::istringstream in(argc > 4 ? argv[4] : "386,10,415,335");
  for (std::string id; std::getline(in, id, ',');) ids.push_back(std::atoi(id.c_str()));
  auto session = engine.value()->new_session();
  auto logits = session->prefill(ids);
  inkling::SamplingParams params;
  params.temperature = 0.0f;
  inkling::Sampler sampler(params);
  std::printf("ids:");
  for (int i = 0; i < 4 && logits.ok(); ++i) {
    const int32_t id = sampler.next(logits.value()).id;
    std::printf(" %d", id);
    logits = session->decode(id);
  }
  std::printf("\n");
  if (!logits.ok()) {
    std::fprintf(stderr, "%s\n", logits.status().message().c_str());
    return 1;
  }
  return 0;
}
