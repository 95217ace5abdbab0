// Server-sent events framing (text/event-stream): one `data: <json>\n\n` event per chunk and the
// OpenAI terminator `data: [DONE]`. Payloads are single-line JSON, so no line splitting is needed.
// parse_sse() is the client side, used by tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inkling::server {

std::string sse_event(std::string_view payload);
inline std::string sse_done() {
  return "data: [DONE]\n\n";
}
// The data payloads of a complete event stream, in order (multi-line data joined with '\n';
// comments and other fields ignored).
std::vector<std::string> parse_sse(std::string_view stream);

// Writes to an httplib::DataSink-like object; false when the client is gone.
template <typename Sink>
bool sse_write(Sink& sink, const std::string& text) {
  return sink.write(text.data(), text.size());
}

}  // namespace inkling::server
