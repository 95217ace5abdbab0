// GET /: the chat page, and GET /openapi.json: the API's description (see web_ui.h).
#include "web_ui.h"

#include <cstddef>

namespace inkling::server {

extern const unsigned char kChatPage[];  // generated: chat_page.cpp
extern const size_t kChatPage_size;
extern const unsigned char kOpenApi[];  // generated: openapi_doc.cpp (docs/openapi.json)
extern const size_t kOpenApi_size;

void install_web_ui(httplib::Server& http) {
  http.Get("/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(reinterpret_cast<const char*>(kOpenApi), kOpenApi_size, "application/json");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    // Inline script and style only; API calls to this origin only; never framed.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                   "connect-src 'self'; img-src 'self' data:; media-src data:; base-uri 'none'; "
                   "form-action 'none'; frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Cache-Control", "no-cache");
    res.set_content(reinterpret_cast<const char*>(kChatPage), kChatPage_size,
                    "text/html; charset=utf-8");
  });
}

}  // namespace inkling::server
