// Limits on JSON from untrusted sources (request bodies, checkpoint headers, tokenizer and model
// files). nlohmann's parser is iterative, but copying, dumping, comparing and converting a value
// recurse once per nesting level, so a 100k-deep `[[[[...` must be refused before it is parsed.
#pragma once

#include <cstddef>
#include <string_view>

#include "inkling/status.h"

namespace inkling {

// Deeper than any real config, tokenizer, header or OpenAI request (tool schemas included).
inline constexpr size_t kMaxJsonDepth = 128;

// Scans `text` (strings and escapes skipped) and fails with "<what>: JSON nested deeper than N
// levels (at byte K)" when an array/object opens past `max_depth`. Every text that parses to a
// value nested deeper than `max_depth` is refused; malformed text is left to the parser.
Status check_json_depth(std::string_view text, std::string_view what,
                        size_t max_depth = kMaxJsonDepth);

}  // namespace inkling
