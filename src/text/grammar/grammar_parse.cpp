// The GBNF-like grammar format (docs/grammar.md) -> Grammar::Impl. Repetitions, groups and
// code-point classes become generated rules; a class is split into UTF-8 byte-sequence
// alternatives, so the matcher only ever sees bytes.
#include <algorithm>
#include <cstring>
#include <map>

#include "text/grammar/grammar_impl.h"

namespace inkling {

namespace {

constexpr int kMaxRepeat = 1000;
constexpr size_t kMaxRules = 200000;
constexpr size_t kMaxElements = size_t(1) << 20;  // elements a repetition may copy out

struct Range {
  uint32_t lo, hi;
};

// One code-point range (no surrogates inside) -> UTF-8 byte-range sequences (as RE2 / the Rust
// regex-syntax crate's Utf8Sequences do).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<Range>>* out) {
  static const uint32_t kMax[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (uint32_t m : kMax)
    if (lo <= m && m < hi) {
      utf8_sequences(lo, m, out);
      utf8_sequences(m + 1, hi, out);
      return;
    }
  if (hi <= 0x7F) {
    out->push_back({{lo, hi}});
    return;
  }
  const int n = lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  auto enc = [n](uint32_t c, uint8_t* b) {
    if (n == 2) {
      b[0] = uint8_t(0xC0 | (c >> 6));
      b[1] = uint8_t(0x80 | (c & 0x3F));
    } else if (n == 3) {
      b[0] = uint8_t(0xE0 | (c >> 12));
      b[1] = uint8_t(0x80 | ((c >> 6) & 0x3F));
      b[2] = uint8_t(0x80 | (c & 0x3F));
    } else {
      b[0] = uint8_t(0xF0 | (c >> 18));
      b[1] = uint8_t(0x80 | ((c >> 12) & 0x3F));
      b[2] = uint8_t(0x80 | ((c >> 6) & 0x3F));
      b[3] = uint8_t(0x80 | (c & 0x3F));
    }
  };
  uint8_t a[4], z[4];
  enc(lo, a);
  enc(hi, z);
  std::vector<Range> seq;
  for (int i = 0; i < n; ++i) seq.push_back({a[i], z[i]});
  out->push_back(std::move(seq));
}

void append_utf8(uint32_t c, std::string* s) {
  if (c < 0x80) {
    *s += char(c);
  } else if (c < 0x800) {
    *s += char(0xC0 | (c >> 6));
    *s += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    *s += char(0xE0 | (c >> 12));
    *s += char(0x80 | ((c >> 6) & 0x3F));
    *s += char(0x80 | (c & 0x3F));
  } else {
    *s += char(0xF0 | (c >> 18));
    *s += char(0x80 | ((c >> 12) & 0x3F));
    *s += char(0x80 | ((c >> 6) & 0x3F));
    *s += char(0x80 | (c & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view text, const Tokenizer* tok, Grammar::Impl* g, std::string root)
      : s_(text), tok_(tok), g_(g), root_(std::move(root)) {}

  Status run() {
    skip_space();
    while (i_ < s_.size()) {
      const size_t start = i_;
      std::string name = read_name();
      if (name.empty()) return error(start, "expected a rule name");
      skip_space();
      if (s_.substr(i_, 3) != "::=")
        return error(i_, "expected '::=' after rule name '" + name + "'");
      i_ += 3;
      const int32_t r = rule_id(name);
      if (defined_[size_t(r)]) return error(start, "rule '" + name + "' is defined twice");
      defined_[size_t(r)] = true;
      std::vector<std::vector<GElem>> alts;
      if (Status st = alternatives(&alts, /*nested=*/false); !st.ok()) return st;
      g_->rules[size_t(r)] = std::move(alts);
      skip_space();
    }
    for (size_t r = 0; r < g_->names.size(); ++r)
      if (!defined_[r])
        return Status::error("[grammar] rule '" + g_->names[r] + "' is used but never defined");
    auto it = ids_.find(root_);
    if (it == ids_.end()) return Status::error("[grammar] no '" + root_ + "' rule");
    g_->root = it->second;
    return Status::success();
  }

 private:
  Status error(size_t at, const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Status::error("[grammar] line " + std::to_string(line) + ", column " +
                         std::to_string(col) + ": " + msg);
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string read_name() {
    const size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }
  void skip_space() {
    while (i_ < s_.size()) {
      if (s_[i_] == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }
  // At `name ::=`: the next rule starts.
  bool at_rule_start() const {
    size_t k = i_;
    while (k < s_.size() && name_char(s_[k])) ++k;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) ++k;
    return s_.substr(k, 3) == "::=";
  }

  int32_t rule_id(const std::string& name) {
    auto [it, fresh] = ids_.emplace(name, int32_t(g_->names.size()));
    if (fresh) new_rule(name);
    return it->second;
  }
  int32_t new_rule(const std::string& name) {
    g_->names.push_back(name);
    g_->rules.emplace_back();
    defined_.push_back(false);
    return int32_t(g_->names.size() - 1);
  }
  int32_t anon(std::vector<std::vector<GElem>> alts) {
    const int32_t r = new_rule("");
    g_->names[size_t(r)] = "_" + std::to_string(r);
    g_->rules[size_t(r)] = std::move(alts);
    defined_[size_t(r)] = true;
    return r;
  }
  GElem byte_set(const std::bitset<256>& set) {
    auto it = std::find(g_->sets.begin(), g_->sets.end(), set);
    if (it == g_->sets.end()) {
      g_->sets.push_back(set);
      it = g_->sets.end() - 1;
    }
    return GElem{GElem::kBytes, int32_t(it - g_->sets.begin())};
  }
  GElem byte(uint8_t b) {
    std::bitset<256> s;
    s.set(b);
    return byte_set(s);
  }

  Status alternatives(std::vector<std::vector<GElem>>* alts, bool nested) {
    alts->emplace_back();
    for (;;) {
      skip_space();
      if (g_->rules.size() > kMaxRules) return error(i_, "grammar too large");
      if (i_ >= s_.size()) {
        if (nested) return error(i_, "missing ')'");
        return Status::success();
      }
      const char c = s_[i_];
      if (c == '|') {
        ++i_;
        alts->emplace_back();
        continue;
      }
      if (c == ')') {
        if (!nested) return error(i_, "unexpected ')'");
        ++i_;
        return Status::success();
      }
      if (!nested && at_rule_start()) return Status::success();
      std::vector<GElem> prim;
      if (Status st = primary(&prim); !st.ok()) return st;
      if (Status st = postfix(&prim); !st.ok()) return st;
      alts->back().insert(alts->back().end(), prim.begin(), prim.end());
    }
  }

  // One escape after '\' inside a literal or class; returns the code point.
  Result<uint32_t> escape() {
    if (i_ >= s_.size()) return error(i_, "unfinished escape");
    const char c = s_[i_++];
    switch (c) {
      case 'n':
        return uint32_t('\n');
      case 't':
        return uint32_t('\t');
      case 'r':
        return uint32_t('\r');
      case '0':
        return uint32_t(0);
      case '\\':
      case '"':
      case '\'':
      case ']':
      case '[':
      case '-':
      case '^':
      case '/':
        return uint32_t(uint8_t(c));
      case 'x':
      case 'u':
      case 'U': {
        const int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          if (i_ >= s_.size() || !std::isxdigit(uint8_t(s_[i_])))
            return error(i_, std::string("\\") + c + " needs " + std::to_string(n) + " hex digits");
          const char h = s_[i_++];
          v = v * 16 + uint32_t(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        if (c != 'x' && (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)))
          return error(i_, "escape is not a Unicode scalar value");
        return v;
      }
      default:
        return error(i_ - 1, std::string("unknown escape '\\") + c + "'");
    }
  }
  // One UTF-8 character of the source (the text is taken as UTF-8; a stray byte stands alone).
  uint32_t source_char() {
    const uint8_t b = uint8_t(s_[i_]);
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    if (i_ + size_t(n) > s_.size()) n = 1;
    uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    for (int k = 1; k < n; ++k) {
      if ((uint8_t(s_[i_ + size_t(k)]) & 0xC0) != 0x80) {
        n = 1;
        c = b;
        break;
      }
      c = (c << 6) | (uint8_t(s_[i_ + size_t(k)]) & 0x3F);
    }
    i_ += size_t(n);
    return c;
  }

  Status primary(std::vector<GElem>* out) {
    const size_t start = i_;
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      std::string bytes;
      for (;;) {
        if (i_ >= s_.size() || s_[i_] == '\n') return error(start, "unterminated string literal");
        if (s_[i_] == '"') {
          ++i_;
          break;
        }
        if (s_[i_] == '\\') {
          ++i_;
          const bool hex_byte = i_ < s_.size() && s_[i_] == 'x';
          auto v = escape();
          if (!v.ok()) return v.status();
          if (hex_byte)
            bytes += char(v.value());  // \xHH is one raw byte
          else
            append_utf8(v.value(), &bytes);
        } else {
          bytes += s_[i_++];
        }
      }
      for (char b : bytes) out->push_back(byte(uint8_t(b)));
      if (bytes.empty()) out->push_back(GElem{GElem::kRule, anon({{}})});
      return Status::success();
    }
    if (c == '[' || c == '.') {
      std::vector<Range> ranges;
      bool negate = false;
      if (c == '.') {
        ++i_;
        negate = true;
      } else {
        ++i_;
        if (i_ < s_.size() && s_[i_] == '^') {
          negate = true;
          ++i_;
        }
        for (;;) {
          if (i_ >= s_.size() || s_[i_] == '\n')
            return error(start, "unterminated character class");
          if (s_[i_] == ']') {
            ++i_;
            break;
          }
          auto one = [&]() -> Result<uint32_t> {
            if (s_[i_] == '\\') {
              ++i_;
              return escape();
            }
            return source_char();
          };
          auto lo = one();
          if (!lo.ok()) return lo.status();
          uint32_t hi = lo.value();
          if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
            ++i_;
            auto h = one();
            if (!h.ok()) return h.status();
            hi = h.value();
            if (hi < lo.value()) return error(start, "character range out of order");
          }
          ranges.push_back({lo.value(), hi});
        }
      }
      return char_class(std::move(ranges), negate, out);
    }
    if (c == '<' && s_.substr(i_, 2) == "<|") {
      const size_t end = s_.find("|>", i_ + 2);
      if (end == std::string_view::npos) return error(start, "unterminated <|token|>");
      const std::string_view name = s_.substr(i_, end + 2 - i_);
      i_ = end + 2;
      if (!tok_) return error(start, "special token " + std::string(name) + " needs a tokenizer");
      auto id = tok_->token_id(name);
      if (!id || !tok_->is_added(*id))
        return error(start, "unknown special token " + std::string(name));
      out->push_back(GElem{GElem::kToken, *id});
      return Status::success();
    }
    if (c == '(') {
      ++i_;
      std::vector<std::vector<GElem>> alts;
      if (Status st = alternatives(&alts, true); !st.ok()) return st;
      if (alts.size() == 1) {
        *out = std::move(alts[0]);
        if (out->empty()) out->push_back(GElem{GElem::kRule, anon({{}})});
      } else {
        out->push_back(GElem{GElem::kRule, anon(std::move(alts))});
      }
      return Status::success();
    }
    if (name_char(c)) {
      const std::string name = read_name();
      out->push_back(GElem{GElem::kRule, rule_id(name)});
      return Status::success();
    }
    return error(start, std::string("unexpected character '") + c + "'");
  }

  Status char_class(std::vector<Range> ranges, bool negate, std::vector<GElem>* out) {
    std::sort(ranges.begin(), ranges.end(), [](Range a, Range b) { return a.lo < b.lo; });
    std::vector<Range> merged;
    for (Range r : ranges) {
      if (!merged.empty() && r.lo <= merged.back().hi + 1)
        merged.back().hi = std::max(merged.back().hi, r.hi);
      else
        merged.push_back(r);
    }
    if (negate) {
      std::vector<Range> inv;
      uint32_t next = 0;
      for (Range r : merged) {
        if (r.lo > next) inv.push_back({next, r.lo - 1});
        next = r.hi + 1;
      }
      if (next <= 0x10FFFF) inv.push_back({next, 0x10FFFF});
      merged = std::move(inv);
    }
    // Surrogates are not encodable: cut them out.
    std::vector<Range> cps;
    for (Range r : merged) {
      if (r.hi < 0xD800 || r.lo > 0xDFFF) {
        cps.push_back(r);
        continue;
      }
      if (r.lo < 0xD800) cps.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) cps.push_back({0xE000, r.hi});
    }
    std::vector<std::vector<Range>> seqs;
    std::bitset<256> ascii;
    for (Range r : cps) {
      if (r.hi > 0x10FFFF) r.hi = 0x10FFFF;
      if (r.lo > r.hi) continue;
      std::vector<std::vector<Range>> part;
      utf8_sequences(r.lo, r.hi, &part);
      for (auto& s : part) {
        if (s.size() == 1)
          for (uint32_t b = s[0].lo; b <= s[0].hi; ++b) ascii.set(b);
        else
          seqs.push_back(std::move(s));
      }
    }
    if (seqs.empty() && ascii.none()) return error(i_, "empty character class");
    if (seqs.empty()) {
      out->push_back(byte_set(ascii));
      return Status::success();
    }
    std::vector<std::vector<GElem>> alts;
    if (ascii.any()) alts.push_back({byte_set(ascii)});
    for (const auto& s : seqs) {
      std::vector<GElem> alt;
      for (Range r : s) {
        std::bitset<256> set;
        for (uint32_t b = r.lo; b <= r.hi; ++b) set.set(b);
        alt.push_back(byte_set(set));
      }
      alts.push_back(std::move(alt));
    }
    out->push_back(GElem{GElem::kRule, anon(std::move(alts))});
    return Status::success();
  }

  Status postfix(std::vector<GElem>* prim) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      int lo = 0, hi = -1;  // hi -1: unbounded
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        ++i_;
        lo = 1;
      } else if (c == '?') {
        ++i_;
        hi = 1;
      } else if (c == '{') {
        const size_t start = i_++;
        auto num = [&](int* v) {
          const size_t b = i_;
          long long x = 0;
          while (i_ < s_.size() && std::isdigit(uint8_t(s_[i_])) && x <= kMaxRepeat)
            x = x * 10 + (s_[i_++] - '0');
          *v = int(x);
          return i_ > b;
        };
        if (!num(&lo)) return error(start, "expected a count after '{'");
        hi = lo;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          hi = -1;
          if (i_ < s_.size() && s_[i_] != '}' && !num(&hi)) return error(start, "bad repetition");
        }
        if (i_ >= s_.size() || s_[i_] != '}') return error(start, "expected '}'");
        ++i_;
        if (lo > kMaxRepeat || hi > kMaxRepeat)
          return error(start, "repetition count above " + std::to_string(kMaxRepeat));
        if (hi >= 0 && hi < lo) return error(start, "repetition {m,n} with n < m");
      } else {
        return Status::success();
      }
      const size_t copies = size_t(std::max(lo, hi < 0 ? lo + 1 : hi));
      elements_ += prim->size() * copies;
      if (elements_ > kMaxElements)
        return error(i_, "grammar too large (repetitions expand to over " +
                             std::to_string(kMaxElements) + " elements)");
      *prim = repeat(*prim, lo, hi);
    }
    return Status::success();
  }

  // x{lo,hi} as lo copies then a chain of optional ones (or x* when unbounded).
  std::vector<GElem> repeat(const std::vector<GElem>& x, int lo, int hi) {
    std::vector<GElem> out;
    for (int k = 0; k < lo; ++k) out.insert(out.end(), x.begin(), x.end());
    if (hi < 0) {
      const int32_t r = anon({});
      std::vector<GElem> again = x;
      again.push_back(GElem{GElem::kRule, r});
      g_->rules[size_t(r)] = {again, {}};
      out.push_back(GElem{GElem::kRule, r});
    } else if (hi > lo) {
      int32_t tail = -1;
      for (int k = 0; k < hi - lo; ++k) {
        std::vector<GElem> alt = x;
        if (tail >= 0) alt.push_back(GElem{GElem::kRule, tail});
        tail = anon({alt, {}});
      }
      out.push_back(GElem{GElem::kRule, tail});
    }
    if (out.empty()) out.push_back(GElem{GElem::kRule, anon({{}})});
    return out;
  }

  std::string_view s_;
  size_t i_ = 0;
  const Tokenizer* tok_;
  Grammar::Impl* g_;
  std::map<std::string, int32_t> ids_;
  std::vector<bool> defined_;
  std::string root_;
  size_t elements_ = 0;
};

}  // namespace

Status finish_grammar(Grammar::Impl* g) {
  const size_t n = g->rules.size();
  // Fewest tokens to finish each rule: a fixed point from "infinite".
  constexpr int32_t kInf = INT32_MAX / 4;
  g->rule_min.assign(n, kInf);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r)
      for (const auto& alt : g->rules[r]) {
        int64_t sum = 0;
        for (const GElem& e : alt) sum += e.kind == GElem::kRule ? g->rule_min[size_t(e.value)] : 1;
        if (sum < g->rule_min[r]) {
          g->rule_min[r] = int32_t(sum);
          changed = true;
        }
      }
  }
  for (size_t r = 0; r < n; ++r)
    if (g->rule_min[r] >= kInf)
      return Status::error("[grammar] rule '" + g->names[r] +
                           "' can never finish (every "
                           "alternative recurses forever)");
  g->suffix_min.assign(n, {});
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : g->rules[r]) {
      std::vector<int32_t> suf(alt.size() + 1, 0);
      for (size_t k = alt.size(); k-- > 0;)
        suf[k] = suf[k + 1] + (alt[k].kind == GElem::kRule ? g->rule_min[size_t(alt[k].value)] : 1);
      g->suffix_min[r].push_back(std::move(suf));
    }
  // Left recursion (also through empty rules) would make expansion loop: refuse it.
  std::vector<std::vector<int32_t>> left(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : g->rules[r])
      for (size_t k = 0; k < alt.size(); ++k) {
        const GElem& e = alt[k];
        if (e.kind != GElem::kRule) break;
        // A reference in tail position is expanded on the same parent (the finished frame is
        // popped first), so reaching it again ends the closure: `(x?)*` is fine.
        if (k + 1 < alt.size()) left[r].push_back(e.value);
        if (g->rule_min[size_t(e.value)] != 0) break;
      }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int32_t, size_t>> stack;
  for (size_t s = 0; s < n; ++s) {
    if (color[s]) continue;
    stack.push_back({int32_t(s), 0});
    color[s] = 1;
    while (!stack.empty()) {
      auto& [r, k] = stack.back();
      if (k < left[size_t(r)].size()) {
        const int32_t x = left[size_t(r)][k++];
        if (color[size_t(x)] == 1)
          return Status::error("[grammar] rule '" + g->names[size_t(x)] +
                               "' is left-recursive (directly or through rules that can be "
                               "empty)");
        if (color[size_t(x)] == 0) {
          color[size_t(x)] = 1;
          stack.push_back({x, 0});
        }
      } else {
        color[size_t(r)] = 2;
        stack.pop_back();
      }
    }
  }
  return Status::success();
}

Result<Grammar> Grammar::parse(std::string_view text, const Tokenizer* tok,
                               const std::string& root) {
  auto g = std::make_shared<Grammar::Impl>();
  Parser p(text, tok, g.get(), root);
  if (Status st = p.run(); !st.ok()) return st;
  if (Status st = finish_grammar(g.get()); !st.ok()) return st;
  Grammar out;
  out.impl_ = std::move(g);
  return out;
}

size_t Grammar::n_rules() const {
  return impl_->rules.size();
}

std::string Grammar::json_value_gbnf() {
  return R"(root ::= value
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= | " " | "\n" [ \t]{0,20}
)";
}

std::string Grammar::json_object_gbnf() {
  std::string g = json_value_gbnf();
  g.replace(0, g.find('\n'), "root ::= object");
  return g;
}

}  // namespace inkling
