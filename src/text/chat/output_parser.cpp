// OutputParser: the token-level state machine of spec §3 (header / reasoning / content / tool
// arguments) with an incremental, string-aware brace scanner for tool-call JSON payloads.
// Control tokens act by id only; their text never reaches an output.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "inkling/chat.h"

namespace inkling {
namespace {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}
constexpr int kMaxJsonDepth = 512;  // tool-call JSON deeper than this is not re-serialized

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Length of the trailing identifier run of `s` (no whitespace skipping).
size_t trailing_ident(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_ident_char(s[s.size() - 1 - n])) ++n;
  return n;
}

// Fallback tool name from header text: trim, then take the trailing [A-Za-z0-9_.-] run.
std::string fallback_name(std::string_view header) {
  size_t e = header.size();
  while (e > 0 && is_ws(header[e - 1])) --e;
  std::string_view t = header.substr(0, e);
  return std::string(t.substr(t.size() - trailing_ident(t)));
}

bool valid_name(const std::string& n) {
  return !n.empty() && n.find("<|") == std::string::npos;
}

std::string html_unescape(std::string s) {
  static const std::pair<const char*, const char*> kRepl[] = {
      {"&quot;", "\""}, {"&#34;", "\""}, {"&apos;", "'"}, {"&#39;", "'"},
      {"&lt;", "<"},    {"&gt;", ">"},   {"&amp;", "&"}};
  for (const auto& [from, to] : kRepl) {
    std::string out;
    size_t pos = 0;
    for (size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, pos)) {
      out.append(s, pos, hit - pos);
      out += to;
      pos = hit + std::string_view(from).size();
    }
    out.append(s, pos);
    s = std::move(out);
  }
  return s;
}

// Incremental scanner over one tool-call payload `{"name": ..., "args": {...}}`.
struct CallScan {
  std::string fallback;  // name from the text before the marker
  std::string payload;
  size_t pos = 0;
  bool in_obj = false, in_str = false, esc = false, complete = false;
  int depth = 0, max_depth = 0;
  size_t obj_start = 0, obj_end = 0, str_start = 0;
  bool in_value = false, value_started = false, value_done = false, value_container = false;
  std::string last_key, value_key;
  size_t value_start = 0;
  std::optional<std::string> json_name;
  std::optional<size_t> args_start, args_end;
  bool args_container = false;  // args is an object/array: stream it as it arrives

  static std::string decode(std::string_view raw) {
    try {
      auto j = nlohmann::json::parse(raw);
      if (j.is_string()) return j.get<std::string>();
    } catch (const std::exception&) {
    }
    return std::string();
  }

  void start_value(size_t p, char c) {
    value_started = true;
    value_start = p;
    value_container = c == '{' || c == '[';
    if (value_key == "args" && !args_start) {
      args_start = p;
      args_container = value_container;
    }
  }
  void end_value(size_t e) {
    if (value_done) return;
    value_done = true;
    if (value_key == "args" && args_start && !args_end) {
      while (e > *args_start && is_ws(payload[e - 1])) --e;
      args_end = e;
    }
  }

  void scan() {
    while (pos < payload.size() && !complete) {
      const char c = payload[pos];
      if (!in_obj) {
        if (c == '{') {
          in_obj = true;
          depth = 1;
          obj_start = pos;
        }
        ++pos;
        continue;
      }
      if (in_str) {
        if (esc) {
          esc = false;
        } else if (c == '\\') {
          esc = true;
        } else if (c == '"') {
          in_str = false;
          if (depth == 1) {
            std::string text =
                decode(std::string_view(payload).substr(str_start, pos + 1 - str_start));
            if (in_value && value_started && value_start == str_start) {
              if (value_key == "name" && !json_name) json_name = text;
              end_value(pos + 1);
            } else if (!in_value) {
              last_key = text;
            }
          }
        }
        ++pos;
        continue;
      }
      const bool fresh_value = depth == 1 && in_value && !value_started;
      switch (c) {
        case '"':
          in_str = true;
          if (depth == 1) str_start = pos;
          if (fresh_value) start_value(pos, c);
          break;
        case '{':
        case '[':
          if (fresh_value) start_value(pos, c);
          max_depth = std::max(max_depth, ++depth);
          break;
        case '}':
        case ']':
          --depth;
          if (depth == 1 && in_value && value_container) end_value(pos + 1);
          if (depth == 0) {
            if (in_value && value_started) end_value(pos);
            complete = true;
            obj_end = pos + 1;
          }
          break;
        case ':':
          if (depth == 1) {
            in_value = true;
            value_started = value_done = false;
            value_key = last_key;
          }
          break;
        case ',':
          if (depth == 1) {
            if (in_value && value_started) end_value(pos);
            in_value = false;
          }
          break;
        default:
          if (fresh_value && !is_ws(c)) start_value(pos, c);
      }
      ++pos;
    }
  }
};

}  // namespace

struct OutputParser::State {
  enum class Mode { kHeader, kReasoning, kContent, kToolArgs };

  SpecialTokenIds ids;
  OutputParserOptions opt;
  Mode mode = Mode::kHeader;
  std::string header;  // text in header position: a possible tool name
  std::string held;    // content held back: a trailing identifier that may be a tool name
  std::optional<CallScan> call;
  // Per active call: index in result.tool_calls once announced, and bytes of args streamed.
  std::optional<size_t> call_index;
  size_t args_streamed = 0;
  ParsedMessage result;
  bool stopped = false, finished = false;

  // ---- emit helpers ---------------------------------------------------------------------
  void emit_content(ParseDelta& d, std::string_view s) {
    d.content += s;
    result.content += s;
  }
  void emit_reasoning(ParseDelta& d, std::string_view s) {
    d.reasoning += s;
    result.reasoning_content += s;
  }
  ToolCallDelta& call_delta(ParseDelta& d, size_t index) {
    if (d.tool_calls.empty() || d.tool_calls.back().index != index) {
      d.tool_calls.emplace_back();
      d.tool_calls.back().index = index;
    }
    return d.tool_calls.back();
  }
  void announce(ParseDelta& d, const std::string& name) {
    call_index = result.tool_calls.size();
    result.tool_calls.push_back(ParsedToolCall{name, "", true});
    call_delta(d, *call_index).name = name;
  }
  void stream_args(ParseDelta& d, const std::string& fragment) {
    if (fragment.empty()) return;
    call_delta(d, *call_index).arguments += fragment;
    result.tool_calls[*call_index].arguments += fragment;
    args_streamed += fragment.size();
  }

  void flush_held(ParseDelta& d) {
    if (!held.empty()) emit_content(d, held);
    held.clear();
  }

  // ---- tool calls ----------------------------------------------------------------------
  void begin_call(std::string fallback) {
    call.emplace();
    call->fallback = valid_name(fallback) ? std::move(fallback) : std::string();
    call_index.reset();
    args_streamed = 0;
    mode = Mode::kToolArgs;
  }

  void feed_call(ParseDelta& d, std::string_view text) {
    CallScan& c = *call;
    c.payload += text;
    c.scan();
    if (!call_index) {
      if (c.json_name && valid_name(*c.json_name))
        announce(d, *c.json_name);
      else if (c.args_start && !c.fallback.empty())
        announce(d, c.fallback);
    }
    if (call_index && c.args_start && (c.args_end || c.args_container)) {
      size_t limit = c.args_end ? *c.args_end : c.pos;
      size_t from = *c.args_start + args_streamed;
      if (limit > from) stream_args(d, c.payload.substr(from, limit - from));
    }
    if (c.complete) {
      std::string rest = c.payload.substr(c.obj_end);
      finalize_call(d);
      mode = Mode::kHeader;
      header.clear();
      if (!rest.empty()) on_text(d, rest);  // back-to-back: may be the next call's name
    }
  }

  // Closes the active call, complete or not.
  void finalize_call(ParseDelta& d) {
    if (!call) return;
    CallScan& c = *call;
    std::string name = c.json_name && valid_name(*c.json_name) ? *c.json_name : c.fallback;
    std::string args = "{}";
    bool complete = false;
    if (c.complete && c.max_depth <= kMaxJsonDepth) {  // deeper: treated as malformed
      std::string obj_text = c.payload.substr(c.obj_start, c.obj_end - c.obj_start);
      nlohmann::ordered_json obj = nlohmann::ordered_json::parse(obj_text, nullptr, false);
      bool verbatim_ok = !obj.is_discarded();
      if (obj.is_discarded())
        obj = nlohmann::ordered_json::parse(html_unescape(obj_text), nullptr, false);
      if (!obj.is_discarded() && obj.is_object()) {
        complete = true;
        if (obj.contains("name") && obj["name"].is_string() &&
            valid_name(obj["name"].get<std::string>()))
          name = obj["name"].get<std::string>();
        if (obj.contains("args")) {
          if (verbatim_ok && c.args_start && c.args_end)
            args = c.payload.substr(*c.args_start, *c.args_end - *c.args_start);
          else
            args =
                obj["args"].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        }
      }
    }
    if (!call_index) {
      if (name.empty()) {  // nothing usable: no call at all
        call.reset();
        return;
      }
      announce(d, name);
    }
    ParsedToolCall& out = result.tool_calls[*call_index];
    if (args.size() >= args_streamed && args.compare(0, args_streamed, out.arguments) == 0)
      stream_args(d, args.substr(args_streamed));
    if (complete) out.name = name;  // the JSON name is authoritative
    out.arguments = args;
    out.complete = complete;
    call.reset();
    call_index.reset();
  }

  // ---- text and control tokens ----------------------------------------------------------
  void on_text(ParseDelta& d, std::string_view text) {
    switch (mode) {
      case Mode::kHeader:
        header += text;
        break;
      case Mode::kReasoning:
        emit_reasoning(d, text);
        break;
      case Mode::kContent: {
        held += text;
        size_t keep = trailing_ident(held);
        if (keep < held.size()) {
          emit_content(d, std::string_view(held).substr(0, held.size() - keep));
          held.erase(0, held.size() - keep);
        }
        break;
      }
      case Mode::kToolArgs:
        feed_call(d, text);
        break;
    }
  }

  // Leaves the current block: held text becomes content, header text too (stray text in header
  // position that never became a tool call is still output), an open call is finalized.
  void close_block(ParseDelta& d) {
    if (mode == Mode::kToolArgs) finalize_call(d);
    flush_held(d);
    if (!header.empty()) emit_content(d, header);
    header.clear();
  }

  void on_control(ParseDelta& d, int32_t id) {
    const SpecialTokenIds& k = ids;
    if (id == k.end_sampling || (opt.stop_on_endoftext && id == k.endoftext)) {
      close_block(d);
      stopped = d.stop = true;
      return;
    }
    if (id == k.invoke_tool_json) {
      std::string fb;
      if (mode == Mode::kContent) {
        fb = held;  // the trailing identifier held back is the name, not content
        held.clear();
      } else if (mode == Mode::kHeader) {
        fb = fallback_name(header);
      } else if (mode == Mode::kToolArgs) {
        finalize_call(d);
      }
      header.clear();
      begin_call(fb);
      return;
    }
    if (id == k.content_thinking || id == k.content_text || id == k.invoke_tool_text ||
        id == k.content_tool_error) {
      if (mode == Mode::kToolArgs) finalize_call(d);
      flush_held(d);
      header.clear();  // header text before a kind marker is metadata, never content
      mode = id == k.content_thinking ? Mode::kReasoning : Mode::kContent;
      return;
    }
    if (id == k.end_message || id == k.message_model) {
      close_block(d);
      mode = Mode::kHeader;
      return;
    }
    // Other control tokens (other roles, media markers, unused ids) carry no text.
  }
};

Result<SpecialTokenIds> SpecialTokenIds::from_lookup(
    const std::function<std::optional<int32_t>(std::string_view)>& lookup) {
  SpecialTokenIds ids;
  int32_t lowest = INT32_MAX;
  auto get = [&](const char* tok, int32_t& slot, bool required) -> Status {
    std::optional<int32_t> v = lookup(tok);
    if (!v) {
      if (required)
        return Status::error(std::string("[chat] special token ") + tok + " not in vocabulary");
      slot = -1;
      return Status::success();
    }
    slot = *v;
    lowest = std::min(lowest, *v);
    return Status::success();
  };
  INK_RETURN_IF_ERROR(get("<|endoftext|>", ids.endoftext, false));
  INK_RETURN_IF_ERROR(get("<|message_user|>", ids.message_user, false));
  INK_RETURN_IF_ERROR(get("<|message_model|>", ids.message_model, true));
  INK_RETURN_IF_ERROR(get("<|message_system|>", ids.message_system, false));
  INK_RETURN_IF_ERROR(get("<|message_tool|>", ids.message_tool, false));
  INK_RETURN_IF_ERROR(get("<|content_text|>", ids.content_text, true));
  INK_RETURN_IF_ERROR(get("<|content_model_end_sampling|>", ids.end_sampling, true));
  INK_RETURN_IF_ERROR(get("<|content_thinking|>", ids.content_thinking, true));
  INK_RETURN_IF_ERROR(get("<|end_message|>", ids.end_message, true));
  INK_RETURN_IF_ERROR(get("<|content_tool_error|>", ids.content_tool_error, false));
  INK_RETURN_IF_ERROR(get("<|content_invoke_tool_json|>", ids.invoke_tool_json, true));
  INK_RETURN_IF_ERROR(get("<|content_invoke_tool_text|>", ids.invoke_tool_text, false));
  int32_t unused = -1;  // placeholder below <|endoftext|> in Inkling's vocabulary
  INK_RETURN_IF_ERROR(get("<|begin_of_text|>", unused, false));
  ids.first_control = lowest;
  return ids;
}

OutputParser::OutputParser(const SpecialTokenIds& ids, OutputParserOptions options)
    : s_(std::make_unique<State>()) {
  s_->ids = ids;
  s_->opt = options;
  int32_t last = options.prompt_last_token;
  if (last == ids.content_thinking)
    s_->mode = State::Mode::kReasoning;
  else if (last == ids.content_text)
    s_->mode = State::Mode::kContent;
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

ParseDelta OutputParser::push(int32_t id, std::string_view text) {
  ParseDelta d;
  if (s_->stopped || s_->finished) return d;
  const SpecialTokenIds& k = s_->ids;
  bool control = id >= k.first_control || id == k.end_sampling || id == k.end_message ||
                 id == k.message_model || id == k.content_text || id == k.content_thinking ||
                 id == k.invoke_tool_json;
  if (control)
    s_->on_control(d, id);
  else if (!text.empty())
    s_->on_text(d, text);
  if (s_->stopped) {
    ParseDelta tail = finish();
    d.content += tail.content;
    d.reasoning += tail.reasoning;
  }
  return d;
}

ParseDelta OutputParser::finish() {
  ParseDelta d;
  if (s_->finished) return d;
  s_->finished = true;
  if (!s_->stopped) {
    // Cut off: an open call is truncated; text in header position may be half a tool name,
    // so it is dropped rather than shown.
    if (s_->mode == State::Mode::kToolArgs) s_->finalize_call(d);
    s_->flush_held(d);
    s_->header.clear();
  }
  ParsedMessage& r = s_->result;
  r.finish_reason = !s_->stopped ? "length" : !r.tool_calls.empty() ? "tool_calls" : "stop";
  return d;
}

const ParsedMessage& OutputParser::result() const {
  return s_->result;
}
bool OutputParser::stopped() const {
  return s_->stopped;
}
bool OutputParser::in_reasoning() const {
  return s_->mode == State::Mode::kReasoning;
}

}  // namespace inkling
