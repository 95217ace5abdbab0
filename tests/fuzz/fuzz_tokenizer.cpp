// Fuzzes encode/decode of the real Inkling tokenizer (loaded once) on arbitrary bytes, checking
// the documented invariants: valid UTF-8 round-trips exactly, every id is in the vocabulary, and
// StreamDecoder's pieces concatenate to decode() for any id sequence (unknown ids included).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "inkling/tokenizer.h"

namespace {

std::shared_ptr<const inkling::Tokenizer> tokenizer() {
  static auto tok = [] {
    auto t = inkling::Tokenizer::load(inkling::fuzz::inkling_data_dir());
    if (!t.ok()) {
      std::fprintf(stderr, "fuzz_tokenizer: %s\n", t.status().message().c_str());
      std::abort();
    }
    return t.value();
  }();
  return tok;
}

void check_stream(const inkling::Tokenizer& tok, std::span<const int32_t> ids, bool skip) {
  inkling::StreamDecoder sd(tokenizer(), skip);
  std::string streamed;
  for (int32_t id : ids) streamed += sd.push(id);
  streamed += sd.flush();
  if (streamed != tok.decode(ids, skip)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& tok = *tokenizer();
  const uint8_t mode = data[0];
  const std::string_view text = inkling::fuzz::as_text(data + 1, size - 1);
  if (mode & 1) {  // the rest as raw ids (little-endian int32, any value)
    std::vector<int32_t> ids(text.size() / 4);
    if (!ids.empty()) std::memcpy(ids.data(), text.data(), ids.size() * 4);
    if (mode & 2)  // fold into the vocabulary (plus a few unknown ids) to reach real tokens
      for (int32_t& id : ids) id = int32_t(uint32_t(id) % (tok.vocab_size() + 8));
    check_stream(tok, ids, mode & 4);
    return 0;
  }
  const bool allow_special = mode & 2;
  const std::vector<int32_t> ids = tok.encode(text, allow_special);
  for (int32_t id : ids)
    if (id < 0 || size_t(id) >= tok.vocab_size()) __builtin_trap();
  auto checked = tok.encode_checked(text, allow_special);
  if (checked.ok()) {
    if (checked.value() != ids) __builtin_trap();
    if (tok.decode(ids) != text) __builtin_trap();  // valid UTF-8 round-trips byte for byte
  }
  check_stream(tok, ids, mode & 4);
  return 0;
}
