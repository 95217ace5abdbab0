// Validation of OpenAI request bodies into typed requests (see api_types.h). Every check names
// the offending field as OpenAI does in `param` (e.g. "messages[2].role").
#include "api_types.h"

#include <cmath>
#include <limits>
#include <regex>
#include <set>

namespace inkling::server {

ojson error_body(const ApiError& e) {
  ojson err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? ojson(nullptr) : ojson(e.param);
  err["code"] = e.code.empty() ? ojson(nullptr) : ojson(e.code);
  return ojson{{"error", err}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError type_error(const std::string& param, const std::string& what) {
  return bad_request("'" + param + "' must be " + what, param, "invalid_type");
}

const ojson* field(const ojson& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> get_string(const ojson& o, const char* key, const std::string& where,
                                   std::string* out) {
  const ojson* v = field(o, key);
  if (!v || !v->is_string()) return type_error(where + "." + key, "a string");
  *out = v->get<std::string>();
  return std::nullopt;
}

namespace {

using Err = std::optional<ApiError>;

Err get_number(const ojson& o, const char* key, double lo, double hi, float* out) {
  const ojson* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return type_error(key, "a number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return bad_request("'" + std::string(key) + "' must be in [" + ojson(lo).dump() + ", " +
                           ojson(hi).dump() + "], got " + v->dump(),
                       key, "invalid_value");
  *out = float(d);
  return std::nullopt;
}

Err get_int(const ojson& o, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  const ojson* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() &&
      !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
    return type_error(key, "an integer");
  const double d = v->get<double>();
  if (d < double(lo) || d > double(hi))
    return bad_request("'" + std::string(key) + "' must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + v->dump(),
                       key, "invalid_value");
  *out = v->is_number_integer() ? v->get<int64_t>() : int64_t(d);
  return std::nullopt;
}

Err get_bool(const ojson& o, const char* key, bool* out) {
  const ojson* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return type_error(key, "a boolean");
  *out = v->get<bool>();
  return std::nullopt;
}

// Fields shared by chat and completions.
Err parse_generation(const ojson& b, bool chat, int64_t vocab, GenerationRequest* g) {
  if (const ojson* m = field(b, "model")) {
    if (!m->is_string()) return type_error("model", "a string");
    g->model = m->get<std::string>();
  }
  if (Err e = get_number(b, "temperature", 0.0, 100.0, &g->sampling.temperature)) return e;
  if (Err e = get_number(b, "top_p", 0.0, 1.0, &g->sampling.top_p)) return e;
  if (const ojson* tp = field(b, "top_p")) {
    if (tp->get<double>() <= 0.0)
      return bad_request("'top_p' must be in (0, 1]", "top_p", "invalid_value");
    // A positive value below float's range (5e-324) keeps only the most likely token, as any
    // tiny top_p does.
    g->sampling.top_p = std::max(g->sampling.top_p, std::numeric_limits<float>::min());
  }
  int64_t top_k = 0;
  if (Err e = get_int(b, "top_k", -1, 1 << 30, &top_k)) return e;
  g->sampling.top_k = top_k < 0 ? 0 : int(top_k);
  if (Err e = get_number(b, "min_p", 0.0, 1.0, &g->sampling.min_p)) return e;
  if (Err e = get_number(b, "presence_penalty", -2.0, 2.0, &g->presence_penalty)) return e;
  if (Err e = get_number(b, "frequency_penalty", -2.0, 2.0, &g->frequency_penalty)) return e;
  if (Err e = get_number(b, "repetition_penalty", 0.01, 10.0, &g->repetition_penalty)) return e;
  if (const ojson* s = field(b, "seed")) {
    if (!s->is_number_integer()) return type_error("seed", "an integer");
    g->sampling.seed = s->is_number_unsigned() ? s->get<uint64_t>() : uint64_t(s->get<int64_t>());
    g->seed_given = true;
  }
  int64_t n = 1;
  if (Err e = get_int(b, "n", 1, kMaxChoices, &n)) return e;
  g->n = int(n);
  // max_completion_tokens (newer chat name) wins over max_tokens.
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (Err e = get_int(b, key, 1, int64_t(1) << 40, &g->max_tokens)) return e;
  if (const ojson* s = field(b, "stop")) {
    if (s->is_string()) {
      g->stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (size_t i = 0; i < s->size(); ++i) {
        if (!(*s)[i].is_string()) return type_error("stop[" + std::to_string(i) + "]", "a string");
        g->stop.push_back((*s)[i].get<std::string>());
      }
    } else {
      return type_error("stop", "a string or an array of strings");
    }
    if (g->stop.size() > 16) return bad_request("'stop' takes at most 16 strings", "stop");
    for (const auto& st : g->stop)
      if (st.empty()) return bad_request("'stop' strings must not be empty", "stop");
  }
  if (const ojson* lb = field(b, "logit_bias")) {
    if (!lb->is_object()) return type_error("logit_bias", "an object of token id -> bias");
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      char* end = nullptr;
      const long long id = std::strtoll(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end || id < 0 || id >= vocab)
        return bad_request("logit_bias: '" + it.key() + "' is not a token id", "logit_bias");
      if (!it.value().is_number() || std::abs(it.value().get<double>()) > 100.0)
        return bad_request("logit_bias values must be numbers in [-100, 100]", "logit_bias");
      g->logit_bias.emplace_back(int32_t(id), it.value().get<float>());
    }
  }
  // Chat: logprobs is a bool + top_logprobs; completions: logprobs is the top count.
  if (chat) {
    if (Err e = get_bool(b, "logprobs", &g->logprobs)) return e;
    int64_t top = 0;
    if (Err e = get_int(b, "top_logprobs", 0, 20, &top)) return e;
    if (field(b, "top_logprobs") && !g->logprobs && top > 0)
      return bad_request("'top_logprobs' requires 'logprobs': true", "top_logprobs");
    g->top_logprobs = int(top);
  } else if (field(b, "logprobs")) {
    int64_t top = 0;
    if (Err e = get_int(b, "logprobs", 0, 20, &top)) return e;
    g->logprobs = true;
    g->top_logprobs = int(top);
  }
  if (Err e = get_bool(b, "stream", &g->stream)) return e;
  if (const ojson* so = field(b, "stream_options")) {
    if (!so->is_object()) return type_error("stream_options", "an object");
    if (Err e = get_bool(*so, "include_usage", &g->include_usage)) return e;
  }
  if (Err e = get_bool(b, "ignore_eos", &g->ignore_eos)) return e;
  if (const ojson* rf = field(b, "response_format")) {
    const ojson* t = rf->is_object() ? field(*rf, "type") : nullptr;
    if (!t || !t->is_string()) return type_error("response_format", "an object with a 'type'");
    const std::string type = t->get<std::string>();
    if (type == "json_object") {
      g->response_format = ResponseFormat::kJsonObject;
    } else if (type == "json_schema") {
      const ojson* js = field(*rf, "json_schema");
      if (!js || !js->is_object())
        return type_error("response_format.json_schema", "an object with a 'schema'");
      const ojson* schema = field(*js, "schema");
      if (!schema || (!schema->is_object() && !schema->is_boolean()))
        return type_error("response_format.json_schema.schema", "a JSON Schema object");
      if (Err e = get_bool(*js, "strict", &g->schema_strict)) return e;
      g->response_format = ResponseFormat::kJsonSchema;
      g->json_schema = *schema;
    } else if (type != "text") {
      return bad_request("response_format type '" + type +
                             "' is not supported: use 'text', 'json_object' or 'json_schema'",
                         "response_format", "unsupported_value");
    }
  }
  if (const ojson* gr = field(b, "grammar")) {
    if (!gr->is_string()) return type_error("grammar", "a string (docs/grammar.md)");
    g->grammar = gr->get<std::string>();
    if (g->response_format != ResponseFormat::kText)
      return bad_request("'grammar' and a JSON 'response_format' cannot be combined", "grammar");
  }
  if (field(b, "suffix")) return bad_request("'suffix' is not supported", "suffix");
  if (field(b, "best_of")) {
    int64_t best_of = 1;
    if (Err e = get_int(b, "best_of", 1, 1, &best_of)) return e;
  }
  return std::nullopt;
}

bool valid_tool_name(const std::string& s) {
  static const std::regex re("^[A-Za-z0-9_.\\-]{1,64}$");
  return std::regex_match(s, re);
}

// An image/audio part's source: a string, or an object with one of `keys` holding a string.
const ojson* media_source(const ojson& part, const char* obj_key,
                          std::initializer_list<const char*> keys) {
  if (const ojson* o = field(part, obj_key)) {
    if (o->is_string()) return o;
    if (o->is_object())
      for (const char* k : keys)
        if (const ojson* v = field(*o, k); v && v->is_string()) return v;
    return nullptr;
  }
  for (const char* k : keys)
    if (const ojson* v = field(part, k); v && v->is_string()) return v;
  return nullptr;
}

Err check_media_part(const ojson& part, const std::string& type, const std::string& pw,
                     std::vector<MediaPart>* media) {
  MediaPart mp;
  mp.param = pw;
  if (type == "input_audio") {
    const ojson* ia = field(part, "input_audio");
    const ojson* data = ia && ia->is_object() ? field(*ia, "data") : nullptr;
    if (!data || !data->is_string())
      return type_error(pw + ".input_audio", "{\"data\": base64 WAV, \"format\": \"wav\"}");
    const ojson* fmt = field(*ia, "format");
    if (fmt && (!fmt->is_string() || fmt->get<std::string>() != "wav"))
      return bad_request("input_audio.format must be \"wav\" (16 kHz WAV)",
                         pw + ".input_audio.format", "unsupported_audio_format");
    mp.image = false;
    mp.data = data->get<std::string>();
    media->push_back(std::move(mp));
    return std::nullopt;
  }
  mp.image = type == "image" || type == "image_url" || type == "input_image";
  const ojson* src = mp.image ? media_source(part, "image_url", {"url", "image", "path"})
                              : media_source(part, "audio_url", {"url", "audio", "path"});
  if (!src)
    return type_error(pw + (mp.image ? ".image_url" : ".audio_url"),
                      "a URL string or {\"url\": ...}");
  mp.url = src->get<std::string>();
  media->push_back(std::move(mp));
  return std::nullopt;
}

Err check_content(const ojson& m, const std::string& where, std::vector<MediaPart>* media) {
  const ojson* c = field(m, "content");
  if (!c || c->is_string()) return std::nullopt;
  if (!c->is_array()) return type_error(where + ".content", "a string, an array of parts or null");
  for (size_t j = 0; j < c->size(); ++j) {
    const ojson& part = (*c)[j];
    const std::string pw = where + ".content[" + std::to_string(j) + "]";
    if (part.is_string()) continue;
    if (!part.is_object()) return type_error(pw, "a string or an object");
    const ojson* t = field(part, "type");
    const std::string type = t && t->is_string() ? t->get<std::string>() : "text";
    if (type == "text" || type == "input_text") {
      const ojson* tx = field(part, "text");
      if (tx && !tx->is_string()) return type_error(pw + ".text", "a string");
      continue;
    }
    static const std::set<std::string> kMedia = {"image",       "image_url", "input_image",
                                                 "input_audio", "audio",     "audio_url"};
    if (kMedia.count(type)) {
      if (Err e = check_media_part(part, type, pw, media)) return e;
      continue;
    }
    return bad_request("content part type '" + type +
                           "' is not supported (send text, image_url or input_audio parts)",
                       pw + ".type", "unsupported_content");
  }
  return std::nullopt;
}

Err check_tool_calls(ojson* m, const std::string& where) {
  ojson* tc = nullptr;
  if (auto it = m->find("tool_calls"); it != m->end() && !it->is_null()) tc = &*it;
  if (!tc) return std::nullopt;
  if (!tc->is_array()) return type_error(where + ".tool_calls", "an array");
  for (size_t j = 0; j < tc->size(); ++j) {
    ojson& call = (*tc)[j];
    const std::string cw = where + ".tool_calls[" + std::to_string(j) + "]";
    if (!call.is_object()) return type_error(cw, "an object");
    if (const ojson* id = field(call, "id"); id && !id->is_string())
      return type_error(cw + ".id", "a string");
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) return type_error(cw + ".function", "an object");
    const ojson* name = field(*fn, "name");
    if (!name || !name->is_string()) return type_error(cw + ".function.name", "a string");
    auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null()) continue;
    if (args->is_string()) {
      const std::string text = args->get<std::string>();
      if (text.find_first_not_of(" \t\r\n") == std::string::npos) continue;
      if (Status st = check_json_depth(text, cw + ".function.arguments"); !st.ok())
        return bad_request(st.message(), cw + ".function.arguments", "invalid_tool_call");
      ojson parsed = ojson::parse(text, nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object())
        return bad_request(cw + ".function.arguments must be a JSON object (as a string), got: " +
                               text.substr(0, 200),
                           cw + ".function.arguments", "invalid_tool_call");
    } else if (!args->is_object()) {
      return type_error(cw + ".function.arguments", "a JSON object string");
    }
  }
  return std::nullopt;
}

Err check_tools(const ojson& tools, std::set<std::string>* names) {
  if (!tools.is_array()) return type_error("tools", "an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string w = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return type_error(w, "an object");
    if (const ojson* ty = field(t, "type"); ty && *ty != "function")
      return bad_request(w + ".type must be 'function'", w + ".type", "invalid_tool");
    const ojson* fn = field(t, "function");
    if (!fn || !fn->is_object()) return type_error(w + ".function", "an object");
    const ojson* name = field(*fn, "name");
    if (!name || !name->is_string()) return type_error(w + ".function.name", "a string");
    if (!valid_tool_name(name->get<std::string>()))
      return bad_request(w + ".function.name must match ^[A-Za-z0-9_.-]{1,64}$",
                         w + ".function.name", "invalid_tool");
    if (const ojson* d = field(*fn, "description"); d && !d->is_string())
      return type_error(w + ".function.description", "a string");
    if (const ojson* p = field(*fn, "parameters"); p && !p->is_object())
      return type_error(w + ".function.parameters", "a JSON Schema object");
    names->insert(name->get<std::string>());
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_json_body(const std::string& body, ojson* out) {
  // The parser callback keeps the key path and the nesting depth as it goes, so an error can
  // name the field it happened in (a number like 1e400 that overflows a double is one), and a
  // deeply nested body is refused before anything walks it recursively.
  std::vector<std::string> path;
  struct TooDeep {};
  auto where = [&path] {
    std::string w;
    for (const auto& k : path)
      if (!k.empty()) w += (w.empty() ? "" : ".") + k;
    return w;
  };
  auto cb = [&](int depth, nlohmann::json::parse_event_t ev, ojson& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start || ev == E::array_start) {
      if (size_t(depth) + 1 > kMaxJsonDepth) throw TooDeep{};
      path.resize(size_t(depth) + 1);
    } else if (ev == E::key) {
      path.resize(size_t(depth));
      if (depth > 0) path[size_t(depth) - 1] = parsed.is_string() ? parsed.get<std::string>() : "";
    } else if (ev == E::object_end || ev == E::array_end) {
      path.resize(size_t(depth));
    }
    return true;
  };
  try {
    *out = ojson::parse(body, cb);
  } catch (const TooDeep&) {
    return bad_request("request body nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels" + (where().empty() ? "" : " (in '" + where() + "')"),
                       where(), "too_deep");
  } catch (const nlohmann::json::out_of_range&) {
    // nlohmann reports a number that overflows a double as out_of_range (406).
    const std::string w = where();
    return bad_request("invalid number in " + (w.empty() ? "the request body" : "'" + w + "'") +
                           ": it does not fit a 64-bit float",
                       w, "invalid_value");
  } catch (const nlohmann::json::exception& e) {
    return bad_request("invalid JSON body: " + std::string(e.what()), where(), "invalid_json");
  }
  if (!out->is_object()) return bad_request("the request body must be a JSON object");
  return std::nullopt;
}

std::optional<ApiError> parse_chat_request(const ojson& body, ChatRequest* out) {
  if (Err e = parse_generation(body, true, int64_t(1) << 31, &out->gen)) return e;
  const ojson* msgs = field(body, "messages");
  if (!msgs) return bad_request("'messages' is required", "messages", "missing_field");
  if (!msgs->is_array() || msgs->empty())
    return type_error("messages", "a non-empty array of messages");
  ojson messages = *msgs;
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < messages.size(); ++i) {
    ojson& m = messages[i];
    const std::string w = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return type_error(w, "an object");
    const ojson* role = field(m, "role");
    if (!role || !role->is_string()) return type_error(w + ".role", "a string");
    const std::string r = role->get<std::string>();
    if (!kRoles.count(r))
      return bad_request("unknown role '" + r + "' in " + w +
                             ": expected one of system, developer, user, assistant, tool",
                         w + ".role", "invalid_role");
    // OpenAI's newer name for the system role; the template knows only "system".
    if (r == "developer") m["role"] = "system";
    if (Err e = check_content(m, w, &out->media)) return e;
    for (const char* key : {"name", "tool_call_id", "reasoning_content", "reasoning"})
      if (const ojson* v = field(m, key); v && !v->is_string())
        return type_error(w + "." + key, "a string");
    if (r == "assistant") {
      if (Err e = check_tool_calls(&m, w)) return e;
    } else if (field(m, "tool_calls")) {
      return bad_request(w + ": only assistant messages may carry tool_calls", w + ".tool_calls");
    }
  }
  std::set<std::string> names;
  if (const ojson* tools = field(body, "tools")) {
    if (Err e = check_tools(*tools, &names)) return e;
    out->has_tools = !tools->empty();
  }
  if (const ojson* tc = field(body, "tool_choice")) {
    if (tc->is_string()) {
      const std::string s = tc->get<std::string>();
      if (s == "auto")
        out->tool_choice = ToolChoice::kAuto;
      else if (s == "none")
        out->tool_choice = ToolChoice::kNone;
      else if (s == "required")
        out->tool_choice = ToolChoice::kRequired;
      else
        return bad_request("'tool_choice' must be 'auto', 'none', 'required' or a function",
                           "tool_choice", "invalid_value");
    } else if (tc->is_object()) {
      const ojson* fn = field(*tc, "function");
      const ojson* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
      if (!name || !name->is_string())
        return type_error("tool_choice", "{\"type\": \"function\", \"function\": {\"name\": ...}}");
      out->tool_choice = ToolChoice::kNamed;
      out->tool_name = name->get<std::string>();
      if (!names.count(out->tool_name))
        return bad_request("tool_choice names '" + out->tool_name + "', which is not in 'tools'",
                           "tool_choice", "invalid_value");
    } else {
      return type_error("tool_choice", "a string or an object");
    }
    if ((out->tool_choice == ToolChoice::kRequired || out->tool_choice == ToolChoice::kNamed) &&
        !out->has_tools)
      return bad_request("tool_choice '" + std::string(tc->is_string() ? "required" : "named") +
                             "' needs a non-empty 'tools' list",
                         "tool_choice", "invalid_value");
  }
  if (Err e = get_bool(body, "parallel_tool_calls", &out->parallel_tool_calls)) return e;
  ojson& r = out->render_request;
  r = ojson::object();
  r["messages"] = std::move(messages);
  if (out->has_tools) r["tools"] = body.at("tools");
  ojson kwargs = ojson::object();
  if (const ojson* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) return type_error("chat_template_kwargs", "an object");
    kwargs = *k;
  }
  if (const ojson* eff = field(body, "reasoning_effort")) {
    if (!eff->is_string() && !eff->is_number())
      return type_error("reasoning_effort", "a string (none..max) or a number in [0, 0.99]");
    r["reasoning_effort"] = *eff;
  } else if (auto it = kwargs.find("enable_thinking"); it != kwargs.end() && it->is_boolean() &&
                                                       !it->get<bool>() &&
                                                       !kwargs.contains("reasoning_effort")) {
    r["reasoning_effort"] = "none";  // the usual "thinking off" switch of other servers
  }
  if (!kwargs.empty()) r["chat_template_kwargs"] = kwargs;
  r["add_generation_prompt"] = true;
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const ojson& body, int64_t vocab,
                                                 CompletionRequest* out) {
  if (Err e = parse_generation(body, false, vocab, &out->gen)) return e;
  const ojson* p = field(body, "prompt");
  if (!p) return bad_request("'prompt' is required", "prompt", "missing_field");
  auto as_ids = [&](const ojson& arr) -> Err {
    for (size_t i = 0; i < arr.size(); ++i) {
      if (!arr[i].is_number_integer() || arr[i].get<int64_t>() < 0 ||
          arr[i].get<int64_t>() >= vocab)
        return bad_request("prompt[" + std::to_string(i) + "] is not a token id in [0, " +
                               std::to_string(vocab) + ")",
                           "prompt", "invalid_value");
      out->prompt_ids.push_back(arr[i].get<int32_t>());
    }
    out->prompt_is_ids = true;
    return std::nullopt;
  };
  if (p->is_string()) {
    out->prompt_text = p->get<std::string>();
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    if (Err e = as_ids(*p)) return e;
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    out->prompt_text = (*p)[0].get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_array() && !(*p)[0].empty()) {
    if (Err e = as_ids((*p)[0])) return e;
  } else if (p->is_array() && p->size() > 1) {
    return bad_request("batched prompts are not supported: send one prompt per request", "prompt",
                       "unsupported_value");
  } else {
    return type_error("prompt", "a string or a non-empty array of token ids");
  }
  if (!out->prompt_is_ids && out->prompt_text.empty())
    return bad_request("'prompt' must not be empty", "prompt");
  if (Err e = get_bool(body, "echo", &out->echo)) return e;
  if (Err e = get_bool(body, "skip_special_tokens", &out->skip_special_tokens)) return e;
  return std::nullopt;
}

std::optional<ApiError> parse_tokenize_request(const ojson& body, TokenizeRequest* out) {
  if (const ojson* m = field(body, "messages")) {
    ChatRequest chat;
    ojson b = ojson{{"messages", *m}};
    for (const char* k : {"tools", "reasoning_effort", "chat_template_kwargs"})
      if (const ojson* v = field(body, k)) b[k] = *v;
    if (Err e = parse_chat_request(b, &chat)) return e;
    out->render_request = std::move(chat.render_request);
    if (const ojson* agp = field(body, "add_generation_prompt")) {
      if (!agp->is_boolean()) return type_error("add_generation_prompt", "a boolean");
      out->render_request["add_generation_prompt"] = *agp;
    }
    out->is_chat = true;
  } else {
    const ojson* c = field(body, "content");
    if (!c) c = field(body, "prompt");
    if (!c) return bad_request("'content' (or 'prompt', or 'messages') is required", "content");
    if (!c->is_string()) return type_error("content", "a string");
    out->text = c->get<std::string>();
  }
  if (Err e = get_bool(body, "add_special", &out->add_special)) return e;
  if (Err e = get_bool(body, "with_pieces", &out->with_pieces)) return e;
  return std::nullopt;
}

std::optional<ApiError> parse_detokenize_request(const ojson& body, int64_t vocab,
                                                 std::vector<int32_t>* out) {
  const ojson* t = field(body, "tokens");
  if (!t) return bad_request("'tokens' is required", "tokens", "missing_field");
  if (!t->is_array()) return type_error("tokens", "an array of token ids");
  for (size_t i = 0; i < t->size(); ++i) {
    const ojson& v = (*t)[i];
    // An integer, or a float with an integral value (JSON Schema's "integer": 7.0 is one).
    const bool integral = v.is_number_integer() ||
                          (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (!integral || v.get<double>() < 0 || v.get<double>() >= double(vocab))
      return bad_request("tokens[" + std::to_string(i) + "] is not a token id in [0, " +
                             std::to_string(vocab) + ")",
                         "tokens", "invalid_value");
    out->push_back(int32_t(v.get<double>()));
  }
  return std::nullopt;
}

}  // namespace inkling::server
