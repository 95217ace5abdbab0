// Turning generated token ids into API output on the HTTP thread: stop strings matched across
// token boundaries (a possible partial match is held back, never emitted), chat deltas from the
// OutputParser (reasoning / content / tool calls with generated call ids), and plain text for
// completions. Text deltas are always whole UTF-8 characters and never contain control markers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inkling/chat.h"
#include "inkling/tokenizer.h"

namespace inkling::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Appends text; returns what can be emitted now. After a hit, the stop string and everything
  // after it are dropped and hit() is true.
  std::string push(std::string_view text);
  std::string flush();  // the held-back tail (no stop string completed)
  bool hit() const { return hit_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool hit_ = false;
};

struct ChatToolDelta {
  size_t index = 0;
  std::string id;    // set with the call's first delta (together with the name)
  std::string name;  // first delta only
  std::string arguments;
};

struct ChatDelta {
  std::string reasoning, content;
  std::vector<ChatToolDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

struct ChatToolCall {
  std::string id, name, arguments;
};

class ChatOutput {
 public:
  ChatOutput(std::shared_ptr<const Tokenizer> tok, const SpecialTokenIds& ids,
             std::vector<std::string> stops);
  ChatDelta push(int32_t id);
  ChatDelta finish();  // flushes held-back text; call once at the end
  // ignore_eos: end-of-turn tokens are skipped instead of ending the message.
  void set_ignore_eos(bool on) { ignore_eos_ = on; }
  bool done() const { return parser_.stopped() || content_stop_.hit() || reasoning_stop_.hit(); }
  bool stop_string_hit() const { return content_stop_.hit() || reasoning_stop_.hit(); }
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

  // The whole message so far (as emitted: truncated at a stop string).
  const std::string& reasoning() const { return reasoning_; }
  const std::string& content() const { return content_; }
  std::vector<ChatToolCall> tool_calls() const;

 private:
  ChatDelta convert(ParseDelta d);
  std::shared_ptr<const Tokenizer> tok_;
  SpecialTokenIds ids_;
  OutputParser parser_;
  StreamDecoder dec_;
  StopMatcher content_stop_, reasoning_stop_;
  std::string reasoning_, content_;
  std::vector<std::string> call_ids_;
  std::vector<std::string> call_names_;
  std::vector<std::string> call_args_;
  int64_t reasoning_tokens_ = 0;
  bool ignore_eos_ = false;
};

// Completions: text of the generated ids (special tokens dropped unless asked) + stop strings.
class TextOutput {
 public:
  TextOutput(std::shared_ptr<const Tokenizer> tok, bool skip_special,
             std::vector<std::string> stops, std::vector<int32_t> stop_ids);
  std::string push(int32_t id);
  std::string finish();
  bool stop_string_hit() const { return stop_.hit(); }

 private:
  std::shared_ptr<const Tokenizer> tok_;
  StreamDecoder dec_;
  StopMatcher stop_;
  std::vector<int32_t> stop_ids_;
};

// "call_" + 24 random alphanumerics (OpenAI's shape).
std::string make_call_id();
// "chatcmpl-..." / "cmpl-..." request ids.
std::string make_request_id(const char* prefix);

}  // namespace inkling::server
