// Noticing that an HTTP client has gone while its request is still being generated: the
// Listener serves each connection on its own thread and knows its socket (conn::socket_fd());
// PeerWatch peeks at it, and end-of-stream or a reset means the client closed its side. Only
// valid on the connection's thread, while its handler runs.
#pragma once

namespace inkling::server {

class PeerWatch {
 public:
  PeerWatch();
  // True once the client has closed or reset the connection. A client that half-closes its
  // sending side while still waiting for the answer (rare for HTTP clients) also reads as gone.
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace inkling::server
