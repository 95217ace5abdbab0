// UTF-8 validation and lossy decoding (Unicode "maximal subpart" replacement, as Python and
// Rust do it), plus the incomplete-tail test used by the streaming detokenizer.
#include "text/tokenizer/utf8.h"

#include <cstdint>

namespace inkling::utf8 {
namespace {

// Expected total length for a lead byte (0 = never valid as a lead byte).
inline size_t lead_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b < 0xC2) return 0;
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  if (b < 0xF5) return 4;
  return 0;
}

// Valid range of the second byte given the lead (Unicode Table 3-7).
inline bool second_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

inline bool cont(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

}  // namespace

size_t sequence_length(std::string_view s, size_t i, size_t* subpart) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  const uint8_t lead = p[i];
  const size_t len = lead_length(lead);
  if (len == 1) return 1;
  *subpart = 1;
  if (len == 0) return 0;
  if (i + 1 >= n || !second_ok(lead, p[i + 1])) return 0;
  for (size_t k = 2; k < len; ++k) {
    *subpart = k;
    if (i + k >= n || !cont(p[i + k])) return 0;
  }
  return len;
}

size_t first_invalid(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t sub = 0;
    const size_t len = sequence_length(s, i, &sub);
    if (len == 0) return i;
    i += len;
  }
  return n;
}

void append_lossy(std::string_view s, std::string* out) {
  size_t i = 0;
  const size_t n = s.size();
  out->reserve(out->size() + n);
  while (i < n) {
    const size_t bad = first_invalid(s.substr(i)) + i;
    out->append(s.data() + i, bad - i);
    if (bad >= n) break;
    size_t sub = 1;
    sequence_length(s, bad, &sub);
    out->append("\xEF\xBF\xBD");
    i = bad + sub;
  }
}

size_t incomplete_tail(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  // A lead byte at most 3 bytes from the end, followed only by valid continuation bytes.
  for (size_t k = 1; k <= 3 && k <= n; ++k) {
    const uint8_t b = p[n - k];
    if (cont(b)) continue;
    const size_t len = lead_length(b);
    if (len <= k) return 0;  // ASCII, invalid lead, or a complete sequence
    if (k >= 2 && !second_ok(b, p[n - k + 1])) return 0;
    return k;
  }
  return 0;
}

char32_t decode_at(std::string_view s, size_t i, size_t* len) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const uint8_t b = p[i];
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  if (b < 0xE0) {
    *len = 2;
    return (char32_t(b & 0x1F) << 6) | (p[i + 1] & 0x3F);
  }
  if (b < 0xF0) {
    *len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
  }
  *len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(p[i + 1] & 0x3F) << 12) |
         (char32_t(p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F);
}

void append_code_point(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace inkling::utf8
