// Noticing that an HTTP client has gone while its request is still being generated. cpp-httplib
// 0.11 gives handlers no socket and no `is_connection_closed`, so PeerWatch finds the connection's
// socket among this process's descriptors by its two endpoints (Request::local_addr/port and
// remote_addr/port; a TCP connection is the only socket with that pair) and later peeks at it:
// end-of-stream or a reset means the client closed its side. Only valid while the handler that
// created it runs (httplib closes the socket after the handler returns).
#pragma once

#include <httplib.h>

namespace inkling::server {

class PeerWatch {
 public:
  explicit PeerWatch(const httplib::Request& req);
  // True once the client has closed or reset the connection. A client that half-closes its
  // sending side while still waiting for the answer (rare for HTTP clients) also reads as gone.
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace inkling::server
