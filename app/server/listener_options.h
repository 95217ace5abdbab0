// Where `inkling serve` listens and the limits on its connections (app/server/listener.h): set
// from the command line, kept apart from the listener so that server.h needs no socket code.
#pragma once

#include <string>

namespace inkling::server {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                // 0 = any free port
  int backlog = 1024;             // listen(2) backlog (the kernel caps it at somaxconn)
  int max_connections = 512;      // open connections; more are answered 503 and closed
  double request_timeout_s = 30;  // connect (or previous response) -> request fully received
  double idle_timeout_s = 5;      // keep-alive: longest wait for the next request
  double io_timeout_s = 5;        // one read or write making no progress
  double shutdown_grace_s = 10;   // drain: how long requests in flight may still run
};

}  // namespace inkling::server
