// Lexer: a port of jinja2/lexer.py's rules (root data, comments, raw, block and variable tags)
// including its whitespace control, trim_blocks/lstrip_blocks and bracket balancing.
#include "text/jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "text/jinja/error.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// Python str.rstrip() over UTF-8 (unicode whitespace).
std::string_view rstrip_view(std::string_view s) {
  std::vector<char32_t> cps = utf8_decode(s);
  size_t e = cps.size();
  while (e > 0 && py_isspace(cps[e - 1])) --e;
  size_t bytes = 0;
  for (size_t i = 0; i < e; ++i) {
    std::string tmp;
    utf8_append(tmp, cps[i]);
    bytes += tmp.size();
  }
  return s.substr(0, bytes);
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (char32_t c : utf8_decode(s))
    if (!py_isspace(c)) return false;
  return true;
}

class Lexer {
 public:
  Lexer(std::string src, const LexerOptions& o) : src_(std::move(src)), o_(o) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    const size_t n = src_.size();
    while (pos < n) {
      size_t idx = find_tag(pos);
      if (idx == std::string::npos) {
        emit(Tok::kData, src_.substr(pos), pos);
        break;
      }
      std::string_view text(src_.data() + pos, idx - pos);
      char type = src_[idx + 1];
      char sign = idx + 2 < n && (src_[idx + 2] == '-' || src_[idx + 2] == '+') ? src_[idx + 2] : 0;
      size_t after = idx + 2 + (sign ? 1 : 0);
      size_t raw_end = type == '%' ? match_raw_begin(after) : std::string::npos;
      if (sign == '-') {
        text = rstrip_view(text);
      } else if (sign != '+' && o_.lstrip_blocks && type != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string_view::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos)))
          text = text.substr(0, l_pos);
      }
      if (!text.empty()) emit(Tok::kData, std::string(text), pos);
      if (raw_end != std::string::npos) {
        pos = lex_raw_body(raw_end, src_[raw_end - 1] == '\n');
        line_starting = pos > 0 && src_[pos - 1] == '\n';
        continue;
      }
      if (type == '#') {
        pos = lex_comment(after, idx);
      } else {
        pos = lex_tag(type == '%', idx, after);
      }
      line_starting = last_end_newline_;
    }
    emit(Tok::kEof, "", n);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  std::pair<int, int> line_col(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line_idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
    size_t start = line_starts_[line_idx];
    // Tokens come in order: count on from the previous position when it is on the same line
    // (recounting from the line start made a long one-line template quadratic to lex).
    size_t from = start;
    int col = 1;
    if (col_cache_pos_ >= start && col_cache_pos_ <= pos) {
      from = col_cache_pos_;
      col = col_cache_col_;
    }
    col += static_cast<int>(utf8_length(std::string_view(src_).substr(from, pos - from)));
    col_cache_pos_ = pos;
    col_cache_col_ = col;
    return {static_cast<int>(line_idx) + 1, col};
  }

  [[noreturn]] void fail(const std::string& msg, size_t pos) const {
    auto [l, c] = line_col(std::min(pos, src_.size()));
    throw TemplateError(ErrorKind::kSyntax, msg, l, c);
  }

  void emit(Tok t, std::string text, size_t pos) {
    auto [l, c] = line_col(pos);
    tokens_.push_back(Token{t, std::move(text), l, c});
  }

  size_t skip_space(size_t j) const {
    while (j < src_.size() && is_space(src_[j])) ++j;
    return j;
  }

  bool at(size_t j, std::string_view s) const { return src_.compare(j, s.size(), s) == 0; }

  // `{%[-+]? raw (-%}\s*|%})`: returns the position after it, or npos.
  size_t match_raw_begin(size_t j) const {
    j = skip_space(j);
    if (!at(j, "raw")) return std::string::npos;
    j = skip_space(j + 3);
    if (at(j, "-%}")) return skip_space(j + 3);
    if (at(j, "%}")) return j + 2;
    return std::string::npos;
  }

  size_t lex_raw_body(size_t start, bool line_starting) {
    for (size_t i = src_.find("{%", start); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t j = i + 2;
      char sign = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : 0;
      if (sign) ++j;
      j = skip_space(j);
      if (!at(j, "endraw")) continue;
      j = skip_space(j + 6);
      size_t end;
      if (at(j, "+%}"))
        end = j + 3;
      else if (at(j, "-%}"))
        end = skip_space(j + 3);
      else if (at(j, "%}"))
        end = j + 2 + (o_.trim_blocks && at(j + 2, "\n") ? 1 : 0);
      else
        continue;
      std::string_view text(src_.data() + start, i - start);
      if (sign == '-') {
        text = rstrip_view(text);
      } else if (sign != '+' && o_.lstrip_blocks) {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string_view::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos)))
          text = text.substr(0, l_pos);
      }
      if (!text.empty()) emit(Tok::kData, std::string(text), start);
      return end;
    }
    fail("Missing end of raw directive", start);
  }

  size_t lex_comment(size_t j, size_t begin) {
    for (size_t p = j; p < src_.size(); ++p) {
      if ((src_[p] == '+' || src_[p] == '-') && at(p + 1, "#}")) {
        size_t end = p + 3;
        if (src_[p] == '-') end = skip_space(end);
        last_end_newline_ = end > p + 3 && src_[end - 1] == '\n';
        return end;
      }
      if (at(p, "#}")) {
        size_t end = p + 2;
        if (o_.trim_blocks && at(end, "\n")) ++end;
        last_end_newline_ = end > p + 2;
        return end;
      }
    }
    fail("Missing end of comment tag", begin);
  }

  size_t lex_tag(bool block, size_t begin, size_t j) {
    emit(block ? Tok::kBlockBegin : Tok::kVarBegin, "", begin);
    std::vector<char> balance;
    const size_t n = src_.size();
    while (true) {
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block) {
          if (at(j, "+%}")) {
            end = j + 3;
          } else if (at(j, "-%}")) {
            end = skip_space(j + 3);
          } else if (at(j, "%}")) {
            end = j + 2 + (o_.trim_blocks && at(j + 2, "\n") ? 1 : 0);
          }
        } else {
          if (at(j, "-}}"))
            end = skip_space(j + 3);
          else if (at(j, "}}"))
            end = j + 2;
        }
        if (end != std::string::npos) {
          emit(block ? Tok::kBlockEnd : Tok::kVarEnd, "", j);
          last_end_newline_ = src_[end - 1] == '\n';
          return end;
        }
      }
      if (j < n && is_space(src_[j])) {
        j = skip_space(j);
        continue;
      }
      if (j >= n) {
        emit(Tok::kEof, "", n);  // the parser reports the missing end of the tag
        return n;
      }
      char c = src_[j];
      if (size_t e = match_float(j); e != std::string::npos) {
        emit(Tok::kFloat, src_.substr(j, e - j), j);
        j = e;
      } else if (size_t e2 = match_int(j); e2 != std::string::npos) {
        emit(Tok::kInt, src_.substr(j, e2 - j), j);
        j = e2;
      } else if (is_name_start(c)) {
        size_t e3 = j;
        while (e3 < n && is_name_char(src_[e3])) ++e3;
        emit(Tok::kName, src_.substr(j, e3 - j), j);
        j = e3;
      } else if (c == '\'' || c == '"') {
        j = lex_string(j);
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                     "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                     ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
        std::string op;
        for (const char* o : kOps)
          if (at(j, o)) {
            op = o;
            break;
          }
        if (op.empty()) {
          std::string ch = src_.substr(j, 1);
          fail("unexpected char '" + ch + "' at " + std::to_string(j), j);
        }
        if (op == "{" || op == "(" || op == "[") {
          balance.push_back(op == "{" ? '}' : op == "(" ? ')' : ']');
        } else if (op == "}" || op == ")" || op == "]") {
          if (balance.empty()) fail("unexpected '" + op + "'", j);
          char expected = balance.back();
          balance.pop_back();
          if (expected != op[0])
            fail("unexpected '" + op + "', expected '" + std::string(1, expected) + "'", j);
        }
        emit(Tok::kOp, op, j);
        j += op.size();
      }
    }
  }

  size_t digits_(size_t j) const {  // (\d+_)*\d+ ; returns end or npos
    size_t k = j;
    if (k >= src_.size() || !is_digit(src_[k])) return std::string::npos;
    while (true) {
      while (k < src_.size() && is_digit(src_[k])) ++k;
      if (k + 1 < src_.size() && src_[k] == '_' && is_digit(src_[k + 1])) {
        ++k;
        continue;
      }
      return k;
    }
  }

  size_t match_float(size_t j) const {
    if (j > 0 && src_[j - 1] == '.') return std::string::npos;
    size_t k = digits_(j);
    if (k == std::string::npos) return k;
    size_t frac = std::string::npos;
    if (k < src_.size() && src_[k] == '.') frac = digits_(k + 1);
    size_t m = frac != std::string::npos ? frac : k;
    if (m < src_.size() && (src_[m] == 'e' || src_[m] == 'E')) {
      size_t e = m + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      size_t ed = digits_(e);
      if (ed != std::string::npos) return ed;
    }
    return frac;
  }

  size_t match_int(size_t j) const {
    const size_t n = src_.size();
    if (!is_digit(src_[j])) return std::string::npos;
    if (src_[j] == '0' && j + 1 < n) {
      char p = static_cast<char>(src_[j + 1] | 0x20);
      auto valid = [p](char c) {
        c = static_cast<char>(c | 0x20);
        if (p == 'b') return c == '0' || c == '1';
        if (p == 'o') return c >= '0' && c <= '7';
        return is_digit(c) || (c >= 'a' && c <= 'f');
      };
      if (p == 'b' || p == 'o' || p == 'x') {
        size_t k = j + 2, last = std::string::npos;
        while (k < n) {
          if (src_[k] == '_' && k + 1 < n && valid(src_[k + 1]))
            k += 2;
          else if (valid(src_[k]))
            ++k;
          else
            break;
          last = k;
        }
        if (last != std::string::npos) return last;
      }
    }
    if (src_[j] == '0') {
      size_t k = j + 1;
      while (k < n) {
        if (src_[k] == '0')
          ++k;
        else if (src_[k] == '_' && k + 1 < n && src_[k + 1] == '0')
          k += 2;
        else
          break;
      }
      return k;
    }
    return digits_(j);
  }

  size_t lex_string(size_t j) {
    char q = src_[j];
    size_t k = j + 1;
    std::string out;
    while (true) {
      if (k >= src_.size())
        fail("unexpected char '" + std::string(1, q) + "' at " + std::to_string(j), j);
      char c = src_[k];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++k;
        continue;
      }
      if (k + 1 >= src_.size()) {
        ++k;
        continue;
      }
      char e = src_[k + 1];
      k += 2;
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::string hex = src_.substr(k, len);
          bool ok = hex.size() == len &&
                    std::all_of(hex.begin(), hex.end(), [](char h) { return std::isxdigit(h); });
          if (!ok) fail(std::string("truncated \\") + e + std::string(len, 'X') + " escape", j);
          unsigned long cp = std::strtoul(hex.c_str(), nullptr, 16);
          if (cp > 0x10FFFF) fail("illegal Unicode character", j);
          utf8_append(out, static_cast<char32_t>(cp));
          k += len;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            unsigned v = static_cast<unsigned>(e - '0');
            for (int d = 0; d < 2 && k < src_.size() && src_[k] >= '0' && src_[k] <= '7'; ++d)
              v = v * 8 + static_cast<unsigned>(src_[k++] - '0');
            utf8_append(out, static_cast<char32_t>(v));
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    emit(Tok::kString, std::move(out), j);
    return k + 1;
  }

  std::string src_;
  LexerOptions o_;
  std::vector<size_t> line_starts_;
  mutable size_t col_cache_pos_ = std::string::npos;  // last position line_col() resolved
  mutable int col_cache_col_ = 1;                     // ... and its column
  std::vector<Token> tokens_;
  bool last_end_newline_ = false;
};

std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& opts) {
  return Lexer(normalize_newlines(source), opts).run();
}

}  // namespace inkling::jinja
