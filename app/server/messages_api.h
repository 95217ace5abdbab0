// Anthropic Messages API (POST /v1/messages) as a translation layer onto the chat-completions
// machinery: system + messages with content blocks (text, image, tool_use, tool_result,
// thinking) become chat messages, tools / tool_choice / stop_sequences / thinking become their
// chat equivalents, and the chat deltas become content blocks and Anthropic's event stream.
// Errors are Anthropic-shaped: {"type":"error","error":{"type","message"}}.
#pragma once

#include <optional>

#include "api_types.h"

namespace httplib {
struct Response;
}

namespace inkling::server {

// A Messages request body -> a chat-completions request body (validated afterwards by
// parse_chat_request). Errors name the Messages field ("messages[1].content[0].tool_use_id").
std::optional<ApiError> messages_to_chat(const ojson& body, ojson* chat);

// An error in the Messages API's shape: {"type":"error","error":{"type","message"}}.
void send_anthropic_error(httplib::Response& res, const ApiError& e);

}  // namespace inkling::server
