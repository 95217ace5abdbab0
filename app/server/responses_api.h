// OpenAI Responses API (POST /v1/responses), stateless subset, as a translation layer onto the
// chat-completions machinery: the request becomes a chat request (input items -> messages,
// instructions -> a system message, reasoning.effort -> reasoning_effort, flat function tools ->
// chat tools, text.format -> response_format) and the chat deltas become output items and the
// documented event stream. Nothing is stored: `store: true`, `previous_response_id`,
// `conversation` and `background` are refused with a 400 naming the field.
#pragma once

#include <optional>
#include <string>

#include "api_types.h"

namespace inkling::server {

// A Responses request body -> a chat-completions request body (validated afterwards by
// parse_chat_request). Errors name the Responses field ("input[2].call_id").
std::optional<ApiError> responses_to_chat(const ojson& body, ojson* chat);

}  // namespace inkling::server
