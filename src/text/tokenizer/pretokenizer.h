// The regex pre-tokenizer (o200k pattern) on PCRE2 with UTF + UCP + JIT. Splits a text into
// pieces exactly like tiktoken / HF Split(Isolated): every match is a piece, and any unmatched
// gap would be a piece too (the o200k pattern leaves none). Immutable after build; each thread
// keeps its own match data and JIT stack, so one Pretokenizer is safely shared.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "inkling/status.h"

namespace inkling::tok {

// tiktoken_ext/openai_public.py o200k_base pat_str (also tokenizer.json's Split regex).
extern const char* const kO200kPattern;

// Rewrites a pattern written for Rust `regex` / Oniguruma so PCRE2 matches the same strings:
// `\s` / `\S` become explicit Unicode White_Space classes (PCRE2's UCP `\s` is \p{Xps}, which
// lacks U+0085). Fails on constructs it cannot rewrite (`\S` inside a character class).
Result<std::string> translate_pattern(std::string_view pattern);

class Pretokenizer {
 public:
  static Result<std::unique_ptr<Pretokenizer>> build(std::string_view pattern);
  ~Pretokenizer();

  // Calls fn(piece) for each piece of `text`, in order. `text` must be valid UTF-8.
  template <typename Fn>
  void split(std::string_view text, Fn&& fn) const {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t b = 0, e = 0;
      if (!next_match(text, pos, &b, &e)) {
        fn(text.substr(pos));
        return;
      }
      if (b > pos) fn(text.substr(pos, b - pos));
      fn(text.substr(b, e - b));
      pos = e;
    }
  }

  const std::string& pattern() const { return pattern_; }

 private:
  Pretokenizer() = default;
  // Finds the next non-empty match at or after `pos`; false if there is none.
  bool next_match(std::string_view text, size_t pos, size_t* begin, size_t* end) const;

  std::string pattern_;   // as given (before translation)
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace inkling::tok
