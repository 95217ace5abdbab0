// The JSON-schema subset -> GBNF rules (see grammar.h for what is supported). Each schema node
// becomes one rule named after its path; objects emit their properties in schema order with
// optional ones skippable; string patterns go through a small regex translator.
#include <algorithm>
#include <map>
#include <set>

#include "inkling/grammar.h"

namespace inkling {

namespace {

using ojson = nlohmann::ordered_json;

std::string gbnf_literal(const std::string& bytes) {
  std::string out = "\"";
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// A regex (the subset of docs/grammar.md) as a GBNF expression over the characters of a JSON
// string body: the characters `"`, `\` and controls are never produced.
class RegexToGbnf {
 public:
  explicit RegexToGbnf(const std::string& re) : s_(re) {}
  Result<std::string> run() {
    bool start = false, end = false;
    if (!s_.empty() && s_[0] == '^') {
      start = true;
      ++i_;
    }
    size_t stop = s_.size();
    if (stop > i_ && s_[stop - 1] == '$' && (stop < 2 || s_[stop - 2] != '\\')) {
      end = true;
      --stop;
    }
    s_ = s_.substr(0, stop);
    auto body = alternation();
    if (!body.ok()) return body;
    if (i_ != s_.size()) return err("unexpected ')'");
    std::string out = "(" + body.value() + ")";
    if (!start) out = kAny + "* " + out;
    if (!end) out += " " + kAny + "*";
    return out;
  }

 private:
  inline static const std::string kAny = "[^\"\\\\\\x00-\\x1f]";
  Status err(const std::string& m) const {
    return Status::error("[schema] pattern '" + s_ + "': " + m + " (at offset " +
                         std::to_string(i_) + ")");
  }
  Result<std::string> alternation() {
    std::string out;
    for (;;) {
      auto seq = sequence();
      if (!seq.ok()) return seq;
      out += seq.value().empty() ? "\"\"" : seq.value();
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        out += " | ";
        continue;
      }
      return out;
    }
  }
  Result<std::string> sequence() {
    std::string out;
    while (i_ < s_.size() && s_[i_] != '|' && s_[i_] != ')') {
      auto atom = this->atom();
      if (!atom.ok()) return atom;
      std::string a = atom.value();
      // Quantifiers (a trailing '?' of a lazy one changes nothing for a full match).
      while (i_ < s_.size()) {
        const char c = s_[i_];
        if (c == '*' || c == '+' || c == '?') {
          a = "(" + a + ")" + c;
          ++i_;
        } else if (c == '{') {
          const size_t close = s_.find('}', i_);
          if (close == std::string::npos) return err("unterminated {m,n}");
          const std::string q = s_.substr(i_, close + 1 - i_);
          // {m}, {m,} or {m,n} with m <= n, as regex engines take them.
          const std::string body = q.substr(1, q.size() - 2);
          const size_t comma = body.find(',');
          const std::string lo = body.substr(0, comma);
          const std::string hi = comma == std::string::npos ? lo : body.substr(comma + 1);
          auto digits = [](const std::string& t) {
            return std::all_of(t.begin(), t.end(), [](char d) { return std::isdigit(uint8_t(d)); });
          };
          if (lo.empty() || !digits(lo) || !digits(hi)) return err("bad quantifier " + q);
          if (lo.size() > 6 || hi.size() > 6) return err("quantifier too large " + q);
          if (!hi.empty() && std::stoi(hi) < std::stoi(lo))
            return err("quantifier " + q + " with n < m");
          a = "(" + a + ")" + q;
          i_ = close + 1;
        } else {
          break;
        }
        if (i_ < s_.size() && s_[i_] == '?') ++i_;
      }
      out += (out.empty() ? "" : " ") + a;
    }
    return out;
  }
  // Escapes shared by atoms and classes; returns a class body ("a-z") or a literal char.
  Result<std::string> escape_class(char c) {
    switch (c) {
      case 'd':
        return std::string("0-9");
      case 'w':
        return std::string("a-zA-Z0-9_");
      case 's':
        return std::string(" \\t\\n\\r");
      default:
        return Status::error("");
    }
  }
  static std::string class_char(uint32_t c) {
    // Inside a GBNF class: escape what the class syntax and JSON need.
    if (c == ']' || c == '\\' || c == '^' || c == '-') return std::string("\\") + char(c);
    if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      return std::string("\\x") + hex[c >> 4] + hex[c & 15];
    }
    return std::string(1, char(c));
  }
  Result<std::string> atom() {
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      if (s_.compare(i_, 2, "?:") == 0)
        i_ += 2;
      else if (i_ < s_.size() && s_[i_] == '?')
        return err("lookaround and named groups are not supported");
      auto inner = alternation();
      if (!inner.ok()) return inner;
      if (i_ >= s_.size() || s_[i_] != ')') return err("missing ')'");
      ++i_;
      return "(" + inner.value() + ")";
    }
    if (c == '.') {
      ++i_;
      return kAny;
    }
    if (c == '[') {
      ++i_;
      std::string body;
      bool neg = false;
      if (i_ < s_.size() && s_[i_] == '^') {
        neg = true;
        ++i_;
      }
      bool first = true;
      // The last single character added, while it may still start a range ("a" of "a-z").
      int range_lo = -1;
      // One class character (an escape is taken literally); false: a class escape (\d ...)
      // was appended to the body instead.
      auto next_char = [&](char* out) {
        char x = s_[i_++];
        if (x == '\\' && i_ < s_.size()) {
          const char e = s_[i_++];
          if (auto cls = escape_class(e); cls.ok()) {
            body += cls.value();
            return false;
          }
          x = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        *out = x;
        return true;
      };
      while (i_ < s_.size() && (s_[i_] != ']' || first)) {
        first = false;
        const bool dash = s_[i_] == '-';
        char x = 0;
        if (!next_char(&x)) {
          range_lo = -1;
          continue;
        }
        if (dash && range_lo >= 0 && i_ < s_.size() && s_[i_] != ']') {
          char hi = 0;
          if (!next_char(&hi)) return err("a range cannot end in a class escape");
          if (uint8_t(hi) < range_lo) return err("character range out of order");
          body += "-" + class_char(uint8_t(hi));
          range_lo = -1;
          continue;
        }
        body += class_char(uint8_t(x));
        range_lo = uint8_t(x);
      }
      if (i_ >= s_.size()) return err("unterminated class");
      ++i_;
      // JSON-string characters only: negated classes also exclude '"', '\' and controls.
      if (neg) return "[^" + body + "\"\\\\\\x00-\\x1f]";
      return "[" + body + "]";
    }
    if (c == '\\') {
      ++i_;
      if (i_ >= s_.size()) return err("trailing backslash");
      const char e = s_[i_++];
      auto cls = escape_class(e);
      if (cls.ok()) return "[" + cls.value() + "]";
      if (e == 'D' || e == 'W' || e == 'S' || e == 'b' || e == 'B' || std::isdigit(uint8_t(e)))
        return err(std::string("\\") + e + " is not supported");
      const char lit = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      return literal(lit);
    }
    if (c == '^' || c == '$') return err("anchors are only supported at the ends");
    ++i_;
    return literal(c);
  }
  // A literal pattern character as it appears inside a JSON string.
  static std::string literal(char c) {
    if (c == '"') return gbnf_literal("\\\"");
    if (c == '\\') return gbnf_literal("\\\\");
    if (c == '\n') return gbnf_literal("\\n");
    if (c == '\t') return gbnf_literal("\\t");
    if (c == '\r') return gbnf_literal("\\r");
    return gbnf_literal(std::string(1, c));
  }

  std::string s_;
  size_t i_ = 0;
};

class Compiler {
 public:
  Compiler(const ojson& root, std::string prefix, bool strict)
      : root_(root), p_(std::move(prefix)), strict_(strict) {}

  Result<std::string> run() {
    auto r = gen(root_, "root", 0);
    if (!r.ok()) return r.status();
    std::string out;
    if (r.value() != p_ + "root")
      out += p_ + "root ::= " + r.value() + "\n";
    else if (!rules_.count(p_ + "root"))  // the root is only {"$ref": "#"}
      return err("", "the schema only refers to itself ($ref '#')");
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  Status err(const std::string& where, const std::string& m) const {
    return Status::error("[schema] " + (where.empty() ? "" : where + ": ") + m);
  }
  // Shared primitives, added on first use.
  std::string prim(const std::string& name) {
    static const std::map<std::string, std::string> kPrims = {
        {"ws", "| \" \" | \"\\n\" [ \\t]{0,20}"},
        {"string", "\"\\\"\" CHAR* \"\\\"\""},
        {"char", "[^\"\\\\\\x00-\\x1f] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"},
        {"integer", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )"},
        {"number", "INTEGER ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?"},
        {"boolean", "\"true\" | \"false\""},
        {"null", "\"null\""},
        {"value", "OBJECT | ARRAY | STRING | NUMBER | BOOLEAN | NULL"},
        {"object",
         "\"{\" WS ( STRING WS \":\" WS VALUE ( WS \",\" WS STRING WS \":\" WS VALUE )* )? WS "
         "\"}\""},
        {"array", "\"[\" WS ( VALUE ( WS \",\" WS VALUE )* )? WS \"]\""},
    };
    const std::string full = p_ + name;
    if (rules_.count(full)) return full;
    std::string body = kPrims.at(name);
    rules_[full] = "";  // reserve (recursive primitives)
    for (const char* dep : {"WS", "CHAR", "INTEGER", "STRING", "NUMBER", "BOOLEAN", "NULL",
                            "OBJECT", "ARRAY", "VALUE"}) {
      std::string lower(dep);
      for (char& ch : lower) ch = char(std::tolower(uint8_t(ch)));
      for (size_t pos; (pos = body.find(dep)) != std::string::npos;)
        body.replace(pos, std::string(dep).size(), prim(lower));
    }
    rules_[full] = body;
    return full;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name = p_ + hint;
    for (int k = 2; rules_.count(name); ++k) name = p_ + hint + "-" + std::to_string(k);
    rules_[name] = body;
    return name;
  }

  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) out += std::isalnum(uint8_t(c)) ? c : '-';
    return out.empty() ? "x" : out;
  }

  Result<std::string> ref(const std::string& r, const std::string& where) {
    std::string name;
    const ojson* defs = nullptr;
    for (const char* base : {"#/$defs/", "#/definitions/"})
      if (r.rfind(base, 0) == 0) {
        name = r.substr(std::string(base).size());
        const std::string key = std::string(base).substr(2, std::string(base).size() - 3);
        if (root_.contains(key) && root_[key].is_object() && root_[key].contains(name))
          defs = &root_[key][name];
      }
    if (r == "#") defs = &root_;
    if (!defs)
      return err(where, "$ref '" + r +
                            "' does not resolve (only #, #/$defs/NAME and "
                            "#/definitions/NAME are supported)");
    if (r == "#") return p_ + "root";
    const std::string rule = p_ + "def-" + sanitize(name);
    if (!refs_.count(rule)) {
      refs_.insert(rule);
      rules_[rule] = "";
      auto body = gen(*defs, "def-" + sanitize(name) + "-body", 1);
      if (!body.ok()) return body;
      rules_[rule] = body.value();
    }
    return rule;
  }

  Status unsupported(const ojson& s, const std::string& where) {
    static const char* kUnsupported[] = {"not",
                                         "if",
                                         "then",
                                         "else",
                                         "patternProperties",
                                         "dependentRequired",
                                         "dependentSchemas",
                                         "propertyNames",
                                         "contains",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "multipleOf",
                                         "format",
                                         "minProperties",
                                         "maxProperties",
                                         "unevaluatedProperties",
                                         "uniqueItems"};
    if (!strict_) return Status::success();
    for (const char* k : kUnsupported)
      if (s.contains(k) && !(std::string(k) == "uniqueItems" && s[k] == false))
        return err(where, "keyword '" + std::string(k) +
                              "' cannot be enforced by the grammar (supported: type, properties, "
                              "required, additionalProperties, items, prefixItems, minItems, "
                              "maxItems, enum, const, anyOf, oneOf, $ref, minLength, maxLength, "
                              "pattern)");
    return Status::success();
  }

  Result<std::string> gen(const ojson& s, const std::string& hint, int depth) {
    if (depth > 64) return err(hint, "schema nested too deeply");
    if (s.is_boolean()) {
      if (s.get<bool>()) return prim("value");
      return err(hint, "the schema 'false' matches nothing");
    }
    if (!s.is_object()) return err(hint, "a schema must be an object or a boolean");
    if (Status st = unsupported(s, hint); !st.ok()) return st;
    if (auto it = s.find("$ref"); it != s.end()) {
      if (!it->is_string()) return err(hint, "$ref must be a string");
      return ref(it->get<std::string>(), hint);
    }
    if (auto it = s.find("const"); it != s.end()) return gbnf_literal(it->dump());
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) return err(hint, "enum must be a non-empty array");
      std::string alts;
      for (const auto& v : *it) alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return add_rule(hint, alts);
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty())
          return err(hint, std::string(key) + " must be a non-empty array");
        std::string alts;
        for (size_t k = 0; k < it->size(); ++k) {
          ojson sub = (*it)[k];
          // Sibling keywords (pydantic puts "type" next to anyOf rarely) apply to each branch.
          auto r = gen(sub, hint + "-" + std::to_string(k), depth + 1);
          if (!r.ok()) return r;
          alts += (alts.empty() ? "" : " | ") + r.value();
        }
        return add_rule(hint, alts);
      }
    if (auto it = s.find("allOf"); it != s.end()) {
      if (!it->is_array() || it->size() != 1)
        return err(hint, "allOf is only supported with one schema");
      return gen((*it)[0], hint, depth + 1);
    }
    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) {
        types.push_back(it->get<std::string>());
      } else if (it->is_array()) {
        for (const auto& t : *it) {
          if (!t.is_string()) return err(hint, "type list entries must be strings");
          types.push_back(t.get<std::string>());
        }
      } else {
        return err(hint, "type must be a string or a list of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties") ||
               s.contains("required")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems")) {
      types.push_back("array");
    } else {
      return prim("value");
    }
    if (s.value("nullable", false)) types.push_back("null");
    if (types.empty()) return err(hint, "empty type list");
    std::string alts;
    for (const auto& t : types) {
      auto r = typed(s, t, types.size() > 1 ? hint + "-" + t : hint, depth);
      if (!r.ok()) return r;
      alts += (alts.empty() ? "" : " | ") + r.value();
    }
    return types.size() == 1 ? alts : add_rule(hint, alts);
  }

  Result<int64_t> count(const ojson& s, const char* key, int64_t dflt, const std::string& hint) {
    auto it = s.find(key);
    if (it == s.end()) return dflt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1000)
      return err(hint, std::string(key) + " must be an integer in [0, 1000]");
    return it->get<int64_t>();
  }

  Result<std::string> typed(const ojson& s, const std::string& t, const std::string& hint,
                            int depth) {
    if (t == "null" || t == "boolean" || t == "integer" || t == "number") return prim(t);
    if (t == "string") {
      if (auto it = s.find("pattern"); it != s.end()) {
        if (!it->is_string()) return err(hint, "pattern must be a string");
        auto body = RegexToGbnf(it->get<std::string>()).run();
        if (!body.ok()) return body;
        return add_rule(hint, "\"\\\"\" " + body.value() + " \"\\\"\"");
      }
      auto lo = count(s, "minLength", 0, hint);
      if (!lo.ok()) return lo.status();
      auto hi = count(s, "maxLength", -1, hint);
      if (!hi.ok()) return hi.status();
      if (lo.value() == 0 && hi.value() < 0) return prim("string");
      if (hi.value() >= 0 && hi.value() < lo.value()) return err(hint, "maxLength < minLength");
      const std::string rep = "{" + std::to_string(lo.value()) + "," +
                              (hi.value() >= 0 ? std::to_string(hi.value()) : "") + "}";
      return add_rule(hint, "\"\\\"\" " + prim("char") + rep + " \"\\\"\"");
    }
    if (t == "array") return array(s, hint, depth);
    if (t == "object") return object(s, hint, depth);
    return err(hint, "unknown type '" + t + "'");
  }

  Result<std::string> array(const ojson& s, const std::string& hint, int depth) {
    const std::string ws = prim("ws");
    std::vector<std::string> prefix;
    if (auto it = s.find("prefixItems"); it != s.end() && it->is_array())
      for (size_t k = 0; k < it->size(); ++k) {
        auto r = gen((*it)[k], hint + "-" + std::to_string(k), depth + 1);
        if (!r.ok()) return r;
        prefix.push_back(r.value());
      }
    std::string item = prim("value");
    if (auto it = s.find("items"); it != s.end()) {
      if (it->is_boolean() && !it->get<bool>()) {
        item.clear();
      } else {
        auto r = gen(*it, hint + "-item", depth + 1);
        if (!r.ok()) return r;
        item = r.value();
      }
    }
    auto lo = count(s, "minItems", 0, hint);
    if (!lo.ok()) return lo.status();
    auto hi = count(s, "maxItems", -1, hint);
    if (!hi.ok()) return hi.status();
    if (hi.value() >= 0 && hi.value() < lo.value()) return err(hint, "maxItems < minItems");
    // Elements: the prefix items in order, then `item` repeated, between lo and hi in all.
    const int64_t np = int64_t(prefix.size());
    int64_t max_total = hi.value();
    if (item.empty()) max_total = max_total < 0 ? np : std::min(max_total, np);
    if (lo.value() > max_total && max_total >= 0) return err(hint, "minItems cannot be met");
    // Build right to left: rest(k) = the elements from index k on, each preceded by a comma
    // except the first.
    const std::string sep = " " + ws + " \",\" " + ws + " ";
    std::string tail;  // elements after the prefix
    if (!item.empty()) {
      const int64_t need = std::max<int64_t>(0, lo.value() - np);
      const int64_t extra_max = max_total < 0 ? -1 : std::max<int64_t>(0, max_total - np);
      if (extra_max != 0 || need > 0) {
        // Items k >= np: `first` handles the leading comma when np == 0.
        const std::string one = "(" + sep + item + ")";
        const std::string rep = "{" + std::to_string(need) + "," +
                                (extra_max < 0 ? "" : std::to_string(extra_max)) + "}";
        tail = one + rep;
      }
    }
    std::string body;
    if (np == 0) {
      if (tail.empty()) {
        body = "\"[\" " + ws + " \"]\"";
      } else {
        // First item without a comma, then the rest with one.
        const int64_t need = lo.value();
        const int64_t extra_max = max_total;
        std::string first = item;
        std::string rest;
        if (extra_max < 0 || extra_max > 1) {
          rest = " (" + sep + item + "){" + std::to_string(need > 0 ? need - 1 : 0) + "," +
                 (extra_max < 0 ? "" : std::to_string(extra_max - 1)) + "}";
        }
        std::string elems = first + rest;
        body =
            "\"[\" " + ws + " " + (need > 0 ? elems : "( " + elems + " )?") + " " + ws + " \"]\"";
      }
    } else {
      // Prefix items: item k present only if all before it are (and at least lo overall).
      std::string nested = tail;
      for (int64_t k = np - 1; k >= 0; --k) {
        const std::string cur =
            (k == 0 ? "" : sep) + prefix[size_t(k)] + (nested.empty() ? "" : " " + nested);
        nested = k + 1 <= lo.value() ? cur : "( " + cur + " )?";
      }
      body = "\"[\" " + ws + " " + nested + " " + ws + " \"]\"";
    }
    return add_rule(hint, body);
  }

  Result<std::string> object(const ojson& s, const std::string& hint, int depth) {
    const std::string ws = prim("ws");
    std::vector<std::pair<std::string, std::string>> props;  // (key literal, value rule)
    std::set<std::string> required;
    if (auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) return err(hint, "required must be an array");
      for (const auto& r : *it) {
        if (!r.is_string()) return err(hint, "required entries must be strings");
        required.insert(r.get<std::string>());
      }
    }
    std::vector<bool> opt;
    if (auto it = s.find("properties"); it != s.end()) {
      if (!it->is_object()) return err(hint, "properties must be an object");
      for (auto p = it->begin(); p != it->end(); ++p) {
        auto r = gen(p.value(), hint + "-" + sanitize(p.key()), depth + 1);
        if (!r.ok()) return r;
        props.emplace_back(gbnf_literal(ojson(p.key()).dump()), r.value());
        opt.push_back(!required.count(p.key()));
      }
    }
    for (const auto& r : required) {
      bool found = false;
      for (const auto& [k, v] : props) found |= k == gbnf_literal(ojson(r).dump());
      if (!found && !props.empty() && strict_)
        return err(hint, "required property '" + r + "' is not in properties");
    }
    // Additional properties: "" none, else the value rule.
    std::string extra = prim("value");
    if (auto it = s.find("additionalProperties"); it != s.end()) {
      if (it->is_boolean()) {
        extra = it->get<bool>() ? prim("value") : "";
      } else {
        auto r = gen(*it, hint + "-extra", depth + 1);
        if (!r.ok()) return r;
        extra = r.value();
      }
    } else if (strict_ || !props.empty()) {
      // OpenAI strict mode requires additionalProperties false; with listed properties we keep
      // to them too (any extra key is still valid JSON-schema-wise, but never useful).
      extra = "";
    }
    const std::string sep = " " + ws + " \",\" " + ws + " ";
    auto kv = [&](const std::string& key, const std::string& val) {
      return key + " " + ws + " \":\" " + ws + " " + val;
    };
    std::string extra_kv;
    if (!extra.empty()) extra_kv = "(" + kv(prim("string"), extra) + ")";
    // first(i): properties i.. with nothing written yet; after(i): something was written.
    const size_t n = props.size();
    std::vector<std::string> first(n + 1), after(n + 1);
    const std::string base = hint + "-p";
    after[n] =
        extra.empty() ? "" : add_rule(base + std::to_string(n) + "a", "(" + sep + extra_kv + ")*");
    first[n] = extra.empty() ? ""
                             : add_rule(base + std::to_string(n) + "f",
                                        "( " + extra_kv + " " + after[n] + " )?");
    for (size_t k = n; k-- > 0;) {
      const std::string cur = kv(props[k].first, props[k].second);
      std::string fa = cur + (after[k + 1].empty() ? "" : " " + after[k + 1]);
      std::string aa = sep + cur + (after[k + 1].empty() ? "" : " " + after[k + 1]);
      if (opt[k]) {
        fa += " | " + (first[k + 1].empty() ? "\"\"" : first[k + 1]);
        aa += " | " + (after[k + 1].empty() ? "\"\"" : after[k + 1]);
      }
      first[k] = add_rule(base + std::to_string(k) + "f", fa);
      after[k] = add_rule(base + std::to_string(k) + "a", aa);
    }
    const std::string inner = first[0].empty() ? "" : first[0] + " ";
    return add_rule(hint, "\"{\" " + ws + " " + inner + ws + " \"}\"");
  }

  const ojson& root_;
  std::string p_;
  bool strict_;
  std::map<std::string, std::string> rules_;
  std::set<std::string> refs_;
};

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                        const std::string& prefix, bool strict) {
  return Compiler(schema, prefix, strict).run();
}

}  // namespace inkling
