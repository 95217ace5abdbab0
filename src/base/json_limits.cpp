// check_json_depth: one pass over the bytes counting open arrays/objects outside strings.
#include "base/json_limits.h"

#include <string>

namespace inkling {

Status check_json_depth(std::string_view text, std::string_view what, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return Status::error(std::string(what) + ": JSON nested deeper than " +
                             std::to_string(max_depth) + " levels (at byte " + std::to_string(i) +
                             ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::success();
}

}  // namespace inkling
