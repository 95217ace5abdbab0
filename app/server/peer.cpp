// PeerWatch (see peer.h): socket lookup through /proc/self/fd, liveness by a non-blocking peek.
#include "peer.h"

#include "listener.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace inkling::server {

namespace {

// Numeric host and port of a socket address, formatted the way httplib does (getnameinfo).
bool endpoint(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof(h), p, sizeof(p),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  *host = h;
  *port = std::atoi(p);
  return true;
}

bool matches(int fd, const httplib::Request& req) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  std::string host;
  int port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !endpoint(a, len, &host, &port) || port != req.remote_port || host != req.remote_addr)
    return false;
  len = sizeof(a);
  return getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
         endpoint(a, len, &host, &port) && port == req.local_port && host == req.local_addr;
}

}  // namespace

PeerWatch::PeerWatch(const httplib::Request& req) {
  // Served by our Listener: the connection's socket is known (no descriptor scan).
  if ((fd_ = conn::socket_fd()) >= 0) return;
  if (req.remote_port <= 0 || req.local_port <= 0) return;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  const int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != self && matches(fd, req)) {
      fd_ = fd;
      break;
    }
  }
  closedir(d);
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // a pipelined next request: still there
  if (n == 0) return true;  // end of stream: the client closed
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace inkling::server
