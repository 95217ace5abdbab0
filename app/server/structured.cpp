// Grammar text for structured output (see structured.h).
#include "structured.h"

namespace inkling::server {

namespace {

std::string literal(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') out += '\\';
    out += char(c);
  }
  return out + "\"";
}

}  // namespace

const char* const kChatGrammarStart = "inkling-turn";

namespace {
constexpr const char* kStart = "inkling-turn";

// The reasoning block that may come first (the constraint applies to what follows it).
constexpr const char* kThink =
    "inkling-think ::= <|content_thinking|> inkling-think-char* <|end_message|> "
    "<|message_model|>\n"
    "inkling-think-char ::= .\n";

std::optional<ApiError> schema_rules(const ojson& schema, const std::string& prefix, bool strict,
                                     const std::string& param, std::string* out) {
  auto g = json_schema_to_gbnf(schema, prefix, strict);
  if (!g.ok()) return bad_request(g.status().message(), param, "invalid_schema");
  *out += g.value();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> chat_grammar(const ChatRequest& cr, std::string* out) {
  out->clear();
  const GenerationRequest& g = cr.gen;
  if (cr.tool_choice == ToolChoice::kRequired || cr.tool_choice == ToolChoice::kNamed) {
    std::string calls, rules;
    const ojson& tools = cr.render_request.at("tools");
    for (size_t i = 0; i < tools.size(); ++i) {
      const ojson& fn = tools[i].at("function");
      const std::string name = fn.at("name").get<std::string>();
      if (cr.tool_choice == ToolChoice::kNamed && name != cr.tool_name) continue;
      ojson params = fn.contains("parameters") && fn["parameters"].is_object()
                         ? fn["parameters"]
                         : ojson{{"type", "object"}};
      const bool strict =
          fn.contains("strict") && fn["strict"].is_boolean() && fn["strict"].get<bool>();
      const std::string prefix = "t" + std::to_string(i) + "-";
      if (auto e = schema_rules(params, prefix, strict,
                                "tools[" + std::to_string(i) + "].function.parameters", &rules))
        return e;
      // The template's call body: {"name":<json name>,"args":<args>}.
      const std::string head = "{\"name\":" + ojson(name).dump() + ",\"args\":";
      calls += (calls.empty() ? "" : " | ") + std::string("( ") + literal(name) +
               " <|content_invoke_tool_json|> " + literal(head) + " " + prefix + "root " +
               literal("}") + " <|end_message|> )";
    }
    *out =
        std::string(kStart) + " ::= inkling-think? inkling-calls <|content_model_end_sampling|>\n";
    *out += cr.parallel_tool_calls
                ? "inkling-calls ::= inkling-call ( <|message_model|> inkling-call )*\n"
                : "inkling-calls ::= inkling-call\n";
    *out += "inkling-call ::= " + calls + "\n" + kThink + rules;
    return std::nullopt;
  }
  if (!g.grammar.empty()) {
    // The user's grammar describes the answer text (its `root`); ours starts at kStart.
    *out = std::string(kStart) +
           " ::= inkling-think? <|content_text|> root <|end_message|> "
           "<|content_model_end_sampling|>\n" +
           kThink + g.grammar + "\n";
    return std::nullopt;
  }
  if (g.response_format == ResponseFormat::kText) return std::nullopt;
  *out = std::string(kStart) +
         " ::= inkling-think? <|content_text|> s-root <|end_message|> "
         "<|content_model_end_sampling|>\n";
  *out += kThink;
  if (g.response_format == ResponseFormat::kJsonObject)
    return schema_rules(ojson{{"type", "object"}}, "s-", false, "response_format", out);
  return schema_rules(g.json_schema, "s-", g.schema_strict, "response_format.json_schema.schema",
                      out);
}

std::optional<ApiError> completion_grammar(const GenerationRequest& g, std::string* out) {
  out->clear();
  if (!g.grammar.empty()) {
    *out = g.grammar;
    return std::nullopt;
  }
  if (g.response_format == ResponseFormat::kText) return std::nullopt;
  if (g.response_format == ResponseFormat::kJsonObject)
    return schema_rules(ojson{{"type", "object"}}, "", false, "response_format", out);
  return schema_rules(g.json_schema, "", g.schema_strict, "response_format.json_schema.schema",
                      out);
}

std::shared_ptr<const VocabIndex> VocabIndexCache::get(const Tokenizer& tok) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!index_) index_ = VocabIndex::build(tok);
  return index_;
}

std::optional<ApiError> make_grammar_constraint(const std::string& text, const Tokenizer& tok,
                                                std::shared_ptr<const VocabIndex> vocab,
                                                GrammarConstraintOptions opts,
                                                const std::string& param, const std::string& root,
                                                std::shared_ptr<GrammarConstraint>* out) {
  auto g = Grammar::parse(text, &tok, root);
  if (!g.ok()) return bad_request(g.status().message(), param, "invalid_grammar");
  *out = std::make_shared<GrammarConstraint>(g.value(), std::move(vocab), std::move(opts));
  return std::nullopt;
}

}  // namespace inkling::server
