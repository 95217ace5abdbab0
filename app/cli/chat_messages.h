// /save and /load of `inkling chat`: the conversation as OpenAI chat messages in a JSON file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "inkling/status.h"

namespace inkling::cli {

// Writes {"messages": [...]} (pretty-printed) to `path`.
Status save_messages(const std::string& path, const nlohmann::ordered_json& messages);

// Reads {"messages": [...]} or a bare [...] array. Every message is an object with a "role" of
// system, user, assistant or tool and a string "content" (an array of {"type": "text"} parts is
// joined; an assistant message with "tool_calls" may have none). Errors name the file and the
// message index.
Result<nlohmann::ordered_json> load_messages(const std::string& path);

}  // namespace inkling::cli
