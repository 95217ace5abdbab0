// One chat choice being generated (ChatRun) and the start of a validated chat request, shared by
// /v1/chat/completions and the translation layers onto it (/v1/responses, responses_api.cpp):
// they all render, tokenize, constrain and submit the same way and differ only in how the
// deltas and the final message are written out. Internal to app/server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "output.h"
#include "peer.h"

namespace inkling::server {

// The job's next events, or false when it is over (cancels it and sets *gone when the client
// has hung up).
bool next_events(Job& job, const PeerWatch& peer, std::vector<TokenEvent>* evs, bool* gone);
// A non-streaming request whose client left (499, counted by the logger).
void client_gone(httplib::Response& res);
ApiError job_error(const Job& job);
int64_t now_s();
ojson usage_json(size_t prompt, int64_t completion, int64_t cached, int64_t reasoning);
ojson chat_logprob(const Context& ctx, const TokenEvent& ev);
ojson tool_delta_json(const ChatToolDelta& t);

struct ChatRun {
  ChatRun(Context& c, std::shared_ptr<Job> j, ChatOutput o, size_t n, PeerWatch p)
      : ctx(c), job(std::move(j)), out(std::move(o)), prompt_tokens(n), peer(p) {}
  Context& ctx;
  std::shared_ptr<Job> job;
  ChatOutput out;
  size_t prompt_tokens;
  PeerWatch peer;
  std::string id = make_request_id("chatcmpl-");
  int64_t created = now_s();
  std::string model;
  bool stream = false, include_usage = false;
  int64_t consumed = 0;  // tokens that count as completion tokens
  int index = 0;         // the choice's index (n > 1)

  ojson chunk(ojson delta, ojson finish, ojson logprobs = nullptr) const {
    ojson c = {{"id", id},
               {"object", "chat.completion.chunk"},
               {"created", created},
               {"model", model},
               {"system_fingerprint", nullptr}};
    c["choices"] = ojson::array({ojson{{"index", index},
                                       {"delta", std::move(delta)},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", std::move(finish)}}});
    if (include_usage) c["usage"] = nullptr;
    return c;
  }
  static ojson delta_json(const ChatDelta& d) {
    ojson j = ojson::object();
    if (!d.reasoning.empty()) j["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) j["content"] = d.content;
    if (!d.tool_calls.empty()) {
      j["tool_calls"] = ojson::array();
      for (const auto& t : d.tool_calls) j["tool_calls"].push_back(tool_delta_json(t));
    }
    return j;
  }
  std::string finish_reason() const {
    if (out.stop_string_hit()) return "stop";
    const bool stopped = job->finish_reason == "stop" || out.done();
    if (!stopped) return "length";
    return out.tool_calls().empty() ? "stop" : "tool_calls";
  }
  ojson usage() const {
    return usage_json(prompt_tokens, consumed, job->cached_tokens, out.reasoning_tokens());
  }

  // Drives the job to the end; `sink` gets each (delta, logprobs) and returns false when the
  // client is gone. Returns false when the client went away.
  template <typename Sink>
  bool drive(Sink&& sink) {
    std::vector<TokenEvent> evs;
    bool gone = false;
    while (next_events(*job, peer, &evs, &gone)) {
      for (const auto& ev : evs) {
        if (out.done()) break;
        ++consumed;
        ChatDelta d = out.push(ev.id);
        ojson lp = job->params.sampling.logprobs ? chat_logprob(ctx, ev) : ojson(nullptr);
        if (!sink(d, lp)) {
          job->cancel();
          return false;
        }
      }
      if (out.done()) job->cancel();  // a stop string: free the slot now
    }
    if (gone) return false;
    ChatDelta tail = out.finish();
    if (!tail.empty() && !sink(tail, ojson(nullptr))) return false;
    return true;
  }
};

// Renders, tokenizes, attaches media, compiles constraints and submits one job per choice
// (cr.gen.n). On an error the error response is sent on `res` and the result is empty.
std::vector<std::shared_ptr<ChatRun>> start_chat(Context& ctx, const ChatRequest& cr,
                                                 httplib::Response& res);

}  // namespace inkling::server
