// Fuzzes config.json: parse + validate (src/model/config.cpp) on arbitrary text.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = inkling::parse_config(std::string(inkling::fuzz::as_text(data, size)), "config.json");
  (void)c;
  return 0;
}
