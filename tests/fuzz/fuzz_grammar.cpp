// Fuzzes the grammar parser, the JSON-schema compiler and the byte matcher. Input: a mode byte,
// then the text, optionally followed by "\n#--\n" and bytes to feed the matcher. Mode even: the
// text is a GBNF-like grammar. Mode odd: the text is a JSON schema; whatever it compiles to must
// parse as a grammar (a compiled schema that the parser refuses is a bug).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "inkling/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  if (size < 1 || size > 16384) return 0;
  const bool schema_mode = data[0] & 1;
  auto parts = fuzz::split(fuzz::as_text(data + 1, size - 1), "\n#--\n", 2);
  std::string text(parts[0]);
  if (schema_mode) {
    auto j = nlohmann::ordered_json::parse(text, nullptr, false);
    if (j.is_discarded()) return 0;
    auto g = json_schema_to_gbnf(j, "", (data[0] & 2) != 0);
    if (!g.ok()) return 0;
    text = g.value();
    auto parsed = Grammar::parse(text);
    if (!parsed.ok()) {
      // Budget errors (a schema asking for huge repetitions) and recursion without a way out (a
      // schema whose $refs only lead back to themselves) are the schema's fault, reported as
      // such; anything else is a bug of the compiler.
      const std::string& msg = parsed.status().message();
      if (msg.find("too large") == std::string::npos &&
          msg.find("left-recursive") == std::string::npos &&
          msg.find("can never finish") == std::string::npos)
        std::abort();
      return 0;
    }
  }
  auto g = Grammar::parse(text);
  if (!g.ok()) return 0;
  GrammarMatcher m(g.value());
  if (parts.size() > 1) {
    for (char c : parts[1]) {
      if (!m.accept_bytes(std::string_view(&c, 1))) break;
      (void)m.complete();
      (void)m.distance();
    }
  }
  return 0;
}
