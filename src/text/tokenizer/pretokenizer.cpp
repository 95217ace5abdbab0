// PCRE2 wrapper for the pre-tokenizer regex: pattern translation, compilation (JIT when the
// library has it), and per-thread match data / JIT stacks.
#include "text/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

namespace inkling::tok {

const char* const kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n/]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

namespace {

// Unicode White_Space (what Rust regex and Oniguruma mean by \s), as class contents.
constexpr const char* kWhiteSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

struct ThreadState {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadState() {
    md = pcre2_match_data_create(1, nullptr);
    mctx = pcre2_match_context_create(nullptr);
    // Long whitespace runs backtrack through \s+(?!\S); give the JIT room to grow.
    stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
  ~ThreadState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(mctx);
    pcre2_match_data_free(md);
  }
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

}  // namespace

Result<std::string> translate_pattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 256);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char d = pattern[i + 1];
      if (d == 's') {
        out += in_class ? std::string(kWhiteSpace) : fmt::format("[{}]", kWhiteSpace);
      } else if (d == 'S') {
        if (in_class) {
          return Status::error(
              fmt::format("pre-tokenizer regex: \\S inside a character class at offset {}", i));
        }
        out += fmt::format("[^{}]", kWhiteSpace);
      } else {
        out += c;
        out += d;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Result<std::unique_ptr<Pretokenizer>> Pretokenizer::build(std::string_view pattern) {
  INK_ASSIGN_OR_RETURN(std::string translated, translate_pattern(pattern));
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::error(fmt::format("pre-tokenizer regex does not compile at offset {}: {}",
                                     err_off, reinterpret_cast<const char*>(msg)));
  }
  std::unique_ptr<Pretokenizer> p(new Pretokenizer());
  p->pattern_ = std::string(pattern);
  p->code_ = code;
  p->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return p;
}

Pretokenizer::~Pretokenizer() {
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

bool Pretokenizer::next_match(std::string_view text, size_t pos, size_t* begin, size_t* end) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadState& ts = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = PCRE2_ERROR_JIT_STACKLIMIT;
  if (jit_) rc = pcre2_jit_match(code, subject, text.size(), pos, 0, ts.md, ts.mctx);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT || !jit_) {
    // Interpreter fallback (no JIT, or a pathological input exhausted the JIT stack).
    rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, ts.md,
                     nullptr);
  }
  if (rc < 0) return false;  // no match, or a resource limit: the rest is one piece
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ts.md);
  *begin = ov[0];
  *end = ov[1];
  if (*end == *begin) {
    // The pattern cannot match empty; if a custom one does, step over one character.
    size_t e = *begin + 1;
    while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;
    *end = e;
  }
  return true;
}

}  // namespace inkling::tok
