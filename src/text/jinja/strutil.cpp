// Python str semantics over UTF-8 bytes (see strutil.h). Case mapping and character classes use
// glibc's C.UTF-8 tables through a private locale_t, so the process locale is never touched.
#include "text/jinja/strutil.h"

#include <locale.h>
#include <wctype.h>

namespace inkling::jinja {
namespace {

locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (!l) l = newlocale(LC_CTYPE_MASK, "C.utf8", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

}  // namespace

std::vector<char32_t> utf8_decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) utf8_append(out, cps[i]);
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool py_isspace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isalpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  locale_t l = utf8_locale();
  return l && iswalpha_l(static_cast<wint_t>(c), l);
}

bool py_isdigit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return false;
}

bool py_isalnum(char32_t c) {
  return py_isalpha(c) || py_isdigit(c);
}

char32_t py_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  locale_t l = utf8_locale();
  return l ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), l)) : c;
}

char32_t py_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  locale_t l = utf8_locale();
  return l ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), l)) : c;
}

bool py_isupper(char32_t c) {
  return py_lower(c) != c;
}
bool py_islower(char32_t c) {
  return py_upper(c) != c;
}

bool py_isprintable(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x80) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF)) return false;
  if (c >= 0xFFF9 && c <= 0xFFFB) return false;
  if (c > 0x10FFFF) return false;
  return true;
}

namespace {

template <typename F>
std::string map_chars(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : utf8_decode(s)) utf8_append(out, f(c));
  return out;
}

bool cased(char32_t c) {
  return py_isupper(c) || py_islower(c);
}

}  // namespace

std::string str_upper(std::string_view s) {
  return map_chars(s, py_upper);
}
std::string str_lower(std::string_view s) {
  return map_chars(s, py_lower);
}
std::string str_swapcase(std::string_view s) {
  return map_chars(s, [](char32_t c) { return py_isupper(c) ? py_lower(c) : py_upper(c); });
}

std::string str_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8_decode(s)) {
    char32_t m = prev_cased ? py_lower(c) : py_upper(c);
    utf8_append(out, m);
    prev_cased = cased(c);
  }
  return out;
}

std::string str_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t c : utf8_decode(s)) {
    utf8_append(out, first ? py_upper(c) : py_lower(c));
    first = false;
  }
  return out;
}

std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> cps = utf8_decode(s);
  std::vector<char32_t> set;
  if (chars) set = utf8_decode(*chars);
  auto strip_it = [&](char32_t c) {
    if (!chars) return py_isspace(c);
    for (char32_t x : set)
      if (x == c) return true;
    return false;
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_encode(cps, b, e);
}

std::string str_replace(std::string_view s, std::string_view old, std::string_view repl,
                        int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` before every code point and at the end.
    std::vector<char32_t> cps = utf8_decode(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      utf8_append(out, c);
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

std::vector<std::string> str_split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    int64_t n = 0;
    while (maxsplit < 0 || n < maxsplit) {
      size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
      ++n;
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::vector<char32_t> cps = utf8_decode(s);
  size_t i = 0, n = cps.size();
  int64_t splits = 0;
  while (i < n) {
    while (i < n && py_isspace(cps[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && splits >= maxsplit) {
      size_t e = n;
      while (e > i && py_isspace(cps[e - 1])) --e;
      out.push_back(utf8_encode(cps, i, e));
      break;
    }
    size_t j = i;
    while (j < n && !py_isspace(cps[j])) ++j;
    out.push_back(utf8_encode(cps, i, j));
    ++splits;
    i = j;
  }
  return out;
}

std::vector<std::string> str_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return str_split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    int64_t n = 0;
    while (n < maxsplit) {
      if (end < sep->size()) break;
      size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
      ++n;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::vector<char32_t> cps = utf8_decode(s);
    size_t e = cps.size();
    int64_t splits = 0;
    while (e > 0) {
      while (e > 0 && py_isspace(cps[e - 1])) --e;
      if (e == 0) break;
      if (splits >= maxsplit) {
        size_t b = 0;
        while (b < e && py_isspace(cps[b])) ++b;
        out.push_back(utf8_encode(cps, b, e));
        break;
      }
      size_t b = e;
      while (b > 0 && !py_isspace(cps[b - 1])) --b;
      out.push_back(utf8_encode(cps, b, e));
      ++splits;
      e = b;
    }
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> str_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  std::vector<char32_t> cps = utf8_decode(s);
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    char32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
               c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    size_t eol = i + ((c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ? 2 : 1);
    out.push_back(utf8_encode(cps, start, keepends ? eol : i));
    start = i = eol;
  }
  if (start < cps.size()) out.push_back(utf8_encode(cps, start, cps.size()));
  return out;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace inkling::jinja
