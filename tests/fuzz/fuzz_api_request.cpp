// Fuzzes the HTTP request body -> OpenAI request mapping (app/server/api_types): the body is
// parsed as JSON, then mapped as a chat, completion, tokenize and detokenize request; a valid
// chat request is rendered with the real Inkling chat template, as the server does next. The
// Responses and Messages translations (responses_api, messages_api) map the same body onto a
// chat request, which is then parsed and rendered the same way.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "inkling/chat.h"
#include "server/api_types.h"
#include "server/messages_api.h"
#include "server/responses_api.h"

namespace {

constexpr int64_t kVocab = 200058;

const inkling::ChatTemplate& chat_template() {
  static const inkling::ChatTemplate t = [] {
    auto r = inkling::ChatTemplate::load(inkling::fuzz::inkling_data_dir());
    if (!r.ok()) {
      std::fprintf(stderr, "fuzz_api_request: %s\n", r.status().message().c_str());
      std::abort();
    }
    return r.value();
  }();
  return t;
}

// The server sends every error as JSON; that must always serialise (as server.cpp does it).
void send(const std::optional<inkling::server::ApiError>& e) {
  if (e)
    (void)inkling::server::error_body(*e).dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling::server;
  const auto& tmpl = chat_template();
  ojson body;
  auto err = parse_json_body(std::string(inkling::fuzz::as_text(data, size)), &body);
  send(err);
  if (err) return 0;
  ChatRequest chat;
  auto chat_err = parse_chat_request(body, &chat);
  send(chat_err);
  if (!chat_err) (void)tmpl.render(chat.render_request);
  CompletionRequest completion;
  send(parse_completion_request(body, kVocab, &completion));
  TokenizeRequest tokenize;
  auto tok_err = parse_tokenize_request(body, &tokenize);
  send(tok_err);
  if (!tok_err && tokenize.is_chat) (void)tmpl.render(tokenize.render_request);
  std::vector<int32_t> ids;
  send(parse_detokenize_request(body, kVocab, &ids));
  using Translate = std::optional<ApiError> (*)(const ojson&, ojson*);
  for (Translate translate : {Translate(responses_to_chat), Translate(messages_to_chat)}) {
    ojson translated;
    auto t_err = translate(body, &translated);
    send(t_err);
    if (t_err) continue;
    ChatRequest tc;
    auto tc_err = parse_chat_request(translated, &tc);
    send(tc_err);
    if (!tc_err) (void)tmpl.render(tc.render_request);
  }
  return 0;
}
