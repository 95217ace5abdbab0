// Typed requests of the OpenAI-compatible API and their validation: JSON bodies are checked field
// by field here (types, ranges, roles, tool schemas) and turned into plain structs, so nothing
// downstream (scheduler, engine) ever sees JSON. Errors carry the HTTP status and OpenAI fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "inkling/sampler.h"

namespace inkling::server {

using ojson = nlohmann::ordered_json;

// One OpenAI-shaped error: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty = null
  std::string code;   // empty = null
};
ojson error_body(const ApiError& e);
ApiError bad_request(std::string message, std::string param = "", std::string code = "");
// A 400 "'param' must be what" (code invalid_type).
ApiError type_error(const std::string& param, const std::string& what);
// A field's value, or nullptr when absent or null (OpenAI treats null as "not given").
const ojson* field(const ojson& o, const char* key);
// The string field `key` of o into *out, or a type error naming where.key when it is absent or
// not a string.
std::optional<ApiError> get_string(const ojson& o, const char* key, const std::string& where,
                                   std::string* out);

inline constexpr int kMaxChoices = 16;  // the largest `n`

// response_format: plain text, any JSON object, or JSON matching a schema (constrained decoding,
// structured.h).
enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

// Generation options shared by chat and completions.
struct GenerationRequest {
  SamplingParams sampling;  // temperature defaults to 1.0 as in OpenAI's API
  bool seed_given = false;
  float presence_penalty = 0.0f, frequency_penalty = 0.0f, repetition_penalty = 1.0f;
  int64_t max_tokens = -1;  // -1: up to the context size
  std::vector<std::string> stop;
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool logprobs = false;
  int top_logprobs = 0;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool ignore_eos = false;     // extension (vLLM, llama.cpp): keep going past EOS
  std::string model;           // echoed back; any name is accepted
  int n = 1;                   // choices per request
  ResponseFormat response_format = ResponseFormat::kText;
  ojson json_schema;           // kJsonSchema: response_format.json_schema.schema
  bool schema_strict = false;  // response_format.json_schema.strict
  std::string grammar;         // extension (llama.cpp): a GBNF-like grammar (docs/grammar.md)
};

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

// An image or audio content part, in prompt order (the chat template renders one placeholder
// for each). `url`: a data: URL, an http(s) URL (refused later) or a local path / file:// URL
// (served only with --media-dir); `data`: input_audio's base64 WAV.
struct MediaPart {
  bool image = true;
  std::string url, data, format;
  std::string param;  // "messages[1].content[0]" for errors
};

struct ChatRequest {
  std::vector<MediaPart> media;
  ojson render_request;  // messages/tools/reasoning_effort/chat_template_kwargs for the template
  GenerationRequest gen;
  bool has_tools = false;
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_name;            // kNamed
  bool parallel_tool_calls = true;  // false: at most one tool call per turn
};

struct CompletionRequest {
  std::string prompt_text;          // when !prompt_is_ids
  std::vector<int32_t> prompt_ids;  // when prompt_is_ids
  bool prompt_is_ids = false;
  bool echo = false;
  bool skip_special_tokens = true;
  GenerationRequest gen;
};

struct TokenizeRequest {
  std::string text;      // "content" or "prompt"
  ojson render_request;  // when "messages" was given
  bool is_chat = false;
  bool add_special = true;  // parse <|...|> markers in text as control tokens
  bool with_pieces = false;
};

// Parse + validate. `vocab` bounds token ids in prompts / logit_bias.
std::optional<ApiError> parse_chat_request(const ojson& body, ChatRequest* out);
std::optional<ApiError> parse_completion_request(const ojson& body, int64_t vocab,
                                                 CompletionRequest* out);
std::optional<ApiError> parse_tokenize_request(const ojson& body, TokenizeRequest* out);
std::optional<ApiError> parse_detokenize_request(const ojson& body, int64_t vocab,
                                                 std::vector<int32_t>* out);

// A body as JSON; invalid JSON or a non-object is a 400 naming the byte offset; a number that
// overflows a double is a 400 naming its field; nesting beyond kMaxJsonDepth (base/json_limits.h)
// is a 400.
std::optional<ApiError> parse_json_body(const std::string& body, ojson* out);

}  // namespace inkling::server
