// UTF-8 helpers for the tokenizer: validation, lossy decoding with U+FFFD exactly like
// Python's bytes.decode("utf-8", "replace") / Rust's String::from_utf8_lossy (one U+FFFD per
// maximal invalid subpart), and the incomplete-tail length a streaming decoder must hold back.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace inkling::utf8 {

// Length of the well-formed sequence starting at s[i] (1..4), or 0 if s[i..] starts with an
// invalid or truncated sequence; `*subpart` receives the length of the maximal subpart to
// replace with one U+FFFD in that case (>= 1).
size_t sequence_length(std::string_view s, size_t i, size_t* subpart);

// Byte offset of the first invalid sequence, or s.size() if `s` is valid UTF-8.
size_t first_invalid(std::string_view s);
inline bool is_valid(std::string_view s) {
  return first_invalid(s) == s.size();
}

// Appends `s` to `out`, replacing every maximal invalid subpart with U+FFFD.
void append_lossy(std::string_view s, std::string* out);

// Length (0..3) of a trailing sequence that is a proper prefix of a well-formed character, i.e.
// bytes that a later byte could still complete. Everything before it decodes the same whatever
// follows.
size_t incomplete_tail(std::string_view s);

// Decodes one code point from valid UTF-8 at s[i] (caller guarantees validity).
char32_t decode_at(std::string_view s, size_t i, size_t* len);
void append_code_point(char32_t cp, std::string* out);

}  // namespace inkling::utf8
