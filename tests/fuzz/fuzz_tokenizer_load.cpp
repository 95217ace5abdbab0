// Fuzzes tokenizer loading through Tokenizer::load(folder). First byte even: the rest is a
// tokenizer.json; odd: tiktoken/tokenizer.model ranks, then "\n@@@@\n" special_tokens.json, then
// "\n@@@@\n" tokenizer_config.json. A tokenizer that loads must encode and decode a few strings.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "inkling/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  if (size < 1) return 0;
  const auto dir = fuzz::fresh_subdir("tok");
  const std::string_view rest = fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzz::write_file(dir / "tokenizer.json", rest);
  } else {
    const auto parts = fuzz::split(rest, "\n@@@@\n", 3);
    std::filesystem::create_directories(dir / "tiktoken");
    fuzz::write_file(dir / "tiktoken" / "tokenizer.model", parts[0]);
    if (parts.size() > 1) fuzz::write_file(dir / "special_tokens.json", parts[1]);
    if (parts.size() > 2) fuzz::write_file(dir / "tokenizer_config.json", parts[2]);
  }
  auto tok = Tokenizer::load(dir.string());
  if (std::getenv("FUZZ_VERBOSE"))  // seeds should load: shows why one does not
    std::fprintf(stderr, "%s\n", tok.ok() ? "loaded" : tok.status().message().c_str());
  if (!tok.ok()) return 0;
  for (const char* s :
       {"Hello, world! 123", "<|endoftext|> x\xC3\xA9\xF0\x9F\x98\x80", "\xff\xfe"}) {
    const auto ids = tok.value()->encode(s, true);
    (void)tok.value()->decode(ids);
  }
  return 0;
}
