// POST /v1/responses: the request is translated to a chat request (responses_to_chat), started
// with start_chat() like /v1/chat/completions, and its deltas are turned into Responses output
// items by one state machine (ResponseBuilder) that both the streaming and the non-streaming
// answer use, so the two always agree.
#include "responses_api.h"

#include <functional>
#include <set>

#include "chat_run.h"
#include "context.h"
#include "sse.h"

namespace inkling::server {

namespace {

using Err = std::optional<ApiError>;

ApiError unsupported(const std::string& param, const std::string& why) {
  return bad_request(why, param, "unsupported_parameter");
}

// Message content: a string, or input_text / output_text / input_image parts -> chat parts.
Err convert_content(const ojson& c, const std::string& where, ojson* out) {
  if (c.is_string()) {
    *out = c;
    return std::nullopt;
  }
  if (!c.is_array()) return type_error(where, "a string or an array of content parts");
  *out = ojson::array();
  for (size_t j = 0; j < c.size(); ++j) {
    const ojson& p = c[j];
    const std::string pw = where + "[" + std::to_string(j) + "]";
    if (!p.is_object()) return type_error(pw, "an object");
    const ojson* t = field(p, "type");
    if (!t || !t->is_string()) return type_error(pw + ".type", "a string");
    const std::string type = t->get<std::string>();
    if (type == "input_text" || type == "output_text" || type == "text" || type == "summary_text" ||
        type == "reasoning_text") {
      const ojson* tx = field(p, "text");
      if (!tx || !tx->is_string()) return type_error(pw + ".text", "a string");
      out->push_back({{"type", "text"}, {"text", *tx}});
    } else if (type == "refusal") {
      const ojson* tx = field(p, "refusal");
      if (!tx || !tx->is_string()) return type_error(pw + ".refusal", "a string");
      out->push_back({{"type", "text"}, {"text", *tx}});
    } else if (type == "input_image") {
      if (field(p, "file_id"))
        return unsupported(pw + ".file_id",
                           "input_image.file_id is not supported (no file storage): send "
                           "image_url as a data: URL");
      const ojson* url = field(p, "image_url");
      if (!url || !url->is_string()) return type_error(pw + ".image_url", "a URL string");
      out->push_back({{"type", "image_url"}, {"image_url", {{"url", *url}}}});
    } else {
      return bad_request("content part type '" + type +
                             "' is not supported (send input_text or input_image parts)",
                         pw + ".type", "unsupported_content");
    }
  }
  return std::nullopt;
}

// The plain text of a content value (reasoning items, function_call_output.output).
Err content_text(const ojson& c, const std::string& where, std::string* out) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return std::nullopt;
  }
  ojson parts;
  if (Err e = convert_content(c, where, &parts)) return e;
  for (const auto& p : parts) {
    if (p["type"] != "text") return type_error(where, "text (no images here)");
    *out += p["text"].get<std::string>();
  }
  return std::nullopt;
}

Err convert_input(const ojson& input, ojson* messages) {
  if (input.is_string()) {
    messages->push_back({{"role", "user"}, {"content", input}});
    return std::nullopt;
  }
  if (!input.is_array()) return type_error("input", "a string or an array of input items");
  std::string pending_reasoning;  // a reasoning item, carried to the next assistant turn
  auto assistant = [&]() -> ojson& {
    if (messages->empty() || (*messages)[messages->size() - 1]["role"] != "assistant" ||
        !pending_reasoning.empty()) {
      ojson m = {{"role", "assistant"}, {"content", ""}};
      if (!pending_reasoning.empty()) m["reasoning_content"] = pending_reasoning;
      pending_reasoning.clear();
      messages->push_back(std::move(m));
    }
    return (*messages)[messages->size() - 1];
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const ojson& it = input[i];
    const std::string w = "input[" + std::to_string(i) + "]";
    if (!it.is_object()) return type_error(w, "an object");
    const ojson* t = field(it, "type");
    if (t && !t->is_string()) return type_error(w + ".type", "a string");
    const std::string type = t ? t->get<std::string>() : "message";
    if (type == "message") {
      std::string role;
      if (Err e = get_string(it, "role", w, &role)) return e;
      static const std::set<std::string> kRoles = {"user", "system", "developer", "assistant"};
      if (!kRoles.count(role))
        return bad_request("unknown role '" + role + "' in " + w +
                               ": expected one of user, system, developer, assistant",
                           w + ".role", "invalid_role");
      const ojson* c = field(it, "content");
      if (!c) return bad_request(w + ".content is required", w + ".content", "missing_field");
      ojson content;
      if (Err e = convert_content(*c, w + ".content", &content)) return e;
      if (role == "assistant") {
        std::string text;
        if (Err e = content_text(content, w + ".content", &text)) return e;
        ojson& m = assistant();
        m["content"] = m["content"].get<std::string>() + text;
      } else {
        messages->push_back({{"role", role}, {"content", std::move(content)}});
      }
    } else if (type == "function_call") {
      std::string call_id, name, args;
      if (Err e = get_string(it, "call_id", w, &call_id)) return e;
      if (Err e = get_string(it, "name", w, &name)) return e;
      if (Err e = get_string(it, "arguments", w, &args)) return e;
      ojson& m = assistant();
      if (!m.contains("tool_calls")) m["tool_calls"] = ojson::array();
      m["tool_calls"].push_back({{"id", call_id},
                                 {"type", "function"},
                                 {"function", {{"name", name}, {"arguments", args}}}});
    } else if (type == "function_call_output") {
      std::string call_id, text;
      if (Err e = get_string(it, "call_id", w, &call_id)) return e;
      const ojson* o = field(it, "output");
      if (!o) return bad_request(w + ".output is required", w + ".output", "missing_field");
      if (Err e = content_text(*o, w + ".output", &text)) return e;
      messages->push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", text}});
    } else if (type == "reasoning") {
      // Earlier reasoning sent back by the client: its text (content, else summary) goes to
      // the next assistant turn, where the template renders (or drops) it like chat's
      // reasoning_content.
      std::string text;
      const ojson* c = field(it, "content");
      if (!c || (c->is_array() && c->empty())) c = field(it, "summary");
      if (c)
        if (Err e = content_text(*c, w + ".content", &text)) return e;
      pending_reasoning += text;
    } else {
      return bad_request("input item type '" + type +
                             "' is not supported (send message, function_call, "
                             "function_call_output or reasoning items; this server is stateless, "
                             "so item_reference cannot be resolved)",
                         w + ".type", "unsupported_input_item");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> responses_to_chat(const ojson& body, ojson* chat) {
  *chat = ojson::object();
  if (const ojson* s = field(body, "store")) {
    if (!s->is_boolean()) return type_error("store", "a boolean");
    if (s->get<bool>())
      return unsupported("store",
                         "'store': true is not supported: this server is stateless and keeps no "
                         "responses (send store: false, or leave it out)");
  }
  if (field(body, "previous_response_id"))
    return unsupported("previous_response_id",
                       "previous_response_id is not supported: this server is stateless; send "
                       "the whole conversation as 'input' items");
  if (field(body, "conversation"))
    return unsupported("conversation",
                       "'conversation' is not supported: this server is stateless; send the whole "
                       "conversation as 'input' items");
  if (const ojson* b = field(body, "background"); b && !(b->is_boolean() && !b->get<bool>()))
    return unsupported("background", "background responses are not supported");
  if (field(body, "prompt"))
    return unsupported("prompt", "stored prompt templates ('prompt') are not supported");
  ojson messages = ojson::array();
  if (const ojson* ins = field(body, "instructions")) {
    if (!ins->is_string()) return type_error("instructions", "a string");
    messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  const ojson* input = field(body, "input");
  if (!input) return bad_request("'input' is required", "input", "missing_field");
  if (Err e = convert_input(*input, &messages)) return e;
  if (messages.empty()) return bad_request("'input' must not be empty", "input");
  (*chat)["messages"] = std::move(messages);

  if (const ojson* r = field(body, "reasoning")) {
    if (!r->is_object()) return type_error("reasoning", "an object");
    if (const ojson* eff = field(*r, "effort")) {
      if (!eff->is_string()) return type_error("reasoning.effort", "a string");
      (*chat)["reasoning_effort"] = *eff;
    }
    if (const ojson* s = field(*r, "summary"); s && !s->is_string())
      return type_error("reasoning.summary", "a string (auto, concise or detailed)");
  }
  if (const ojson* tools = field(body, "tools")) {
    if (!tools->is_array()) return type_error("tools", "an array");
    ojson out = ojson::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const ojson& t = (*tools)[i];
      const std::string w = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return type_error(w, "an object");
      const ojson* type = field(t, "type");
      if (!type || *type != "function")
        return bad_request(w + ": only function tools are supported (built-in tools such as "
                               "web_search or file_search are not)",
                           w + ".type", "unsupported_tool");
      ojson fn = ojson::object();
      for (const char* k : {"name", "description", "parameters", "strict"})
        if (const ojson* v = field(t, k)) fn[k] = *v;
      if (!fn.contains("name")) return type_error(w + ".name", "a string");
      out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    (*chat)["tools"] = std::move(out);
  }
  if (const ojson* tc = field(body, "tool_choice")) {
    if (tc->is_string()) {
      (*chat)["tool_choice"] = *tc;
    } else if (tc->is_object()) {
      const ojson* type = field(*tc, "type");
      const ojson* name = field(*tc, "name");
      if (!type || *type != "function" || !name || !name->is_string())
        return type_error("tool_choice",
                          "'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}");
      (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
    } else {
      return type_error("tool_choice", "a string or an object");
    }
  }
  if (const ojson* t = field(body, "text")) {
    if (!t->is_object()) return type_error("text", "an object");
    if (const ojson* f = field(*t, "format")) {
      if (!f->is_object()) return type_error("text.format", "an object");
      const ojson* type = field(*f, "type");
      if (!type || !type->is_string())
        return type_error("text.format.type", "'text', 'json_object' or 'json_schema'");
      if (*type == "json_schema") {
        ojson js = ojson::object();
        for (const char* k : {"name", "schema", "strict", "description"})
          if (const ojson* v = field(*f, k)) js[k] = *v;
        (*chat)["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
      } else if (*type == "json_object" || *type == "text") {
        (*chat)["response_format"] = {{"type", *type}};
      } else {
        return bad_request("text.format.type must be 'text', 'json_object' or 'json_schema'",
                           "text.format.type", "invalid_value");
      }
    }
  }
  if (const ojson* m = field(body, "max_output_tokens")) (*chat)["max_completion_tokens"] = *m;
  // Fields with the same meaning in both APIs (seed, stop, ignore_eos, ...: extensions here).
  for (const char* k :
       {"model", "temperature", "top_p", "parallel_tool_calls", "seed", "stop", "top_k", "min_p",
        "presence_penalty", "frequency_penalty", "repetition_penalty", "ignore_eos"})
    if (const ojson* v = field(body, k)) (*chat)[k] = *v;
  return std::nullopt;
}

namespace {

// Chat deltas -> Responses output items and events. emit(type, payload) gets each event (the
// payload without "type" / "sequence_number", which the writer adds).
class ResponseBuilder {
 public:
  using Emit = std::function<bool(const std::string&, ojson)>;
  ResponseBuilder(Emit emit, bool summary) : emit_(std::move(emit)), summary_(summary) {}

  bool push(const ChatDelta& d) {
    if (!d.reasoning.empty()) {
      if (kind_ != Kind::kReasoning && !open(Kind::kReasoning, "rs_")) return false;
      text_ += d.reasoning;
      if (!emit("response.reasoning_text.delta", {{"item_id", item_["id"]},
                                                  {"output_index", index()},
                                                  {"content_index", 0},
                                                  {"delta", d.reasoning}}))
        return false;
    }
    if (!d.content.empty()) {
      if (kind_ != Kind::kMessage && !open(Kind::kMessage, "msg_")) return false;
      text_ += d.content;
      if (!emit("response.output_text.delta", {{"item_id", item_["id"]},
                                               {"output_index", index()},
                                               {"content_index", 0},
                                               {"delta", d.content},
                                               {"logprobs", ojson::array()}}))
        return false;
    }
    for (const auto& t : d.tool_calls) {
      if (!t.id.empty()) {
        if (!open(Kind::kCall, "fc_")) return false;
        item_["call_id"] = t.id;
        item_["name"] = t.name;
      }
      if (kind_ != Kind::kCall) continue;  // cannot happen: a call's first delta carries its id
      if (!t.id.empty()) {
        ojson added = item_;
        added["arguments"] = "";
        if (!emit("response.output_item.added",
                  {{"output_index", index()}, {"item", std::move(added)}}))
          return false;
      }
      text_ += t.arguments;
      if (!t.arguments.empty() &&
          !emit("response.function_call_arguments.delta",
                {{"item_id", item_["id"]}, {"output_index", index()}, {"delta", t.arguments}}))
        return false;
    }
    return true;
  }

  // Closes the open item; `complete` false marks it incomplete (the token limit cut it).
  bool finish(bool complete) { return close(complete ? "completed" : "incomplete"); }
  const ojson& output() const { return output_; }

 private:
  enum class Kind { kNone, kReasoning, kMessage, kCall };

  int64_t index() const { return int64_t(output_.size()); }
  bool emit(const std::string& type, ojson payload) { return emit_(type, std::move(payload)); }

  bool open(Kind k, const char* prefix) {
    if (!close("completed")) return false;
    kind_ = k;
    text_.clear();
    item_ = {{"id", make_request_id(prefix)}};
    if (k == Kind::kReasoning) {
      item_["type"] = "reasoning";
      item_["summary"] = ojson::array();
      item_["content"] = ojson::array();
    } else if (k == Kind::kMessage) {
      item_["type"] = "message";
      item_["role"] = "assistant";
      item_["content"] = ojson::array();
    } else {
      item_["type"] = "function_call";
      item_["call_id"] = "";
      item_["name"] = "";
      item_["arguments"] = "";
    }
    item_["status"] = "in_progress";
    if (k == Kind::kCall) return true;  // announced once call_id and name are known
    if (!emit("response.output_item.added", {{"output_index", index()}, {"item", item_}}))
      return false;
    if (k == Kind::kMessage)
      return emit("response.content_part.added", {{"item_id", item_["id"]},
                                                  {"output_index", index()},
                                                  {"content_index", 0},
                                                  {"part", output_text_part("")}});
    return true;
  }

  static ojson output_text_part(const std::string& text) {
    return {{"type", "output_text"},
            {"text", text},
            {"annotations", ojson::array()},
            {"logprobs", ojson::array()}};
  }

  bool close(const char* status) {
    if (kind_ == Kind::kNone) return true;
    const ojson id = item_["id"];
    const int64_t oi = index();
    bool ok = true;
    if (kind_ == Kind::kReasoning) {
      item_["content"] = ojson::array({{{"type", "reasoning_text"}, {"text", text_}}});
      ok = emit("response.reasoning_text.done",
                {{"item_id", id}, {"output_index", oi}, {"content_index", 0}, {"text", text_}});
      if (ok && summary_) {
        // No separate summariser: the summary is the reasoning text itself.
        const ojson part = {{"type", "summary_text"}, {"text", text_}};
        item_["summary"] = ojson::array({part});
        ok =
            emit("response.reasoning_summary_part.added",
                 {{"item_id", id},
                  {"output_index", oi},
                  {"summary_index", 0},
                  {"part", {{"type", "summary_text"}, {"text", ""}}}}) &&
            emit("response.reasoning_summary_text.delta",
                 {{"item_id", id}, {"output_index", oi}, {"summary_index", 0}, {"delta", text_}}) &&
            emit("response.reasoning_summary_text.done",
                 {{"item_id", id}, {"output_index", oi}, {"summary_index", 0}, {"text", text_}}) &&
            emit("response.reasoning_summary_part.done",
                 {{"item_id", id}, {"output_index", oi}, {"summary_index", 0}, {"part", part}});
      }
    } else if (kind_ == Kind::kMessage) {
      const ojson part = output_text_part(text_);
      item_["content"] = ojson::array({part});
      ok = emit("response.output_text.done", {{"item_id", id},
                                              {"output_index", oi},
                                              {"content_index", 0},
                                              {"text", text_},
                                              {"logprobs", ojson::array()}}) &&
           emit("response.content_part.done",
                {{"item_id", id}, {"output_index", oi}, {"content_index", 0}, {"part", part}});
    } else {
      item_["arguments"] = text_;
      ok = emit(
          "response.function_call_arguments.done",
          {{"item_id", id}, {"output_index", oi}, {"name", item_["name"]}, {"arguments", text_}});
    }
    item_["status"] = status;
    ok = ok && emit("response.output_item.done", {{"output_index", oi}, {"item", item_}});
    output_.push_back(std::move(item_));
    kind_ = Kind::kNone;
    return ok;
  }

  Emit emit_;
  bool summary_;
  Kind kind_ = Kind::kNone;
  ojson item_;
  std::string text_;
  ojson output_ = ojson::array();
};

// The response object around the output (status, echoed request settings, usage).
struct ResponseShell {
  std::string id = make_request_id("resp_");
  int64_t created = now_s();
  ojson echo;  // request settings echoed back

  ojson make(const char* status, ojson output, ojson usage, ojson incomplete = nullptr,
             ojson error = nullptr) const {
    ojson r = {{"id", id},
               {"object", "response"},
               {"created_at", created},
               {"status", status},
               {"error", std::move(error)},
               {"incomplete_details", std::move(incomplete)}};
    for (auto& [k, v] : echo.items()) r[k] = v;
    r["output"] = std::move(output);
    r["usage"] = std::move(usage);
    return r;
  }
};

ojson echo_settings(const ojson& body, const ChatRequest& cr, const std::string& model) {
  auto get = [&](const char* k, ojson dflt) {
    const ojson* v = field(body, k);
    return v ? *v : dflt;
  };
  ojson e = ojson::object();
  e["instructions"] = get("instructions", nullptr);
  e["max_output_tokens"] = get("max_output_tokens", nullptr);
  e["model"] = model;
  e["parallel_tool_calls"] = cr.parallel_tool_calls;
  e["previous_response_id"] = nullptr;
  ojson reasoning = {{"effort", nullptr}, {"summary", nullptr}};
  if (const ojson* r = field(body, "reasoning"))
    for (const char* k : {"effort", "summary"})
      if (const ojson* v = field(*r, k)) reasoning[k] = *v;
  e["reasoning"] = reasoning;
  e["store"] = false;
  e["temperature"] = double(cr.gen.sampling.temperature);
  e["text"] = get("text", ojson{{"format", {{"type", "text"}}}});
  e["tool_choice"] = get("tool_choice", "auto");
  e["tools"] = get("tools", ojson::array());
  e["top_p"] = double(cr.gen.sampling.top_p);
  e["truncation"] = "disabled";
  e["metadata"] = get("metadata", ojson::object());
  return e;
}

ojson responses_usage(const ChatRun& run) {
  const ojson u = run.usage();
  return {
      {"input_tokens", u["prompt_tokens"]},
      {"input_tokens_details", {{"cached_tokens", u["prompt_tokens_details"]["cached_tokens"]}}},
      {"output_tokens", u["completion_tokens"]},
      {"output_tokens_details",
       {{"reasoning_tokens", u["completion_tokens_details"]["reasoning_tokens"]}}},
      {"total_tokens", u["total_tokens"]}};
}

// A chat field named in an error -> the Responses field it came from.
ApiError responses_param(ApiError e) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"max_completion_tokens", "max_output_tokens"},
      {"max_tokens", "max_output_tokens"},
      {"response_format", "text.format"},
      {"reasoning_effort", "reasoning.effort"}};
  // Message indices differ from input indices (instructions, merged items): name the field only.
  if (e.param.rfind("messages", 0) == 0) e.param = "input";
  for (auto [from, to] : kMap)
    if (e.param.rfind(from, 0) == 0) {
      e.param = to + e.param.substr(std::string(from).size());
      break;
    }
  return e;
}

}  // namespace

void handle_responses(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_error(res, *e);
  ojson chat;
  if (auto e = responses_to_chat(body, &chat)) return send_error(res, *e);
  bool stream = false;
  if (const ojson* s = field(body, "stream")) {
    if (!s->is_boolean()) return send_error(res, type_error("stream", "a boolean"));
    stream = s->get<bool>();
  }
  ChatRequest cr;
  if (auto e = parse_chat_request(chat, &cr)) return send_error(res, responses_param(*e));
  bool summary = false;
  if (const ojson* r = field(body, "reasoning")) summary = field(*r, "summary") != nullptr;
  httplib::Response start_res;
  auto runs = start_chat(ctx, cr, start_res);
  if (runs.empty()) {
    // The error names a chat field; say it in Responses terms.
    ojson err = ojson::parse(start_res.body, nullptr, false);
    if (!err.is_discarded() && err.contains("error") && err["error"]["param"].is_string()) {
      ApiError e;
      e.param = err["error"]["param"].get<std::string>();
      e = responses_param(e);
      err["error"]["param"] = e.param;
    }
    res.status = start_res.status;
    res.set_content(dump_json(err), "application/json");
    return;
  }
  std::shared_ptr<ChatRun> run = runs[0];
  auto shell = std::make_shared<ResponseShell>();
  shell->echo = echo_settings(body, cr, run->model);
  auto incomplete = [run]() -> ojson {
    if (run->finish_reason() == "length") return {{"reason", "max_output_tokens"}};
    return nullptr;
  };

  if (!stream) {
    ResponseBuilder b([](const std::string&, ojson) { return true; }, summary);
    const bool alive = run->drive([&](const ChatDelta& d, const ojson&) { return b.push(d); });
    if (!alive) return client_gone(res);
    if (run->job->finish_reason == "error") return send_error(res, job_error(*run->job));
    const ojson inc = incomplete();
    b.finish(inc.is_null());
    return send_json(res, shell->make(inc.is_null() ? "completed" : "incomplete", b.output(),
                                      responses_usage(*run), inc));
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [run, shell, summary, incomplete](size_t, httplib::DataSink& sink) {
        int64_t seq = 0;
        auto write = [&](const std::string& type, ojson payload) {
          ojson ev = {{"type", type}, {"sequence_number", seq++}};
          for (auto& [k, v] : payload.items()) ev[k] = std::move(v);
          return sse_write(sink, "event: " + type + "\n" + sse_event(dump_json(ev)));
        };
        ResponseBuilder b(write, summary);
        const ojson start = shell->make("in_progress", ojson::array(), nullptr);
        bool alive = write("response.created", {{"response", start}}) &&
                     write("response.in_progress", {{"response", start}}) &&
                     run->drive([&](const ChatDelta& d, const ojson&) { return b.push(d); });
        if (!alive) {
          run->job->cancel();
          return false;
        }
        if (run->job->finish_reason == "error") {
          const ApiError e = job_error(*run->job);
          const ojson err = {{"code", e.code.empty() ? "server_error" : e.code},
                             {"message", e.message}};
          write("error", {{"code", err["code"]}, {"message", e.message}, {"param", nullptr}});
          write("response.failed",
                {{"response", shell->make("failed", b.output(), nullptr, nullptr, err)}});
        } else {
          const ojson inc = incomplete();
          if (!b.finish(inc.is_null())) {
            run->job->cancel();
            return false;
          }
          const bool done = inc.is_null();
          write(done ? "response.completed" : "response.incomplete",
                {{"response", shell->make(done ? "completed" : "incomplete", b.output(),
                                          responses_usage(*run), inc)}});
        }
        sink.done();
        return true;
      },
      [run](bool) { run->job->cancel(); });
}

}  // namespace inkling::server
