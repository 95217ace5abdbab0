// PeerWatch (see peer.h): liveness of the connection's socket by a non-blocking peek.
#include "peer.h"

#include <sys/socket.h>

#include <cerrno>

#include "listener.h"

namespace inkling::server {

PeerWatch::PeerWatch() : fd_(conn::socket_fd()) {}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // a pipelined next request: still there
  if (n == 0) return true;  // end of stream: the client closed
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace inkling::server
