// What every route handler shares: the loaded model pieces, the scheduler, metrics, options and
// small helpers for OpenAI-shaped error responses. Internal to app/server.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api_types.h"
#include "inkling/chat.h"
#include "inkling/engine.h"
#include "inkling/tokenizer.h"
#include "listener.h"
#include "metrics.h"
#include "scheduler.h"
#include "server.h"
#include "structured.h"

namespace inkling::server {

struct ScriptEntry {  // TEST ONLY (--test-script)
  std::string when;
  std::vector<int32_t> output;
};

struct Context {
  ServerOptions opts;
  std::shared_ptr<Engine> engine;
  std::shared_ptr<const Tokenizer> tok;
  std::unique_ptr<ChatTemplate> tmpl;
  SpecialTokenIds ids;
  std::vector<int32_t> eos_ids;
  std::string model_id;
  int64_t created = 0;
  int64_t ctx_size = 0;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;
  const Listener* listener = nullptr;
  std::atomic<int64_t> body_bytes_in_use{0};  // request bodies held now (server.cpp, read_body)  //
                                              // connection counters; stopping() while draining
  std::vector<ScriptEntry> script;
  VocabIndexCache vocab_index;  // for grammar constraints (structured.h)

  std::vector<int32_t> forced_for(const std::string& prompt_text) const;
};

// JSON text for responses: invalid UTF-8 is replaced, never thrown on.
std::string dump_json(const ojson& j);
void send_json(httplib::Response& res, const ojson& j, int status = 200);
void send_error(httplib::Response& res, const ApiError& e);

// Route handlers (handlers_generate.cpp).
// `body` is the request body, already read within the size limit (server.cpp, read_body).
void handle_chat(Context& ctx, const std::string& body, httplib::Response& res);
void handle_completions(Context& ctx, const std::string& body, httplib::Response& res);
// POST /v1/responses (responses_api.cpp).
void handle_responses(Context& ctx, const std::string& body, httplib::Response& res);
// POST /v1/messages (messages_api.cpp).
void handle_messages(Context& ctx, const std::string& body, httplib::Response& res);

}  // namespace inkling::server
