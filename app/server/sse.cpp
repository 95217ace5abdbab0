// SSE framing and parsing (see sse.h).
#include "sse.h"

namespace inkling::server {

std::string sse_event(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  size_t start = 0;
  // A newline inside the payload would end the field: split into several data lines.
  for (;;) {
    const size_t nl = payload.find('\n', start);
    out += "data: ";
    out +=
        payload.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

std::vector<std::string> parse_sse(std::string_view stream) {
  std::vector<std::string> events;
  std::string data;
  bool have = false;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t nl = stream.find('\n', pos);
    if (nl == std::string_view::npos) nl = stream.size();
    std::string_view line = stream.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    if (line.empty()) {
      if (have) events.push_back(data);
      data.clear();
      have = false;
    } else if (line.substr(0, 5) == "data:") {
      std::string_view v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (have) data += '\n';
      data += v;
      have = true;
    }
  }
  if (have) events.push_back(data);
  return events;
}

}  // namespace inkling::server
