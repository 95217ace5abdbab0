// The built-in chat page: GET / (and HEAD) answers app/server/web/chat.html, compiled into the
// binary (cmake/embed_file.cmake). The page needs no API key to load; its API calls send the key
// the user types into it.
#pragma once

#include <httplib.h>

namespace inkling::server {

void install_web_ui(httplib::Server& http);

}  // namespace inkling::server
