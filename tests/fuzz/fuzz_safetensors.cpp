// Fuzzes one safetensors image (header JSON + tensor table) parsed from memory: every accepted
// tensor must lie inside the data region (ASan checks the first and last byte of each).
#include <cstdint>
#include <string>

#include "base/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  auto file = MappedFile::from_bytes("fuzz.safetensors", std::string(fuzz::as_text(data, size)));
  auto parsed = SafetensorsFile::parse(file);
  if (!parsed.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const TensorInfo& t : parsed.value()->tensors()) {
    if (uint64_t(t.numel()) * dtype_size(t.dtype) != t.nbytes) __builtin_trap();
    (void)t.shape_str();
    if (t.nbytes) sink = sink + t.data[0] + t.data[t.nbytes - 1];
  }
  return 0;
}
