// POST /v1/chat/completions and POST /v1/completions: validate, render, tokenize, submit a job to
// the scheduler, then either collect the whole answer or stream it as server-sent events. The
// job is cancelled on every exit path (client gone, stop string, error), which frees its slot; a
// client that hangs up is noticed at its next token (PeerWatch), streaming or not.
#include <chrono>
#include <random>

#include "chat_run.h"
#include "context.h"
#include "media_parts.h"
#include "output.h"
#include "peer.h"
#include "sse.h"
#include "tool_choice.h"

namespace inkling::server {

// How often an HTTP thread waiting for a queued or prefilling job looks at its client.
static constexpr std::chrono::milliseconds kPeerPoll(20);

// The job's next events, or false when it is over. Cancels the job (its slot is freed at the
// start of the next scheduler step) and sets *gone when the client has hung up.
bool next_events(Job& job, const PeerWatch& peer, std::vector<TokenEvent>* evs, bool* gone) {
  const bool more = peer.found() ? job.next(evs, kPeerPoll) : job.next(evs);
  if (more && peer.gone()) {
    job.cancel();
    *gone = true;
    return false;
  }
  return more;
}

// A non-streaming request whose client left: nobody reads this, but the logger counts it.
void client_gone(httplib::Response& res) {
  ApiError e;
  e.status = 499;
  e.type = "client_closed_request";
  e.message = "the client closed the connection";
  send_error(res, e);
}

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Job parameters common to chat and completions.
static JobParams job_params(const Context& ctx, const GenerationRequest& g,
                            std::vector<int32_t> prompt, bool chat) {
  JobParams p;
  p.prompt = std::move(prompt);
  p.sampling = g.sampling;
  if (!g.seed_given) p.sampling.seed = std::random_device{}() * 0x9E3779B97F4A7C15ull + 1;
  p.sampling.presence_penalty = g.presence_penalty;
  p.sampling.frequency_penalty = g.frequency_penalty;
  p.sampling.repetition_penalty = g.repetition_penalty;
  p.sampling.logit_bias = g.logit_bias;
  p.sampling.logprobs = g.logprobs;
  p.sampling.top_logprobs = g.top_logprobs;
  p.max_tokens = g.max_tokens;
  p.ignore_eos = g.ignore_eos;
  if (!g.ignore_eos) {
    p.stop_ids = ctx.eos_ids;
    if (chat && ctx.ids.endoftext >= 0) p.stop_ids.push_back(ctx.ids.endoftext);
  }
  return p;
}

static std::optional<ApiError> check_length(const Context& ctx, size_t n, const char* what) {
  if (int64_t(n) < ctx.ctx_size) return std::nullopt;
  ApiError e =
      bad_request("This model's maximum context length is " + std::to_string(ctx.ctx_size) +
                      " tokens. However, your " + what + " resulted in " + std::to_string(n) +
                      " tokens (at least one token must be left for the completion).",
                  what, "context_length_exceeded");
  return e;
}

ojson usage_json(size_t prompt, int64_t completion, int64_t cached, int64_t reasoning) {
  return ojson{{"prompt_tokens", prompt},
               {"completion_tokens", completion},
               {"total_tokens", int64_t(prompt) + completion},
               {"prompt_tokens_details", {{"cached_tokens", cached}}},
               {"completion_tokens_details", {{"reasoning_tokens", reasoning}}}};
}

static ojson token_bytes_json(const std::string& b) {
  ojson arr = ojson::array();
  for (unsigned char c : b) arr.push_back(int(c));
  return arr;
}

// One chat logprobs entry ({"token","logprob","bytes","top_logprobs"}).
ojson chat_logprob(const Context& ctx, const TokenEvent& ev) {
  auto entry = [&](int32_t id, float lp) {
    const std::string b = ctx.tok->token_bytes(id);
    return ojson{{"token", b}, {"logprob", lp}, {"bytes", token_bytes_json(b)}};
  };
  ojson e = entry(ev.id, ev.logprob);
  e["top_logprobs"] = ojson::array();
  for (auto [id, lp] : ev.top) e["top_logprobs"].push_back(entry(id, lp));
  return e;
}

ojson tool_delta_json(const ChatToolDelta& t) {
  ojson j = {{"index", t.index}};
  if (!t.id.empty()) {
    j["id"] = t.id;
    j["type"] = "function";
    j["function"] = {{"name", t.name}, {"arguments", t.arguments}};
  } else {
    j["function"] = {{"arguments", t.arguments}};
  }
  return j;
}

// Submits; on a full queue answers 503 and returns null.
static std::shared_ptr<Job> submit(Context& ctx, JobParams p, httplib::Response& res) {
  auto job = std::make_shared<Job>(std::move(p));
  if (Status s = ctx.scheduler->submit(job); !s.ok()) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = s.message() == kShutdownError ? "shutting_down" : "queue_full";
    e.message = s.message() + "; retry later";
    send_error(res, e);
    return nullptr;
  }
  return job;
}

ApiError job_error(const Job& job) {
  ApiError e;
  e.type = "server_error";
  if (job.error == kShutdownError) {  // cancelled by the drain at the end of the grace period
    e.status = 503;
    e.code = "shutting_down";
    e.message = "the server is shutting down; retry later";
    return e;
  }
  e.status = 500;
  e.message = job.error.empty() ? "generation failed" : job.error;
  return e;
}

// ---- chat ------------------------------------------------------------------------------------

std::vector<std::shared_ptr<ChatRun>> start_chat(Context& ctx, const ChatRequest& cr,
                                                 httplib::Response& res) {
  std::vector<std::shared_ptr<ChatRun>> runs;
  auto fail = [&](const ApiError& e) {
    send_error(res, e);
    return std::vector<std::shared_ptr<ChatRun>>();
  };
  auto prompt = ctx.tmpl->render(cr.render_request);
  if (!prompt.ok()) {
    const std::string& m = prompt.status().message();
    return fail(bad_request(
        m, m.find("reasoning_effort") != std::string::npos ? "reasoning_effort" : "messages",
        "template_error"));
  }
  std::vector<int32_t> ids = ctx.tok->encode(prompt.value(), /*allow_special=*/true);
  std::shared_ptr<const std::vector<MediaEmbedding>> media;
  std::vector<const float*> rows;
  std::vector<int32_t> key;
  if (!cr.media.empty()) {
    std::vector<MediaEmbedding> m;
    if (auto e = load_media_parts(ctx, cr.media, &m)) return fail(*e);
    if (auto e = attach_media_rows(ctx, std::move(m), &ids, &media, &rows, &key)) return fail(*e);
  }
  if (auto e = check_length(ctx, ids.size(), "messages")) return fail(*e);
  std::string grammar;
  if (auto e = chat_grammar(cr, &grammar)) return fail(*e);

  JobParams p = job_params(ctx, cr.gen, ids, true);
  p.media = std::move(media);
  p.rows = std::move(rows);
  p.key = std::move(key);
  // Snapshot points: the start of the first user turn (shared system prompt + tools), of the
  // latest user/tool turn (the whole earlier conversation)
  int64_t first_user = -1, last_turn = -1;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == ctx.ids.message_user || ids[i] == ctx.ids.message_tool) {
      if (first_user < 0) first_user = int64_t(i);
      last_turn = int64_t(i);
    }
  // ... and the prompt minus its last token: a regenerated answer (or the other choices of
  // n > 1) reuses the whole prompt.
  for (int64_t pos : {first_user, last_turn, int64_t(ids.size()) - 1})
    if (pos > 0 && (p.snapshot_at.empty() || p.snapshot_at.back() != pos))
      p.snapshot_at.push_back(pos);
  p.forced = ctx.forced_for(prompt.value());
  p.constrained = !grammar.empty();
  // Each choice gets its own constraints (they follow its output) and seed.
  auto params_for = [&](int choice, JobParams* out) -> std::optional<ApiError> {
    *out = p;
    out->sampling.seed = p.sampling.seed + uint64_t(choice);
    if (cr.tool_choice != ToolChoice::kAuto || !cr.parallel_tool_calls)
      out->constraints.push_back(std::make_shared<ToolChoiceConstraint>(
          cr.tool_choice, cr.tool_name, *ctx.tok, ctx.ids, !cr.parallel_tool_calls));
    if (!grammar.empty()) {
      GrammarConstraintOptions o;
      o.max_tokens = p.max_tokens >= 0
                         ? std::min<int64_t>(p.max_tokens, ctx.ctx_size - 1 - int64_t(ids.size()))
                         : ctx.ctx_size - 1 - int64_t(ids.size());
      std::shared_ptr<GrammarConstraint> gc;
      const std::string param =
          !cr.gen.grammar.empty() ? "grammar"
          : cr.tool_choice == ToolChoice::kRequired || cr.tool_choice == ToolChoice::kNamed
              ? "tools"
              : "response_format";
      if (auto e = make_grammar_constraint(grammar, *ctx.tok, ctx.vocab_index.get(*ctx.tok), o,
                                           param, kChatGrammarStart, &gc))
        return e;
      out->constraints.push_back(std::move(gc));
    }
    return std::nullopt;
  };
  const int n = cr.gen.n;
  for (int i = 0; i < n; ++i) {
    JobParams pi;
    if (auto e = params_for(i, &pi)) {
      for (auto& r : runs) r->job->cancel();
      return fail(*e);
    }
    ctx.metrics.prompt_tokens += i == 0 ? ids.size() : 0;
    auto job = submit(ctx, std::move(pi), res);
    if (!job) {
      for (auto& r : runs) r->job->cancel();
      return {};
    }
    // The other choices start once the first one has run the prompt, from its snapshot.
    if (i == 0 && n > 1) job->wait_started();
    auto run = std::make_shared<ChatRun>(ctx, job, ChatOutput(ctx.tok, ctx.ids, cr.gen.stop),
                                         ids.size(), PeerWatch());
    run->out.set_ignore_eos(cr.gen.ignore_eos);
    run->index = i;
    if (i > 0) {
      run->id = runs[0]->id;
      run->created = runs[0]->created;
    }
    run->model = cr.gen.model.empty() ? ctx.model_id : cr.gen.model;
    run->stream = cr.gen.stream;
    run->include_usage = cr.gen.stream && cr.gen.include_usage;
    runs.push_back(std::move(run));
  }
  return runs;
}

void handle_chat(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_error(res, *e);
  ChatRequest cr;
  if (auto e = parse_chat_request(body, &cr)) return send_error(res, *e);
  auto runs = start_chat(ctx, cr, res);
  if (runs.empty()) return;
  auto usage = [runs] {
    ojson u = runs[0]->usage();
    int64_t completion = 0, reasoning = 0;
    for (const auto& r : runs) {
      completion += r->consumed;
      reasoning += r->out.reasoning_tokens();
    }
    u["completion_tokens"] = completion;
    u["total_tokens"] = int64_t(runs[0]->prompt_tokens) + completion;
    u["completion_tokens_details"]["reasoning_tokens"] = reasoning;
    return u;
  };

  if (!cr.gen.stream) {
    ojson choices = ojson::array();
    for (auto& run : runs) {
      ojson lps = ojson::array();
      const bool alive = run->drive([&](const ChatDelta&, const ojson& lp) {
        if (!lp.is_null()) lps.push_back(lp);
        return true;
      });
      if (!alive) {
        for (auto& r : runs) r->job->cancel();
        return client_gone(res);
      }
      if (run->job->finish_reason == "error") {
        for (auto& r : runs) r->job->cancel();
        return send_error(res, job_error(*run->job));
      }
      ojson msg = {{"role", "assistant"}};
      const auto calls = run->out.tool_calls();
      msg["content"] =
          run->out.content().empty() && !calls.empty() ? ojson(nullptr) : ojson(run->out.content());
      if (!run->out.reasoning().empty()) msg["reasoning_content"] = run->out.reasoning();
      if (!calls.empty()) {
        msg["tool_calls"] = ojson::array();
        for (const auto& c : calls)
          msg["tool_calls"].push_back(
              {{"id", c.id},
               {"type", "function"},
               {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      ojson choice = {{"index", run->index}, {"message", msg}};
      choice["logprobs"] =
          run->job->params.sampling.logprobs ? ojson{{"content", lps}} : ojson(nullptr);
      choice["finish_reason"] = run->finish_reason();
      choices.push_back(std::move(choice));
    }
    ojson out = {
        {"id", runs[0]->id},       {"object", "chat.completion"},   {"created", runs[0]->created},
        {"model", runs[0]->model}, {"system_fingerprint", nullptr}, {"choices", std::move(choices)},
        {"usage", usage()}};
    return send_json(res, out);
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [runs, usage](size_t, httplib::DataSink& sink) {
        auto write = [&](const ojson& j) { return sse_write(sink, sse_event(dump_json(j))); };
        auto cancel_all = [&] {
          for (auto& r : runs) r->job->cancel();
        };
        // Choices one after the other (each starts with its role delta, ends with its
        // finish_reason); the scheduler decodes them together meanwhile.
        for (auto& run : runs) {
          if (!write(run->chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) {
            cancel_all();
            return false;
          }
          const bool alive = run->drive([&](const ChatDelta& d, const ojson& lp) {
            if (d.empty() && lp.is_null()) return true;
            ojson lps = lp.is_null() ? ojson(nullptr) : ojson{{"content", ojson::array({lp})}};
            return write(run->chunk(ChatRun::delta_json(d), nullptr, lps));
          });
          if (!alive) {
            cancel_all();
            return false;
          }
          if (run->job->finish_reason == "error") {
            write(error_body(job_error(*run->job)));
            cancel_all();
            sse_write(sink, sse_done());
            sink.done();
            return true;
          }
          write(run->chunk(ojson::object(), run->finish_reason()));
        }
        if (runs[0]->include_usage) {
          ojson u = runs[0]->chunk(ojson::object(), nullptr);
          u["choices"] = ojson::array();
          u["usage"] = usage();
          write(u);
        }
        sse_write(sink, sse_done());
        sink.done();
        return true;
      },
      [runs](bool) {
        for (auto& r : runs) r->job->cancel();
      });
}

// ---- completions -----------------------------------------------------------------------------

void handle_completions(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_error(res, *e);
  CompletionRequest cr;
  if (auto e = parse_completion_request(body, ctx.engine->info().unpadded_vocab, &cr))
    return send_error(res, *e);
  std::vector<int32_t> ids =
      cr.prompt_is_ids ? cr.prompt_ids : ctx.tok->encode(cr.prompt_text, /*allow_special=*/true);
  if (ids.empty()) return send_error(res, bad_request("the prompt encodes to no tokens", "prompt"));
  if (auto e = check_length(ctx, ids.size(), "prompt")) return send_error(res, *e);
  const std::string prompt_text = cr.prompt_is_ids ? ctx.tok->decode(ids) : cr.prompt_text;
  if (cr.gen.n != 1)
    return send_error(res, bad_request("'n' > 1 is supported on /v1/chat/completions only", "n",
                                       "unsupported_value"));
  std::string grammar;
  if (auto e = completion_grammar(cr.gen, &grammar)) return send_error(res, *e);
  JobParams p = job_params(ctx, cr.gen, ids, false);
  p.forced = ctx.forced_for(prompt_text);
  // The prompt minus its last token: the same prompt again (a retry, another sample) reuses it.
  if (ids.size() > 1) p.snapshot_at.push_back(int64_t(ids.size()) - 1);
  if (!grammar.empty()) {
    GrammarConstraintOptions o;
    o.eos_ids = ctx.eos_ids;
    const int64_t room = ctx.ctx_size - 1 - int64_t(ids.size());
    o.max_tokens = p.max_tokens >= 0 ? std::min(p.max_tokens, room) : room;
    std::shared_ptr<GrammarConstraint> gc;
    if (auto e = make_grammar_constraint(grammar, *ctx.tok, ctx.vocab_index.get(*ctx.tok), o,
                                         cr.gen.grammar.empty() ? "response_format" : "grammar",
                                         "root", &gc))
      return send_error(res, *e);
    p.constraints.push_back(std::move(gc));
    p.constrained = true;
  }
  ctx.metrics.prompt_tokens += ids.size();
  const std::vector<int32_t> stop_ids = p.stop_ids;
  const PeerWatch peer;
  auto job = submit(ctx, std::move(p), res);
  if (!job) return;

  struct Run {
    Run(std::shared_ptr<Job> j, TextOutput o) : job(std::move(j)), out(std::move(o)) {}
    std::shared_ptr<Job> job;
    TextOutput out;
    std::string id = make_request_id("cmpl-");
    int64_t created = now_s();
    std::string model;
    int64_t consumed = 0;
    size_t text_len = 0;
  };
  auto run = std::make_shared<Run>(
      job, TextOutput(ctx.tok, cr.skip_special_tokens, cr.gen.stop, stop_ids));
  run->model = cr.gen.model.empty() ? ctx.model_id : cr.gen.model;
  const bool want_lp = cr.gen.logprobs, include_usage = cr.gen.stream && cr.gen.include_usage;
  const size_t n_prompt = ids.size();
  Context* c = &ctx;
  auto lp_json = [c](const std::vector<TokenEvent>& evs, size_t offset) {
    ojson j = {{"tokens", ojson::array()},
               {"token_logprobs", ojson::array()},
               {"top_logprobs", ojson::array()},
               {"text_offset", ojson::array()}};
    for (const auto& ev : evs) {
      const std::string t = c->tok->token_bytes(ev.id);
      j["tokens"].push_back(t);
      j["token_logprobs"].push_back(ev.logprob);
      ojson top = ojson::object();
      for (auto [id, lp] : ev.top) top[c->tok->token_bytes(id)] = lp;
      j["top_logprobs"].push_back(top);
      j["text_offset"].push_back(offset);
      offset += t.size();
    }
    return j;
  };
  auto finish_reason = [run] {
    if (run->out.stop_string_hit() || run->job->finish_reason == "stop") return "stop";
    return "length";
  };
  auto chunk = [run](const std::string& text, ojson finish, ojson lp, bool usage_null) {
    ojson ch = {{"index", 0},
                {"text", text},
                {"logprobs", std::move(lp)},
                {"finish_reason", std::move(finish)}};
    ojson j = {
        {"id", run->id},       {"object", "text_completion"},   {"created", run->created},
        {"model", run->model}, {"system_fingerprint", nullptr}, {"choices", ojson::array({ch})}};
    if (usage_null) j["usage"] = nullptr;
    return j;
  };
  // Feeds events; returns the text they add (stop strings applied).
  auto feed = [run](const std::vector<TokenEvent>& evs, std::vector<TokenEvent>* used) {
    std::string text;
    for (const auto& ev : evs) {
      if (run->out.stop_string_hit()) break;
      ++run->consumed;
      used->push_back(ev);
      text += run->out.push(ev.id);
    }
    if (run->out.stop_string_hit()) run->job->cancel();
    return text;
  };

  if (!cr.gen.stream) {
    std::string text = cr.echo ? prompt_text : std::string();
    std::vector<TokenEvent> evs, used;
    bool gone = false;
    while (next_events(*job, peer, &evs, &gone)) text += feed(evs, &used);
    if (gone) return client_gone(res);
    text += run->out.finish();
    if (job->finish_reason == "error") return send_error(res, job_error(*job));
    ojson lp = want_lp ? lp_json(used, cr.echo ? prompt_text.size() : 0) : ojson(nullptr);
    ojson out = chunk(text, finish_reason(), lp, false);
    out["usage"] = usage_json(n_prompt, run->consumed, job->cached_tokens, 0);
    return send_json(res, out);
  }
  const std::string echo = cr.echo ? prompt_text : std::string();
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [=](size_t, httplib::DataSink& sink) {
        auto write = [&](const ojson& j) { return sse_write(sink, sse_event(dump_json(j))); };
        if (!echo.empty() && !write(chunk(echo, nullptr, nullptr, include_usage))) {
          run->job->cancel();
          return false;
        }
        std::vector<TokenEvent> evs, used;
        bool gone = false;
        while (next_events(*run->job, peer, &evs, &gone)) {
          used.clear();
          const std::string text = feed(evs, &used);
          if (text.empty() && !want_lp) continue;
          ojson lp = want_lp ? lp_json(used, run->text_len) : ojson(nullptr);
          run->text_len += text.size();
          if (!write(chunk(text, nullptr, lp, include_usage))) {
            run->job->cancel();
            return false;
          }
        }
        if (gone) return false;
        if (run->job->finish_reason == "error") {
          write(error_body(job_error(*run->job)));
        } else {
          write(chunk(run->out.finish(), finish_reason(), nullptr, include_usage));
          if (include_usage) {
            ojson u = chunk("", nullptr, nullptr, false);
            u["choices"] = ojson::array();
            u["usage"] = usage_json(n_prompt, run->consumed, run->job->cached_tokens, 0);
            write(u);
          }
        }
        sse_write(sink, sse_done());
        sink.done();
        return true;
      },
      [run](bool) { run->job->cancel(); });
}

}  // namespace inkling::server
