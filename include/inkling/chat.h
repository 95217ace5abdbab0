// Chat formatting and output parsing for Inkling: ChatTemplate renders an OpenAI chat request with
// the model's Jinja chat template exactly as transformers' apply_chat_template does; OutputParser
// splits generated token ids into reasoning, visible content and tool calls, incrementally.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "inkling/status.h"

namespace inkling {

// ---- chat template ---------------------------------------------------------------------------

class ChatTemplate {
 public:
  // Reads MODEL_DIR/chat_template.jinja, else the "chat_template" of tokenizer_config.json (a
  // string, or a list of named templates: "default", and "tool_use" when tools are given). The
  // special-token strings of tokenizer_config.json (eos_token, ...) become template variables.
  static Result<ChatTemplate> load(const std::string& model_dir);
  // A template from source text (syntax errors: "[template] line L, column C: ...").
  static Result<ChatTemplate> from_string(std::string source);

  // Renders an OpenAI chat request body: `messages`, optional `tools`, `reasoning_effort` (top
  // level, overridden by `chat_template_kwargs`), `chat_template_kwargs` (extra variables) and
  // `add_generation_prompt` (default true). Messages are prepared as transformers and OpenAI
  // servers do: null-valued keys dropped, `reasoning`/`thinking` aliased to
  // `reasoning_content`, string tool-call `arguments` parsed as JSON (int/float kept).
  // Errors: a template's raise_exception(msg) returns exactly msg; bad requests "[chat] ...";
  // other template failures "[template] line L: ...". Prefer ordered_json: Python keeps
  // object key order, and templates that iterate or print objects unsorted depend on it.
  Result<std::string> render(const nlohmann::ordered_json& request) const;
  Result<std::string> render(const nlohmann::json& request) const;

  const std::string& source() const;

  struct Impl;  // opaque; defined in src/text/chat/chat_template.cpp

 private:
  std::shared_ptr<const Impl> impl_;
};

// ---- output parsing --------------------------------------------------------------------------

// Control-token ids the parser acts on. Defaults are Inkling's; a tokenizer can fill them with
// from_lookup(). An id of -1 means "not in this vocabulary".
struct SpecialTokenIds {
  int32_t endoftext = 199999;           // <|endoftext|>
  int32_t message_user = 200000;        // <|message_user|>
  int32_t message_model = 200001;       // <|message_model|>
  int32_t message_system = 200002;      // <|message_system|>
  int32_t message_tool = 200003;        // <|message_tool|>
  int32_t content_text = 200004;        // <|content_text|>
  int32_t end_sampling = 200006;        // <|content_model_end_sampling|> (EOS)
  int32_t content_thinking = 200008;    // <|content_thinking|>
  int32_t end_message = 200010;         // <|end_message|>
  int32_t content_tool_error = 200022;  // <|content_tool_error|>
  int32_t invoke_tool_json = 200049;    // <|content_invoke_tool_json|>
  int32_t invoke_tool_text = 200057;    // <|content_invoke_tool_text|>
  int32_t first_control = 199998;       // ids >= this never contribute text to any output

  // Looks every token up by its string; fails when a required one (message_model,
  // content_text, end_sampling, content_thinking, end_message, invoke_tool_json) is missing.
  static Result<SpecialTokenIds> from_lookup(
      const std::function<std::optional<int32_t>(std::string_view)>& lookup);
};

struct ToolCallDelta {
  size_t index = 0;       // the call's position in this turn
  std::string name;       // non-empty only in the call's first delta (complete, never partial)
  std::string arguments;  // next fragment of the arguments JSON text
};

// What one pushed token adds. Concatenating all deltas gives the final ParsedMessage (except a
// truncated tool call, whose final arguments fall back to "{}").
struct ParseDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool stop = false;  // a stop token arrived: end generation here
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty() && !stop; }
};

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text of the call's "args" object ("{}" when absent/truncated)
  bool complete = true;   // false: the payload was cut off or malformed
};

struct ParsedMessage {
  std::string reasoning_content;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  // "length" (no stop token: cut off), else "tool_calls" when calls were made, else "stop".
  std::string finish_reason;
};

struct OutputParserOptions {
  bool stop_on_endoftext = true;  // also stop on <|endoftext|> (EOS is always a stop)
  // The last control token of the prompt, which decides the initial state; -1 means the
  // prompt ended with <|message_model|> (add_generation_prompt).
  int32_t prompt_last_token = -1;
};

// Token-level state machine over a generated turn (see docs in spec §3): reasoning blocks
// (<|content_thinking|> ... <|end_message|>), text blocks (<|content_text|> ...) and tool calls
// (NAME<|content_invoke_tool_json|>{"name":...,"args":{...}}), robust to header-less first blocks,
// back-to-back calls without <|end_message|>, prose before a tool name and truncation.
class OutputParser {
 public:
  explicit OutputParser(const SpecialTokenIds& ids, OutputParserOptions options = {});
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // Feeds one generated token and its decoded text (complete UTF-8; empty for control tokens is
  // fine). Tokens after a stop are ignored.
  ParseDelta push(int32_t id, std::string_view text);
  // Ends the turn (stop token seen or generation cut off) and flushes held-back text.
  ParseDelta finish();

  const ParsedMessage& result() const;
  bool stopped() const;
  bool in_reasoning() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace inkling
