// Fuzzes a whole model folder's load step (config + safetensors + layout detection + binding)
// through the public Engine API. Input: config.json, "\n@@@@\n", the safetensors header JSON,
// optionally "\n@@@@\n" and the first bytes of the data region; the harness sizes the data
// region from the header's largest end offset (capped) so seeds stay a few KB.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "inkling/engine.h"

namespace {

constexpr uint64_t kMaxData = 4u << 20;

uint64_t data_size_of(std::string_view header) {
  const auto j = nlohmann::json::parse(header, nullptr, false);
  uint64_t end = 0;
  if (!j.is_object()) return 0;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    auto off = e.find("data_offsets");
    if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[1].is_number_unsigned())
      continue;
    end = std::max(end, (*off)[1].get<uint64_t>());
  }
  return std::min(end, kMaxData);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  const auto parts = fuzz::split(fuzz::as_text(data, size), "\n@@@@\n", 3);
  if (parts.size() < 2) return 0;
  const auto dir = fuzz::fresh_subdir("model");
  fuzz::write_file(dir / "config.json", parts[0]);
  std::string st(8, '\0');
  const uint64_t hlen = parts[1].size();
  std::memcpy(st.data(), &hlen, 8);
  st += parts[1];
  std::string region(data_size_of(parts[1]), '\0');
  if (parts.size() == 3)
    std::memcpy(region.data(), parts[2].data(), std::min(parts[2].size(), region.size()));
  st += region;
  fuzz::write_file(dir / "model.safetensors", st);
  EngineOptions opts;
  opts.n_threads = 1;
  auto engine = Engine::load(dir.string(), opts);
  if (engine.ok()) (void)engine.value()->info().summary.size();
  if (std::getenv("FUZZ_VERBOSE"))  // seeds should load: shows why one does not
    std::fprintf(stderr, "%s\n", engine.ok() ? "loaded" : engine.status().message().c_str());
  return 0;
}
