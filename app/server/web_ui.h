// The built-in chat page: GET / (and HEAD) answers app/server/web/chat.html, compiled into the
// binary (cmake/embed_file.cmake). The page needs no API key to load; its API calls send the key
// the user types into it. GET /openapi.json answers docs/openapi.json, compiled in likewise: the
// OpenAPI 3.1 description of every route (tests/server/test_server_openapi.cpp holds the two
// together).
#pragma once

#include <httplib.h>

namespace inkling::server {

void install_web_ui(httplib::Server& http);

}  // namespace inkling::server
