// Grammar-constrained decoding: the GBNF parser (errors), the byte-level matcher (accept /
// reject, incremental, unicode, escapes, numbers), the JSON-schema compiler, and the token
// constraint on the real 200k Inkling vocabulary: random logits sampled under the constraint
// must always give complete JSON that validates against the schema, within the token budget.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>

#include "inkling/grammar.h"
#include "tokenizer_test_util.h"

namespace inkling {
namespace {

using ojson = nlohmann::ordered_json;

Grammar must_parse(const std::string& text, const Tokenizer* tok = nullptr) {
  auto g = Grammar::parse(text, tok);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return std::move(g).value();
}

bool full_match(const Grammar& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.complete();
}

TEST(Grammar, ParseErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"root ::= \"a", "line 1, column 10: unterminated string literal"},
      {"root ::= a", "rule 'a' is used but never defined"},
      {"x ::= \"a\"", "no 'root' rule"},
      {"root ::= root \"a\" | \"b\"", "left-recursive"},
      {"root ::= x \"a\"\nx ::= \"\" | y x \"b\"\ny ::= \"\"", "left-recursive"},
      {"root ::= \"a\" root", "can never finish"},
      {"root ::= [b-a]", "out of order"},
      {"root ::= \"a\"{3,2}", "n < m"},
      {"root ::= \"a\"{5000}", "above 1000"},
      {"root ::= <|end_message|>", "needs a tokenizer"},
      {"root ::= \"\\q\"", "unknown escape"},
      {"root ::= (\"a\"", "missing ')'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
      {"root = \"a\"", "expected '::='"},
  };
  for (const auto& c : cases) {
    auto g = Grammar::parse(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(g.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << g.status().message();
    EXPECT_EQ(g.status().message().rfind("[grammar]", 0), 0u) << g.status().message();
  }
}

TEST(Grammar, RepetitionsClassesAndAlternatives) {
  Grammar g = must_parse(R"(# a comment
root ::= greeting ( ", " name ){1,3} "!"?
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]*   # trailing comment
)");
  EXPECT_TRUE(full_match(g, "hi, Ann"));
  EXPECT_TRUE(full_match(g, "hello, Ann, B, Cy!"));
  EXPECT_FALSE(full_match(g, "hello, Ann, B, Cy, Dee"));
  EXPECT_FALSE(full_match(g, "hi"));
  EXPECT_FALSE(full_match(g, "hi, ann"));
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_bytes("hel"));
  EXPECT_FALSE(m.accept_bytes("x"));  // state unchanged on a reject
  EXPECT_TRUE(m.accept_bytes("lo, A"));
  EXPECT_TRUE(m.complete());
  EXPECT_TRUE(m.can_continue());
  EXPECT_EQ(m.distance(), 0);
  GrammarMatcher m2(g);
  EXPECT_EQ(m2.distance(), 5);  // "hi" + ", " + one capital letter
}

TEST(Grammar, ChainsOfOptionalRulesStayLinear) {
  std::string text = "root ::=";
  for (int i = 0; i < 60; ++i) text += " a";
  text += " \"z\"\na ::= \"\" | \"x\" | ws\nws ::= \" \"?\n";
  Grammar g = must_parse(text);
  EXPECT_TRUE(full_match(g, "xx x z"));
  EXPECT_TRUE(full_match(g, "z"));
  EXPECT_FALSE(full_match(g, std::string(61, 'x') + "z"));
  // Repeating something that can be empty (a fuzzer find: the pattern "(-[0-9]{2})?*").
  Grammar rep = must_parse("root ::= ( \"a\"? )* ( \"b\"* )+ \"c\"");
  EXPECT_TRUE(full_match(rep, "aabbc"));
  EXPECT_TRUE(full_match(rep, "c"));
  EXPECT_FALSE(full_match(rep, "ba"));
}

TEST(Grammar, UnicodeClassesMatchWholeUtf8Characters) {
  Grammar g = must_parse("root ::= [à-ÿ€-€😀-😂]+ [^a-z]");
  EXPECT_TRUE(full_match(g, "é€😁Z"));
  EXPECT_TRUE(full_match(g, "ÿ日"));
  EXPECT_FALSE(full_match(g, "éa"));
  EXPECT_FALSE(full_match(g, "\xC3"));           // half a character
  EXPECT_FALSE(full_match(g, "\xED\xA0\x80!"));  // an encoded surrogate is not UTF-8
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_bytes("\xF0\x9F"));  // incremental: half an emoji is a valid prefix
  EXPECT_FALSE(m.complete());
  EXPECT_TRUE(m.accept_bytes("\x98\x80"));
  EXPECT_FALSE(m.accept_bytes("\x80"));  // a stray continuation byte
  Grammar dot = must_parse("root ::= . . \"\\u00e9\" \"\\x41\"");
  EXPECT_TRUE(full_match(dot, "a日éA"));
  EXPECT_FALSE(full_match(dot,
                          "a\xFF"
                          "éA"));
}

TEST(Grammar, JsonValues) {
  Grammar g = must_parse(Grammar::json_value_gbnf());
  for (const char* ok :
       {"0", "-0", "12", "-1.5e+10", "1E5", "0.25", "true", "null", "\"\"", "\"a\\n\\\"b\\u00e9\"",
        "\"日本\"", "[]", "[ 1, 2 ]", "{\"a\":{\"b\":[true,false,null]}}", "{ \"k\" :\n  1 }",
        "\"\\/\\b\\f\\r\\t\\\\\""})
    EXPECT_TRUE(full_match(g, ok)) << ok;
  for (const char* bad :
       {"01", "-", "1.", ".5", "1e", "+1", "tru", "\"a", "\"\\x\"", "\"\\u12g4\"", "[1,]", "{,}",
        "{\"a\"}", "{\"a\":1,}", "\"a\nb\"", "[1 2]", "nul", "{'a':1}", "\"\x01\""})
    EXPECT_FALSE(full_match(g, bad)) << bad;
  Grammar obj = must_parse(Grammar::json_object_gbnf());
  EXPECT_TRUE(full_match(obj, "{}"));
  EXPECT_FALSE(full_match(obj, "[]"));
}

// A small validator for the supported subset (the server tests use Python's jsonschema).
bool validate(const ojson& v, const ojson& s, const ojson& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    if (r == "#") return validate(v, root, root);
    const std::string name = r.substr(r.rfind('/') + 1);
    const ojson& defs = root.contains("$defs") ? root["$defs"] : root["definitions"];
    return validate(v, defs[name], root);
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum")) {
    bool any = false;
    for (const auto& e : s["enum"]) any |= e == v;
    if (!any) return false;
  }
  for (const char* k : {"anyOf", "oneOf"})
    if (s.contains(k)) {
      bool any = false;
      for (const auto& sub : s[k]) any |= validate(v, sub, root);
      if (!any) return false;
    }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string())
      types.push_back(s["type"]);
    else
      for (const auto& t : s["type"]) types.push_back(t);
    bool any = false;
    for (const auto& t : types)
      any |= (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
             (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
             (t == "integer" && v.is_number_integer()) || (t == "boolean" && v.is_boolean()) ||
             (t == "null" && v.is_null());
    if (!any) return false;
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (s.contains("properties") && s["properties"].contains(it.key())) {
        if (!validate(it.value(), s["properties"][it.key()], root)) return false;
      } else if (s.contains("additionalProperties")) {
        if (!validate(it.value(), s["additionalProperties"], root)) return false;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    size_t k = 0;
    if (s.contains("prefixItems"))
      for (; k < s["prefixItems"].size() && k < v.size(); ++k)
        if (!validate(v[k], s["prefixItems"][k], root)) return false;
    if (s.contains("items"))
      for (; k < v.size(); ++k)
        if (!validate(v[k], s["items"], root)) return false;
  }
  if (v.is_string()) {
    const std::string str = v;
    size_t chars = 0;
    for (unsigned char c : str) chars += (c & 0xC0) != 0x80;
    if (s.contains("maxLength") && chars > s["maxLength"].get<size_t>()) return false;
    if (s.contains("minLength") && chars < s["minLength"].get<size_t>()) return false;
    if (s.contains("pattern") &&
        !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
      return false;
  }
  return true;
}

std::vector<ojson> test_schemas() {
  return {
      ojson::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
        "age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b","c"]},
        "minItems":1,"maxItems":3},"ok":{"type":"boolean"}},"required":["name","age"],
        "additionalProperties":false})"),
      ojson::parse(R"({"type":"object","properties":{"kind":{"const":"point"},
        "x":{"type":"number"},"y":{"anyOf":[{"type":"null"},{"type":"integer"}]},
        "inner":{"$ref":"#/$defs/Inner"}},"required":["kind","x","y","inner"],
        "$defs":{"Inner":{"type":"object","properties":{"code":{"type":"string",
        "pattern":"^[A-Z]{2}-[0-9]{3}$"},"next":{"anyOf":[{"$ref":"#/$defs/Inner"},
        {"type":"null"}]}},"required":["code","next"],"additionalProperties":false}}})"),
      ojson::parse(R"({"type":"array","prefixItems":[{"type":"string","maxLength":3},
        {"type":["integer","null"]}],"items":false,"minItems":2})"),
      ojson::parse(R"({"type":"object","properties":{"a":{"type":"string","enum":["x","y"]},
        "b":{"type":"string","maxLength":4},"c":{"type":"object","properties":{},
        "additionalProperties":{"type":"integer"}}}})"),
  };
}

TEST(JsonSchema, CompiledGrammarsAcceptValidAndRejectInvalid) {
  const auto schemas = test_schemas();
  auto gbnf = json_schema_to_gbnf(schemas[0]);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  Grammar g = must_parse(gbnf.value());
  EXPECT_TRUE(full_match(g, R"({"name":"Ann","age":30})"));
  EXPECT_TRUE(full_match(g, R"({ "name": "Bo", "age": -2, "tags": ["a", "c"], "ok": true })"));
  EXPECT_TRUE(full_match(g, R"({"name":"Bo","age":7,"ok":false})"));
  EXPECT_FALSE(full_match(g, R"({"age":30,"name":"Ann"})"));           // schema order
  EXPECT_FALSE(full_match(g, R"({"name":"Ann"})"));                    // required
  EXPECT_FALSE(full_match(g, R"({"name":"Ann","age":1.5})"));          // integer
  EXPECT_FALSE(full_match(g, R"({"name":"Ann","age":1,"x":1})"));      // additionalProperties
  EXPECT_FALSE(full_match(g, R"({"name":"Ann","age":1,"tags":[]})"));  // minItems
  EXPECT_FALSE(full_match(g, R"({"name":"Ann","age":1,"tags":["a","a","a","a"]})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Ann","age":1,"tags":["d"]})"));  // enum
  EXPECT_FALSE(full_match(g, R"({"name":"0123456789abc","age":1})"));     // maxLength
  auto g2 = Grammar::parse(json_schema_to_gbnf(schemas[1]).value());
  ASSERT_TRUE(g2.ok()) << g2.status().message();
  EXPECT_TRUE(full_match(g2.value(), R"({"kind":"point","x":1.5,"y":null,"inner":{"code":"AB-123",)"
                                     R"("next":{"code":"CD-456","next":null}}})"));
  EXPECT_FALSE(full_match(g2.value(), R"({"kind":"point","x":1.5,"y":null,)"
                                      R"("inner":{"code":"AB-12","next":null}})"));
  EXPECT_FALSE(full_match(g2.value(), R"({"kind":"line","x":1,"y":2,)"
                                      R"("inner":{"code":"AB-123","next":null}})"));
  auto g3 = Grammar::parse(json_schema_to_gbnf(schemas[2]).value());
  ASSERT_TRUE(g3.ok()) << g3.status().message();
  EXPECT_TRUE(full_match(g3.value(), R"(["ab",null])"));
  EXPECT_FALSE(full_match(g3.value(), R"(["ab"])"));
  EXPECT_FALSE(full_match(g3.value(), R"(["ab",1,2])"));
}

TEST(JsonSchema, ErrorsNameTheKeyword) {
  auto e = json_schema_to_gbnf(ojson::parse(R"({"type":"integer","minimum":3})"), "", true);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("'minimum'"), std::string::npos) << e.status().message();
  EXPECT_TRUE(json_schema_to_gbnf(ojson::parse(R"({"type":"integer","minimum":3})")).ok());
  e = json_schema_to_gbnf(ojson::parse(R"({"$ref":"#/$defs/Nope"})"));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("does not resolve"), std::string::npos);
  e = json_schema_to_gbnf(ojson::parse(R"({"type":"wat"})"));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("unknown type 'wat'"), std::string::npos);
  e = json_schema_to_gbnf(ojson::parse(R"json({"type":"string","pattern":"(?=x)"})json"));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("lookaround"), std::string::npos);
}

// The sampler's job in miniature (the text layer has no Sampler): mask, then a uniform draw
// among the allowed tokens (a harsher test than a model: every allowed token is as likely).
int32_t draw(GrammarConstraint& c, std::vector<float>& logits, std::mt19937& rng) {
  int32_t id = 0;
  std::fill(logits.begin(), logits.end(), 0.f);
  if (auto forced = c.apply(logits)) {
    id = *forced;
  } else {
    std::vector<int32_t> ok;
    for (size_t i = 0; i < logits.size(); ++i)
      if (std::isfinite(logits[i])) ok.push_back(int32_t(i));
    EXPECT_FALSE(ok.empty());
    if (ok.empty()) return -1;
    id = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
  }
  c.accept(id);
  return id;
}

// A budget below the shortest completion counted in bytes (but not in tokens): the constraint
// allows only the tokens that bring the end nearest, so random logits still close valid JSON.
TEST(GrammarConstraint, BudgetBelowTheByteCountStillClosesTheJson) {
  auto tok = testing::hf_tokenizer();
  auto vocab = VocabIndex::build(*tok);
  const int32_t eos = 200006;
  const ojson schema = ojson::parse(R"({"type": "object", "properties": {
      "configuration_description": {"type": "string", "enum": ["international_organization"]},
      "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}},
      "required": ["configuration_description", "items"], "additionalProperties": false})");
  Grammar g = must_parse(json_schema_to_gbnf(schema).value());
  std::mt19937 rng(11);
  std::vector<float> logits(200058);
  for (int64_t budget : {16, 20, 24}) {  // the shortest completion is 72 bytes
    for (int run = 0; run < 4; ++run) {
      GrammarConstraintOptions o;
      o.eos_ids = {eos};
      o.max_tokens = budget;
      auto c = std::make_shared<GrammarConstraint>(g, vocab, o);
      std::vector<int32_t> out;
      bool ended = false;
      for (int64_t step = 0; step < budget; ++step) {
        const int32_t id = draw(*c, logits, rng);
        if (id == eos) {
          ended = true;
          break;
        }
        out.push_back(id);
      }
      const std::string text = tok->decode(out);
      ASSERT_TRUE(ended) << "budget " << budget << ": " << text;
      const ojson v = ojson::parse(text, nullptr, false);
      ASSERT_FALSE(v.is_discarded()) << text;
      EXPECT_TRUE(validate(v, schema, schema)) << text;
    }
  }
}

// Random logits through the sampler under the constraint, on the real vocabulary: the output
// is always complete, parses, and validates; EOS only once the grammar is complete.
TEST(GrammarConstraint, RandomLogitsAlwaysGiveValidJsonOnTheInklingVocabulary) {
  auto tok = testing::hf_tokenizer();
  const auto t0 = std::chrono::steady_clock::now();
  auto vocab = VocabIndex::build(*tok);
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int32_t eos = 200006;
  std::mt19937 rng(7);
  std::vector<float> logits(200058);
  GrammarStats total;
  int64_t tokens = 0;
  auto schemas = test_schemas();
  schemas.push_back(nullptr);  // json_object mode
  for (size_t si = 0; si < schemas.size(); ++si) {
    const bool object_mode = schemas[si].is_null();
    const std::string gbnf =
        object_mode ? Grammar::json_object_gbnf() : json_schema_to_gbnf(schemas[si]).value();
    Grammar g = must_parse(gbnf);
    for (int run = 0; run < 3; ++run) {
      GrammarConstraintOptions o;
      o.eos_ids = {eos};
      o.max_tokens = 96;
      auto c = std::make_shared<GrammarConstraint>(g, vocab, o);
      std::vector<int32_t> out;
      bool ended = false;
      for (int step = 0; step < o.max_tokens; ++step) {
        const int32_t id = draw(*c, logits, rng);
        if (id == eos) {
          EXPECT_TRUE(c->complete()) << "EOS before the grammar was complete";
          ended = true;
          break;
        }
        out.push_back(id);
      }
      ASSERT_FALSE(c->failed());
      ASSERT_TRUE(ended) << "no EOS within the budget: " << tok->decode(out);
      const std::string text = tok->decode(out);
      const ojson v = ojson::parse(text, nullptr, false);
      ASSERT_FALSE(v.is_discarded()) << text;
      if (object_mode)
        EXPECT_TRUE(v.is_object()) << text;
      else
        EXPECT_TRUE(validate(v, schemas[si], schemas[si])) << text;
      const GrammarStats& s = c->stats();
      total.masks += s.masks;
      total.cached += s.cached;
      total.walks += s.walks;
      total.nodes += s.nodes;
      total.mask_seconds += s.mask_seconds;
      tokens += int64_t(out.size()) + 1;
    }
  }
  std::printf(
      "[grammar] vocab trie: %zu nodes, built in %.0f ms; %lld tokens sampled, masking %.1f "
      "us/token (%lld masks, %lld from cache, %lld trie walks over %lld nodes)\n",
      vocab->n_nodes(), build_ms, (long long)tokens, 1e6 * total.mask_seconds / double(total.masks),
      (long long)total.masks, (long long)total.cached, (long long)total.walks,
      (long long)total.nodes);
}

TEST(GrammarConstraint, SpecialTokensAndForcedEnd) {
  auto tok = testing::hf_tokenizer();
  auto vocab = VocabIndex::build(*tok);
  Grammar g = must_parse("root ::= <|content_text|> \"ok\" <|end_message|>", tok.get());
  GrammarConstraint c(g, vocab, {{200006}, -1});
  std::vector<float> logits(200058, 0.f);
  EXPECT_FALSE(c.apply(logits).has_value());
  int allowed = 0;
  for (float x : logits) allowed += std::isfinite(x);
  EXPECT_EQ(allowed, 1);
  EXPECT_TRUE(std::isfinite(logits[200004]));
  c.accept(200004);
  c.accept(tok->encode("ok")[0]);
  c.accept(200010);
  EXPECT_TRUE(c.complete());
  std::fill(logits.begin(), logits.end(), 0.f);
  EXPECT_EQ(c.apply(logits), std::optional<int32_t>(200006));  // nothing else can follow
  GrammarConstraint bad(g, vocab, {{200006}, -1});
  bad.accept(tok->encode("x")[0]);
  EXPECT_TRUE(bad.failed());
}

}  // namespace
}  // namespace inkling
