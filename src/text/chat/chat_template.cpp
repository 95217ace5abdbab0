// ChatTemplate: loads the model's chat template and turns an OpenAI request into template
// variables the way transformers' apply_chat_template (and vLLM's request handling) does.
#include <filesystem>
#include <map>

#include "base/json_limits.h"
#include "base/mapped_file.h"
#include "inkling/chat.h"
#include "text/jinja/jinja.h"

namespace inkling {

struct ChatTemplate::Impl {
  std::string source;
  jinja::Template tmpl;
  std::optional<jinja::Template> tool_use;                    // named "tool_use" template, if any
  std::vector<std::pair<std::string, std::string>> specials;  // bos_token, eos_token, ...
};

namespace {

// The file's text, or nothing when it is missing or not a readable regular file.
std::optional<std::string> read_file(const std::filesystem::path& p) {
  auto text = read_text_file(p.string());
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

Status bad(const std::string& msg) {
  return Status::error("[chat] " + msg);
}

// transformers' _normalize_chat_messages + _alias_reasoning_fields + the server's parsing of
// string tool-call arguments, on one message.
template <typename Json>
Result<Json> prepare_message(const Json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return bad(where + " must be an object");
  Json out = Json::object();
  for (auto it = m.begin(); it != m.end(); ++it)
    if (!it.value().is_null()) out[it.key()] = it.value();
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    auto it = out.find(key);
    if (it == out.end()) continue;
    // Python: {"thinking": reasoning, **message, "reasoning_content": reasoning}
    Json reasoning = *it;
    Json front = Json::object();
    front["thinking"] = out.contains("thinking") ? out["thinking"] : reasoning;
    for (auto jt = out.begin(); jt != out.end(); ++jt)
      if (jt.key() != "thinking") front[jt.key()] = jt.value();
    out = std::move(front);
    out["reasoning_content"] = reasoning;
    break;
  }
  auto calls = out.find("tool_calls");
  if (calls != out.end() && calls->is_array()) {
    for (size_t j = 0; j < calls->size(); ++j) {
      Json& call = (*calls)[j];
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
        continue;
      Json& fn = call["function"];
      if (!fn.contains("arguments") || !fn["arguments"].is_string()) continue;
      const std::string args_where =
          where + ".tool_calls[" + std::to_string(j) + "].function.arguments";
      if (Status s = check_json_depth(fn["arguments"].template get<std::string>(), args_where); !s)
        return bad(s.message());
      // Checked here; turned into a Value by exact_arguments() (integers of any size exact).
      try {
        const Json parsed = Json::parse(fn["arguments"].template get<std::string>());
        (void)parsed;
      } catch (const std::exception& e) {
        return bad(where + ".tool_calls[" + std::to_string(j) +
                   "].function.arguments is not valid JSON: " + e.what());
      }
    }
  }
  return out;
}

// String tool-call arguments (as OpenAI clients send them) become the object they spell, parsed
// as Python's json.loads does: 12345678901234567890 and larger stay exact integers, as
// transformers (and the template's tojson) would print them.
void exact_arguments(jinja::Value& message) {
  using jinja::Value;
  if (!message.is_mapping()) return;
  const Value* calls = message.dict().find("tool_calls");
  if (!calls || !calls->is_sequence()) return;
  for (const Value& call : calls->items()) {
    if (!call.is_mapping()) continue;
    const Value* fn = call.dict().find("function");
    if (!fn || !fn->is_mapping()) continue;
    const Value* args = fn->dict().find("arguments");
    if (!args || !args->is_string()) continue;
    fn->mutable_dict().set(Value::string("arguments"), jinja::value_from_json_text(args->str()));
  }
}

template <typename Json>
Result<std::string> render_impl(const ChatTemplate::Impl& impl, const Json& request) {
  using jinja::Dict;
  using jinja::Value;
  if (!request.is_object()) return bad("request must be a JSON object");
  auto msgs = request.find("messages");
  if (msgs == request.end() || !msgs->is_array()) return bad("request needs a 'messages' array");
  bool add_generation_prompt = true;
  if (auto agp = request.find("add_generation_prompt"); agp != request.end() && !agp->is_null()) {
    if (!agp->is_boolean()) return bad("'add_generation_prompt' must be a boolean");
    add_generation_prompt = agp->template get<bool>();
  }
  bool have_tools = false;
  auto tools = request.find("tools");
  if (tools != request.end() && !tools->is_null()) {
    if (!tools->is_array()) return bad("'tools' must be an array");
    for (size_t i = 0; i < tools->size(); ++i)
      if (!(*tools)[i].is_object())
        return bad("tools[" + std::to_string(i) + "] must be an object");
    have_tools = true;
  }
  try {
    Dict vars;
    for (const auto& [k, v] : impl.specials) vars.set(Value::string(k), Value::string(v));
    if (auto eff = request.find("reasoning_effort"); eff != request.end() && !eff->is_null())
      vars.set(Value::string("reasoning_effort"), jinja::value_from_json(*eff));
    if (auto kw = request.find("chat_template_kwargs"); kw != request.end() && !kw->is_null()) {
      if (!kw->is_object()) return bad("'chat_template_kwargs' must be an object");
      for (auto it = kw->begin(); it != kw->end(); ++it) {
        const std::string& key = it.key();
        if (key == "messages" || key == "tools" || key == "documents" ||
            key == "add_generation_prompt")
          return bad("chat_template_kwargs may not set '" + key + "'");
        vars.set(Value::string(key), jinja::value_from_json(it.value()));
      }
    }
    std::vector<Value> messages;
    for (size_t i = 0; i < msgs->size(); ++i) {
      Result<Json> m = prepare_message((*msgs)[i], i);
      if (!m.ok()) return m.status();
      messages.push_back(jinja::value_from_json(m.value()));
      exact_arguments(messages.back());
    }
    vars.set(Value::string("messages"), Value::list(std::move(messages)));
    vars.set(Value::string("tools"), have_tools ? jinja::value_from_json(*tools) : Value::none());
    vars.set(Value::string("documents"), Value::none());
    vars.set(Value::string("add_generation_prompt"), Value::boolean(add_generation_prompt));
    const jinja::Template& t = have_tools && impl.tool_use ? *impl.tool_use : impl.tmpl;
    return t.render(vars);
  } catch (const jinja::TemplateError& e) {
    return bad(e.message());
  } catch (const std::exception& e) {
    return bad(std::string("internal error: ") + e.what());
  }
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_string(std::string source) {
  INK_ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::parse(source));
  auto impl = std::make_shared<Impl>();
  impl->source = std::move(source);
  impl->tmpl = std::move(t);
  ChatTemplate ct;
  ct.impl_ = std::move(impl);
  return ct;
}

Result<ChatTemplate> ChatTemplate::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const fs::path dir(model_dir);
  nlohmann::ordered_json config;
  if (auto text = read_file(dir / "tokenizer_config.json")) {
    if (Status s = check_json_depth(*text, (dir / "tokenizer_config.json").string()); !s)
      return Status::error("[chat] " + s.message());
    try {
      config = nlohmann::ordered_json::parse(*text);
    } catch (const std::exception& e) {
      return Status::error("[chat] " + (dir / "tokenizer_config.json").string() + ": " + e.what());
    }
  }
  std::string source;
  std::optional<std::string> tool_use_source;
  if (auto text = read_file(dir / "chat_template.jinja")) {
    source = std::move(*text);
  } else if (config.is_object() && config.contains("chat_template")) {
    const auto& ct = config["chat_template"];
    if (ct.is_string()) {
      source = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& named : ct) {
        if (!named.is_object() || !named.contains("name") || !named.contains("template") ||
            !named["template"].is_string())
          continue;
        if (named["name"] == "default") source = named["template"].get<std::string>();
        if (named["name"] == "tool_use") tool_use_source = named["template"].get<std::string>();
      }
    }
    if (source.empty()) return Status::error("[chat] " + model_dir + ": no usable 'chat_template'");
  } else {
    return Status::error("[chat] " + model_dir +
                         ": no chat_template.jinja and no chat_template in tokenizer_config.json");
  }
  Result<ChatTemplate> ct = from_string(source);
  if (!ct.ok()) return ct.status().with_context("[chat] " + model_dir + ": ");
  auto impl = std::make_shared<Impl>(*ct->impl_);
  if (tool_use_source) {
    Result<jinja::Template> tu = jinja::Template::parse(*tool_use_source);
    if (!tu.ok()) return tu.status().with_context("[chat] " + model_dir + " (tool_use): ");
    impl->tool_use = std::move(tu).value();
  }
  if (config.is_object()) {
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                            "cls_token", "mask_token"}) {
      if (!config.contains(key)) continue;
      const auto& v = config[key];
      if (v.is_string())
        impl->specials.emplace_back(key, v.get<std::string>());
      else if (v.is_object() && v.contains("content") && v["content"].is_string())
        impl->specials.emplace_back(key, v["content"].get<std::string>());
    }
  }
  ChatTemplate out;
  out.impl_ = std::move(impl);
  return out;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& request) const {
  return render_impl(*impl_, request);
}

Result<std::string> ChatTemplate::render(const nlohmann::json& request) const {
  return render_impl(*impl_, request);
}

const std::string& ChatTemplate::source() const {
  return impl_->source;
}

}  // namespace inkling
