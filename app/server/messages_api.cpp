// POST /v1/messages: translated to a chat request (messages_to_chat), started with start_chat()
// like /v1/chat/completions; one state machine (BlockBuilder) turns the chat deltas into content
// blocks for both the streaming and the non-streaming answer.
#include "messages_api.h"

#include <functional>

#include "chat_run.h"
#include "context.h"
#include "sse.h"

namespace inkling::server {

namespace {

using Err = std::optional<ApiError>;

// Text of a string or a list of text blocks (system, tool_result.content).
Err text_of(const ojson& c, const std::string& where, std::string* out) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array()) return type_error(where, "a string or an array of text blocks");
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object() || !c[i].contains("type") || c[i]["type"] != "text")
      return bad_request(w + ": only text blocks are supported here", w + ".type",
                         "unsupported_content");
    std::string t;
    if (Err e = get_string(c[i], "text", w, &t)) return e;
    *out += t;
  }
  return std::nullopt;
}

Err convert_message(const ojson& m, const std::string& w, ojson* messages) {
  if (!m.is_object()) return type_error(w, "an object");
  std::string role;
  if (Err e = get_string(m, "role", w, &role)) return e;
  if (role != "user" && role != "assistant")
    return bad_request("unknown role '" + role + "' in " + w + ": expected user or assistant",
                       w + ".role", "invalid_role");
  const ojson* c = field(m, "content");
  if (!c) return bad_request(w + ".content is required", w + ".content", "missing_field");
  if (c->is_string()) {
    messages->push_back({{"role", role}, {"content", *c}});
    return std::nullopt;
  }
  if (!c->is_array()) return type_error(w + ".content", "a string or an array of blocks");
  ojson parts = ojson::array();
  ojson calls = ojson::array();
  std::string thinking;
  for (size_t j = 0; j < c->size(); ++j) {
    const ojson& b = (*c)[j];
    const std::string bw = w + ".content[" + std::to_string(j) + "]";
    if (!b.is_object()) return type_error(bw, "an object");
    std::string type;
    if (Err e = get_string(b, "type", bw, &type)) return e;
    if (type == "text") {
      std::string t;
      if (Err e = get_string(b, "text", bw, &t)) return e;
      parts.push_back({{"type", "text"}, {"text", t}});
    } else if (type == "image" && role == "user") {
      const ojson* src = field(b, "source");
      if (!src || !src->is_object()) return type_error(bw + ".source", "an object");
      std::string st;
      if (Err e = get_string(*src, "type", bw + ".source", &st)) return e;
      std::string url;
      if (st == "base64") {
        std::string mt, data;
        if (Err e = get_string(*src, "media_type", bw + ".source", &mt)) return e;
        if (Err e = get_string(*src, "data", bw + ".source", &data)) return e;
        url = "data:" + mt + ";base64," + data;
      } else if (st == "url") {
        if (Err e = get_string(*src, "url", bw + ".source", &url)) return e;
      } else {
        return bad_request("image source type '" + st + "' is not supported (base64 or url)",
                           bw + ".source.type", "unsupported_content");
      }
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    } else if (type == "tool_use" && role == "assistant") {
      std::string id, name;
      if (Err e = get_string(b, "id", bw, &id)) return e;
      if (Err e = get_string(b, "name", bw, &name)) return e;
      const ojson* input = field(b, "input");
      if (!input || !input->is_object()) return type_error(bw + ".input", "an object");
      calls.push_back({{"id", id},
                       {"type", "function"},
                       {"function", {{"name", name}, {"arguments", input->dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      std::string id, text;
      if (Err e = get_string(b, "tool_use_id", bw, &id)) return e;
      if (const ojson* rc = field(b, "content"))
        if (Err e = text_of(*rc, bw + ".content", &text)) return e;
      if (const ojson* err = field(b, "is_error"); err && err->is_boolean() && err->get<bool>())
        text = "Error: " + text;
      messages->push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", text}});
    } else if (type == "thinking" && role == "assistant") {
      std::string t;
      if (Err e = get_string(b, "thinking", bw, &t)) return e;
      thinking += t;
    } else if (type == "redacted_thinking" && role == "assistant") {
      continue;  // nothing readable to render
    } else {
      return bad_request("content block type '" + type + "' is not supported in " + role +
                             " messages (user: text, image, tool_result; assistant: text, "
                             "thinking, tool_use)",
                         bw + ".type", "unsupported_content");
    }
  }
  if (parts.empty() && calls.empty() && thinking.empty()) return std::nullopt;
  ojson msg = {{"role", role}};
  if (role == "assistant") {
    std::string text;
    for (const auto& p : parts) text += p["text"].get<std::string>();
    msg["content"] = text;
    if (!thinking.empty()) msg["reasoning_content"] = thinking;
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  } else {
    msg["content"] = std::move(parts);
  }
  messages->push_back(std::move(msg));
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> messages_to_chat(const ojson& body, ojson* chat) {
  *chat = ojson::object();
  ojson messages = ojson::array();
  if (const ojson* sys = field(body, "system")) {
    std::string text;
    if (Err e = text_of(*sys, "system", &text)) return e;
    messages.push_back({{"role", "system"}, {"content", text}});
  }
  const ojson* msgs = field(body, "messages");
  if (!msgs) return bad_request("'messages' is required", "messages", "missing_field");
  if (!msgs->is_array() || msgs->empty())
    return type_error("messages", "a non-empty array of messages");
  for (size_t i = 0; i < msgs->size(); ++i)
    if (Err e = convert_message((*msgs)[i], "messages[" + std::to_string(i) + "]", &messages))
      return e;
  (*chat)["messages"] = std::move(messages);
  const ojson* mt = field(body, "max_tokens");
  if (!mt) return bad_request("'max_tokens' is required", "max_tokens", "missing_field");
  if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
    return type_error("max_tokens", "an integer >= 1");
  (*chat)["max_completion_tokens"] = *mt;
  if (const ojson* th = field(body, "thinking")) {
    std::string type;
    if (!th->is_object() || get_string(*th, "type", "thinking", &type))
      return type_error("thinking",
                        "{\"type\": \"enabled\", \"budget_tokens\": N} or "
                        "{\"type\": \"disabled\"}");
    if (type == "disabled") {
      (*chat)["reasoning_effort"] = "none";
    } else if (type == "enabled") {
      const ojson* bt = field(*th, "budget_tokens");
      if (!bt || !bt->is_number_integer() || bt->get<int64_t>() < 1)
        return type_error("thinking.budget_tokens", "an integer >= 1");
      if (bt->get<int64_t>() >= mt->get<int64_t>())
        return bad_request("thinking.budget_tokens must be less than max_tokens",
                           "thinking.budget_tokens", "invalid_value");
    } else {
      return bad_request("thinking.type must be 'enabled' or 'disabled'", "thinking.type",
                         "invalid_value");
    }
  }
  if (const ojson* tools = field(body, "tools")) {
    if (!tools->is_array()) return type_error("tools", "an array");
    ojson out = ojson::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const ojson& t = (*tools)[i];
      const std::string w = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return type_error(w, "an object");
      if (const ojson* type = field(t, "type"); type && *type != "custom")
        return bad_request(w + ": only client tools ({name, description, input_schema}) are "
                               "supported, not server tools",
                           w + ".type", "unsupported_tool");
      ojson fn = ojson::object();
      std::string name;
      if (Err e = get_string(t, "name", w, &name)) return e;
      fn["name"] = name;
      if (const ojson* d = field(t, "description")) fn["description"] = *d;
      const ojson* schema = field(t, "input_schema");
      if (!schema) return bad_request(w + ".input_schema is required", w + ".input_schema");
      fn["parameters"] = *schema;
      out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    (*chat)["tools"] = std::move(out);
  }
  if (const ojson* tc = field(body, "tool_choice")) {
    std::string type;
    if (!tc->is_object() || get_string(*tc, "type", "tool_choice", &type))
      return type_error("tool_choice", "{\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    if (type == "auto" || type == "none") {
      (*chat)["tool_choice"] = type;
    } else if (type == "any") {
      (*chat)["tool_choice"] = "required";
    } else if (type == "tool") {
      std::string name;
      if (Err e = get_string(*tc, "name", "tool_choice", &name)) return e;
      (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    } else {
      return bad_request("tool_choice.type must be auto, any, tool or none", "tool_choice.type",
                         "invalid_value");
    }
    if (const ojson* d = field(*tc, "disable_parallel_tool_use")) {
      if (!d->is_boolean()) return type_error("tool_choice.disable_parallel_tool_use", "a boolean");
      (*chat)["parallel_tool_calls"] = !d->get<bool>();
    }
  }
  if (const ojson* s = field(body, "stop_sequences")) {
    if (!s->is_array()) return type_error("stop_sequences", "an array of strings");
    (*chat)["stop"] = *s;
  }
  for (const char* k : {"model", "temperature", "top_p", "top_k", "seed"})
    if (const ojson* v = field(body, k)) (*chat)[k] = *v;
  return std::nullopt;
}

namespace {

// Chat deltas -> content blocks and events; emit(type, payload) gets each event.
class BlockBuilder {
 public:
  using Emit = std::function<bool(const std::string&, ojson)>;
  explicit BlockBuilder(Emit emit) : emit_(std::move(emit)) {}

  bool push(const ChatDelta& d) {
    if (!d.reasoning.empty()) {
      if (kind_ != Kind::kThinking &&
          !open(Kind::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}))
        return false;
      text_ += d.reasoning;
      if (!delta({{"type", "thinking_delta"}, {"thinking", d.reasoning}})) return false;
    }
    if (!d.content.empty()) {
      if (kind_ != Kind::kText && !open(Kind::kText, {{"type", "text"}, {"text", ""}}))
        return false;
      text_ += d.content;
      if (!delta({{"type", "text_delta"}, {"text", d.content}})) return false;
    }
    for (const auto& t : d.tool_calls) {
      if (!t.id.empty() && !open(Kind::kTool, {{"type", "tool_use"},
                                               {"id", "toolu_" + t.id.substr(5)},
                                               {"name", t.name},
                                               {"input", ojson::object()}}))
        return false;
      if (kind_ != Kind::kTool) continue;
      text_ += t.arguments;
      if (!t.arguments.empty() &&
          !delta({{"type", "input_json_delta"}, {"partial_json", t.arguments}}))
        return false;
    }
    return true;
  }
  bool finish() { return close(); }
  const ojson& content() const { return content_; }

 private:
  enum class Kind { kNone, kThinking, kText, kTool };
  int64_t index() const { return int64_t(content_.size()); }
  bool delta(ojson d) {
    return emit_("content_block_delta", {{"index", index()}, {"delta", std::move(d)}});
  }
  bool open(Kind k, ojson block) {
    if (!close()) return false;
    kind_ = k;
    text_.clear();
    block_ = std::move(block);
    return emit_("content_block_start", {{"index", index()}, {"content_block", block_}});
  }
  bool close() {
    if (kind_ == Kind::kNone) return true;
    if (kind_ == Kind::kThinking) {
      block_["thinking"] = text_;
    } else if (kind_ == Kind::kText) {
      block_["text"] = text_;
    } else {
      // Arguments cut by max_tokens are not an object: the input stays {} (the stop_reason
      // says max_tokens).
      ojson in = ojson::parse(text_, nullptr, false);
      if (!in.is_discarded() && in.is_object()) block_["input"] = std::move(in);
    }
    const bool ok = emit_("content_block_stop", {{"index", index()}});
    content_.push_back(std::move(block_));
    kind_ = Kind::kNone;
    return ok;
  }

  Emit emit_;
  Kind kind_ = Kind::kNone;
  ojson block_;
  std::string text_;
  ojson content_ = ojson::array();
};

ojson anthropic_error(const ApiError& e) {
  std::string type = e.type;
  if (e.status == 400) type = "invalid_request_error";
  if (e.status == 503) type = "overloaded_error";
  if (e.status >= 500 && e.status != 503) type = "api_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}};
}

std::string stop_reason(const ChatRun& run) {
  if (run.out.stop_string_hit()) return "stop_sequence";
  const std::string f = run.finish_reason();
  if (f == "length") return "max_tokens";
  if (f == "tool_calls") return "tool_use";
  return "end_turn";
}

}  // namespace

void send_anthropic_error(httplib::Response& res, const ApiError& e) {
  send_json(res, anthropic_error(e), e.status);
}

void handle_messages(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_anthropic_error(res, *e);
  ojson chat;
  if (auto e = messages_to_chat(body, &chat)) return send_anthropic_error(res, *e);
  bool stream = false;
  if (const ojson* s = field(body, "stream")) {
    if (!s->is_boolean()) return send_anthropic_error(res, type_error("stream", "a boolean"));
    stream = s->get<bool>();
  }
  ChatRequest cr;
  if (auto e = parse_chat_request(chat, &cr)) return send_anthropic_error(res, *e);
  httplib::Response start_res;
  auto runs = start_chat(ctx, cr, start_res);
  if (runs.empty()) {
    ApiError e;
    e.status = start_res.status;
    ojson err = ojson::parse(start_res.body, nullptr, false);
    if (!err.is_discarded() && err.contains("error") && err["error"]["message"].is_string())
      e.message = err["error"]["message"].get<std::string>();
    return send_anthropic_error(res, e);
  }
  std::shared_ptr<ChatRun> run = runs[0];
  const std::string id = make_request_id("msg_");
  // stop_sequence names the matched string only when there is one candidate (the output layer
  // does not say which of several matched).
  ojson one_stop = cr.gen.stop.size() == 1 ? ojson(cr.gen.stop[0]) : ojson(nullptr);
  auto message = [id, run](ojson content, ojson reason, ojson seq) {
    const ojson u = run->usage();
    return ojson{{"id", id},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", run->model},
                 {"content", std::move(content)},
                 {"stop_reason", std::move(reason)},
                 {"stop_sequence", std::move(seq)},
                 {"usage",
                  {{"input_tokens", u["prompt_tokens"]},
                   {"output_tokens", u["completion_tokens"]},
                   {"cache_read_input_tokens", u["prompt_tokens_details"]["cached_tokens"]},
                   {"cache_creation_input_tokens", 0}}}};
  };

  if (!stream) {
    BlockBuilder b([](const std::string&, ojson) { return true; });
    const bool alive = run->drive([&](const ChatDelta& d, const ojson&) { return b.push(d); });
    if (!alive) return client_gone(res);
    if (run->job->finish_reason == "error") return send_anthropic_error(res, job_error(*run->job));
    b.finish();
    const std::string reason = stop_reason(*run);
    return send_json(
        res, message(b.content(), reason, reason == "stop_sequence" ? one_stop : ojson(nullptr)));
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [run, message, one_stop](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& type, ojson payload) {
          ojson ev = {{"type", type}};
          for (auto& [k, v] : payload.items()) ev[k] = std::move(v);
          return sse_write(sink, "event: " + type + "\n" + sse_event(dump_json(ev)));
        };
        BlockBuilder b(write);
        ojson start = message(ojson::array(), nullptr, nullptr);
        start["usage"]["output_tokens"] = 0;
        bool alive = write("message_start", {{"message", start}}) &&
                     run->drive([&](const ChatDelta& d, const ojson&) { return b.push(d); });
        if (!alive) {
          run->job->cancel();
          return false;
        }
        if (run->job->finish_reason == "error") {
          write("error", anthropic_error(job_error(*run->job)));
        } else {
          if (!b.finish()) {
            run->job->cancel();
            return false;
          }
          const std::string reason = stop_reason(*run);
          write("message_delta",
                {{"delta",
                  {{"stop_reason", reason},
                   {"stop_sequence", reason == "stop_sequence" ? one_stop : ojson(nullptr)}}},
                 {"usage", {{"output_tokens", run->usage()["completion_tokens"]}}}});
          write("message_stop", ojson::object());
        }
        sink.done();
        return true;
      },
      [run](bool) { run->job->cancel(); });
}

}  // namespace inkling::server
