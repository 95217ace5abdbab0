// `inkling chat`: an interactive conversation in the terminal. Each turn renders the whole
// conversation with the model's chat template, reuses the session state of the previous turn's
// prompt (restored from a snapshot, so nothing is re-prefilled), streams the answer and shows
// the reasoning when asked. Commands: /reset, /exit (or end of input). With --draft K the answer
// is decoded speculatively with the model's MTP depths (each turn then re-runs the whole
// conversation: the speculative decoder starts from an empty session).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "draft_option.h"
#include "inkling/chat.h"
#include "inkling/engine.h"
#include "inkling/sampler.h"
#include "inkling/speculative.h"
#include "inkling/tokenizer.h"
#include "kv_option.h"
#include "media_attach.h"
#include "sampling_options.h"

namespace inkling::cli {

namespace {

// --reasoning-effort as the chat template takes it: a level name stays a string, a number
// becomes a JSON number (the template rejects "0.9" as a string). Null when neither.
nlohmann::ordered_json effort_value(const std::string& v) {
  for (const char* name : {"none", "minimal", "low", "medium", "high", "max"})
    if (v == name) return v;
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(v, &used);
  } catch (...) {
    return nullptr;
  }
  if (used != v.size() || !(x >= 0 && x <= 0.99)) return nullptr;
  return x;
}

struct ChatArgs {
  std::string model_dir, system, effort;
  int max_tokens = 2048, threads = 0;
  int draft = 0;            // --draft K: speculative decoding with K MTP drafts (0 = off)
  int64_t draft_vocab = 0;  // --draft-vocab N
  KvCacheType kv_type = KvCacheType::kF32;
  bool show_reasoning = false;
  SamplingOptions sampling;
};

void out(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

int run_chat(const ChatArgs& a) {
  auto params = a.sampling.resolved();
  if (!params.ok()) return fail(params.status().message(), 2);
  EngineOptions eo;
  eo.n_threads = a.threads;
  eo.kv_type = a.kv_type;
  auto engine = Engine::load(a.model_dir, eo);
  if (!engine.ok()) return fail(engine.status().message());
  auto tok = Tokenizer::load(a.model_dir);
  if (!tok.ok()) return fail(tok.status().message());
  auto tmpl = ChatTemplate::load(a.model_dir);
  if (!tmpl.ok()) return fail(tmpl.status().message());
  const auto tokenizer = tok.value();
  auto ids =
      SpecialTokenIds::from_lookup([&](std::string_view s) { return tokenizer->token_id(s); });
  if (!ids.ok()) return fail(ids.status().message());
  const auto& eos = engine.value()->info().eos_ids;
  if (Status s = check_logit_bias(*params, engine.value()->info().unpadded_vocab); !s)
    return fail(s.message(), 2);

  // One sampler for the whole chat: the random stream runs on across turns; each turn's prompt
  // (the whole conversation) starts its penalty history afresh.
  Sampler sampler(*params);
  auto session = engine.value()->new_session();
  if (a.draft > 0)  // the draft count is checked once, before the first turn
    if (auto d = SpeculativeDecoder::create(*session, a.draft, a.draft_vocab); !d.ok())
      return fail("--draft: " + d.status().message(), 2);
  std::vector<int32_t> consumed;  // ids the session holds (the last prompt)
  std::shared_ptr<const SessionSnapshot> at_prompt;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  const bool tty = isatty(0);
  std::vector<MediaEmbedding> media, pending_media;  // attached so far / for the next message

  for (;;) {
    if (tty) out("\n> ");
    std::string line;
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      while (messages.size() > (a.system.empty() ? 0u : 1u)) messages.erase(messages.size() - 1);
      media.clear(), pending_media.clear();
      continue;
    }
    if (line.rfind("/image ", 0) == 0 || line.rfind("/audio ", 0) == 0) {
      // Attaches a file to the next message (media_attach.h).
      auto e = encode_file(*engine.value(), line[1] == 'i', line.substr(7), MediaOptions{});
      if (!e.ok()) {
        fail(e.status().message(), 2);
      } else {
        if (tty) out(e->description + "\n");
        pending_media.push_back(std::move(e).value());
      }
      continue;
    }
    if (line.empty()) continue;
    if (pending_media.empty()) {
      messages.push_back({{"role", "user"}, {"content", line}});
    } else {
      if (a.draft > 0) {
        fail("--draft: not available with /image or /audio", 2);
        pending_media.clear();
        continue;
      }
      nlohmann::ordered_json parts = nlohmann::ordered_json::array();
      for (const MediaEmbedding& m : pending_media)
        parts.push_back({{"type", m.kind == MediaKind::kImage ? "image" : "audio"}});
      parts.push_back({{"type", "text"}, {"text", line}});
      messages.push_back({{"role", "user"}, {"content", parts}});
      for (auto& m : pending_media) media.push_back(std::move(m));
      pending_media.clear();
    }
    nlohmann::ordered_json request = {{"messages", messages}};
    if (!a.effort.empty()) request["reasoning_effort"] = effort_value(a.effort);
    auto prompt = tmpl->render(request);
    if (!prompt.ok()) {
      fail(prompt.status().message(), 2);
      messages.erase(messages.size() - 1);
      continue;
    }
    std::vector<int32_t> prompt_ids = tokenizer->encode(prompt.value());
    std::vector<const float*> rows;  // tower rows over the expanded placeholders
    if (!media.empty()) {
      auto r = media_rows(*engine.value(), prompt_ids, media, &rows);
      if (!r.ok()) return fail(r.message());
    }
    // Reuse the previous prompt's state when this prompt extends it.
    size_t start = 0;
    std::unique_ptr<SpeculativeDecoder> spec;
    int32_t first = -1;
    if (a.draft > 0) {
      session->reset();
      auto d = SpeculativeDecoder::create(*session, a.draft, a.draft_vocab);
      if (!d.ok()) return fail(d.status().message());
      spec = std::move(d).value();
      sampler.set_prompt(prompt_ids);
      auto f = spec->start(prompt_ids, sampler);
      if (!f.ok()) {
        fail(f.status().message(), 2);
        messages.erase(messages.size() - 1);
        continue;
      }
      first = f.value();
    } else if (at_prompt && prompt_ids.size() > consumed.size() &&
               std::equal(consumed.begin(), consumed.end(), prompt_ids.begin())) {
      session->restore(*at_prompt);
      start = consumed.size();
    } else {
      session->reset();
    }
    std::span<const float> l;
    if (!spec) {
      auto logits = rows.empty()
                        ? session->prefill(std::span<const int32_t>(prompt_ids).subspan(start))
                        : session->prefill_rows(std::span<const int32_t>(prompt_ids).subspan(start),
                                                std::span<const float* const>(rows).subspan(start));
      if (!logits.ok()) return fail(logits.status().message());
      l = logits.value();
      consumed = prompt_ids;
      at_prompt = session->snapshot();
      sampler.set_prompt(prompt_ids);
    }

    OutputParser parser(ids.value());
    StreamDecoder dec(tokenizer, /*skip_special=*/true);
    bool in_reasoning = false;
    auto show = [&](const ParseDelta& d) {
      if (!d.reasoning.empty() && a.show_reasoning) {
        if (!in_reasoning) out("\x1b[2m");  // dim
        in_reasoning = true;
        out(d.reasoning);
      }
      if (!d.content.empty()) {
        if (in_reasoning) out("\x1b[0m\n");
        in_reasoning = false;
        out(d.content);
      }
      for (const auto& tc : d.tool_calls)
        out((tc.name.empty() ? "" : "\n[tool call " + tc.name + "] ") + tc.arguments);
    };
    // Shows one generated token; true when the answer ends with it.
    auto take = [&](int32_t t) {
      const bool control = tokenizer->is_special(t);
      ParseDelta d = parser.push(t, control ? std::string() : dec.push(t));
      show(d);
      return d.stop || std::find(eos.begin(), eos.end(), t) != eos.end();
    };
    if (spec) {
      int n = 1;
      bool done = take(first);
      while (!done && n < a.max_tokens) {
        auto toks = spec->step(sampler);
        if (!toks.ok()) {
          fail(toks.status().message());
          break;
        }
        for (int32_t t : toks.value())
          if ((done = take(t)) || ++n >= a.max_tokens) break;
      }
    } else {
      for (int i = 0; i < a.max_tokens; ++i) {
        const int32_t t = sampler.next(l).id;
        if (take(t)) break;
        auto next = session->decode(t);
        if (!next.ok()) {
          fail(next.status().message());
          break;
        }
        l = next.value();
      }
    }
    show(parser.finish());
    if (in_reasoning) out("\x1b[0m");
    out("\n");
    const ParsedMessage& msg = parser.result();
    nlohmann::ordered_json reply = {{"role", "assistant"}, {"content", msg.content}};
    if (!msg.reasoning_content.empty()) reply["reasoning_content"] = msg.reasoning_content;
    messages.push_back(reply);
  }
  return 0;
}

}  // namespace

Runner add_chat(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  a->sampling.params.temperature = 0.7f;
  a->sampling.params.top_p = 0.95f;
  app.add_option("-m,--model", a->model_dir, "model folder with tokenizer and chat template")
      ->required();
  app.add_option("--system", a->system, "system message");
  app.add_option("--reasoning-effort", a->effort,
                 "none, minimal, low, medium, high, max or a number in [0, 0.99]")
      ->check([](const std::string& v) -> std::string {
        if (effort_value(v).is_null())
          return "expected none, minimal, low, medium, high, max or a number in [0, 0.99], got '" +
                 v + "'";
        return "";
      });
  app.add_flag("--show-reasoning", a->show_reasoning, "print the model's reasoning (dimmed)");
  app.add_option("-n,--max-tokens", a->max_tokens, "most tokens per answer")
      ->check(CLI::Range(1, 1 << 24));
  add_sampling_options(app, &a->sampling);
  add_kv_type_option(app, &a->kv_type);
  add_draft_options(
      app, &a->draft, &a->draft_vocab,
      "speculative decoding with K MTP drafts per round (same output at temperature 0, "
      "same distribution otherwise); each turn re-runs the conversation");
  app.add_option("-t,--threads", a->threads,
                 "worker threads (0 = one per CPU this process may use)")
      ->check(CLI::Range(0, 1024));
  return [a]() { return run_chat(*a); };
}

}  // namespace inkling::cli
