// Listener (see listener.h): accept loop, one thread per connection, the request-deadline
// watchdog and the drain. httplib parses and answers the requests on each connection; we own
// when a connection starts, how long it may take to send a request, and when it ends.
#include "listener.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace inkling::server {

// httplib 0.11 serves an accepted socket only from its own accept loop, through the private
// virtual Server::process_and_close_socket (keep-alive loop, request parsing, routing, close).
// An explicit instantiation may name a private member, which gives us a pointer to it, so that
// our accept loop can hand it the sockets it accepted and admitted.
using ProcessSocketFn = bool (httplib::Server::*)(socket_t);
ProcessSocketFn process_socket_fn();
template <ProcessSocketFn F>
struct ProcessSocketAccess {
  friend ProcessSocketFn process_socket_fn() { return F; }
};
template struct ProcessSocketAccess<&httplib::Server::process_and_close_socket>;

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

enum Phase : int { kWaiting = 0, kHandling = 1 };

}  // namespace

struct Listener::Conn {
  int http_fd = -1;  // httplib's descriptor (used only on the connection's own thread)
  int fd = -1;       // our duplicate of the socket: stays valid (and its number unused
                     // by others) until this connection's thread ends, whatever httplib
                     // closed; shutdown(2) on it acts on the shared socket
  std::atomic<int> phase{kWaiting};
  std::atomic<int64_t> since_ns{0};  // when the current phase began
  std::atomic<bool> close_after{false};
  std::atomic<bool> shut{false};
  bool linger = false;  // unread request bytes: close gracefully (connection thread only)
  Listener* owner = nullptr;

  void shut_down() {
    if (!shut.exchange(true)) ::shutdown(fd, SHUT_RDWR);
  }
};

namespace {

thread_local Listener::Conn* tl_conn = nullptr;

// A descriptor that reads end-of-stream and fails writes: one end of a socket pair whose other
// end is closed. Put in place of httplib's descriptor, it ends httplib's keep-alive loop at its
// next read without a byte of the real socket being parsed as a request.
int dead_fd() {
  static const int fd = [] {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    ::close(sv[1]);
    return sv[0];
  }();
  return fd;
}

// End httplib's use of the connection after the response it just wrote (connection thread).
void detach_from_http(Listener::Conn* c) {
  const int dead = dead_fd();
  if (dead >= 0) ::dup2(dead, c->http_fd);
}

}  // namespace

namespace conn {

void request_received() {
  if (tl_conn) {
    tl_conn->since_ns.store(now_ns());
    tl_conn->phase.store(kHandling);
  }
}

void response_written() {
  Listener::Conn* c = tl_conn;
  if (!c) return;
  c->since_ns.store(now_ns());
  c->phase.store(kWaiting);
  if (c->close_after.load()) {
    // Unread body bytes would be parsed as the next request. The response is out: stop
    // httplib here and close gracefully (serve(): FIN, then discard what the client still
    // sends for a moment, so it reads the response instead of a reset).
    detach_from_http(c);
    c->linger = true;
  } else if (c->owner->stopping()) {
    detach_from_http(c);  // draining: no next request on this connection
    c->shut_down();
  }
}

void close_after_response() {
  if (tl_conn) tl_conn->close_after.store(true);
}

int socket_fd() {
  return tl_conn ? tl_conn->fd : -1;
}

}  // namespace conn

Listener::~Listener() {
  stop();
  drain([] {});
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Result<int> Listener::bind(httplib::Server& http) {
  // Every connection holds two descriptors (httplib's and our duplicate): make room for the cap.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      uint64_t(opts_.max_connections) * 2 + 64 > rl.rlim_cur)
    return Status::error("[server] --max-connections " + std::to_string(opts_.max_connections) +
                         " needs " + std::to_string(opts_.max_connections * 2 + 64) +
                         " file descriptors; the limit (ulimit -n) is " +
                         std::to_string(rl.rlim_cur));
  int fd = -1;
  http.set_socket_options([&fd](socket_t s) {
    // SO_REUSEADDR lets a restarted server bind while old connections sit in TIME_WAIT; not
    // SO_REUSEPORT (httplib's default), under which a second server binds the same port and the
    // kernel splits the connections between the two.
    int yes = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    fd = s;
  });
  int port = opts_.port;
  errno = 0;
  if (opts_.port == 0) {
    port = http.bind_to_any_port(opts_.host);
    if (port <= 0) port = -1;
  } else if (!http.bind_to_port(opts_.host, opts_.port)) {
    port = -1;
  }
  const int err = errno;
  if (port < 0) {
    std::string why = err ? std::strerror(err) : "no usable address";
    if (err == EADDRINUSE) why += " (another server is listening on this port)";
    return Status::error("[server] cannot bind " + opts_.host + ":" + std::to_string(opts_.port) +
                         ": " + why);
  }
  // httplib listened with a backlog of 5: a burst of connections overflows it and clients wait
  // for SYN retransmits (1 s, 3 s, ...) or are reset. Listening again resizes the backlog.
  if (::listen(fd, opts_.backlog) != 0)
    return Status::error(std::string("[server] listen: ") + std::strerror(errno));
  listen_fd_ = fd;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Status::error(std::string("[server] eventfd: ") + std::strerror(errno));
  return port;
}

void Listener::stop() {
  if (stop_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
}

void Listener::run(httplib::Server& http) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    watchdog_stop_ = false;
  }
  watchdog_ = std::thread([this] { watchdog(); });
  while (!stop_.load() && listen_fd_ >= 0) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stop_.load()) break;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (EMFILE/ENFILE) or memory: the connection stays in the backlog; back
      // off instead of spinning on a readable listening socket.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    stats_.accepted += 1;
    // No Nagle: httplib writes a response's headers and body in separate sends, and on a
    // keep-alive connection the body then waited for the client's delayed ACK (40 ms a request,
    // and streamed tokens held back the same way).
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (stats_.open.load() >= opts_.max_connections) {
      reject(fd);
      continue;
    }
    stats_.open += 1;
    try {
      std::thread([this, &http, fd] { serve(http, fd); }).detach();
    } catch (const std::system_error&) {  // no thread for it (resource limits)
      stats_.open -= 1;
      reject(fd);
    }
  }
  // Stop accepting: close the listening socket so new clients are refused at once rather than
  // queued in a backlog nobody reads.
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void Listener::reject(int fd) {
  stats_.rejected_full += 1;
  static const char kBody[] =
      "{\"error\":{\"message\":\"too many connections; retry later\",\"type\":\"server_error\","
      "\"param\":null,\"code\":\"too_many_connections\"}}";
  const std::string msg = std::string(
                              "HTTP/1.1 503 Service Unavailable\r\n"
                              "Content-Type: application/json\r\nRetry-After: 1\r\n"
                              "Connection: close\r\nContent-Length: ") +
                          std::to_string(sizeof(kBody) - 1) + "\r\n\r\n" + kBody;
  [[maybe_unused]] ssize_t n = ::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

namespace {

// Graceful close with request bytes unread: send FIN after the response, then read and discard
// what the client still sends (at most 2 s and 64 MiB) so that closing does not reset the
// connection before the client has read the response.
void linger_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto until = Clock::now() + std::chrono::seconds(2);
  char buf[16384];
  size_t total = 0;
  while (total < (size_t(64) << 20)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    total += size_t(n);
  }
}

}  // namespace

void Listener::serve(httplib::Server& http, int fd) {
  Conn c;
  c.owner = this;
  c.fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  c.since_ns.store(now_ns());
  if (c.fd < 0) {
    ::close(fd);
  } else {
    {
      std::lock_guard<std::mutex> lk(mu_);
      conns_.push_back(&c);
    }
    c.http_fd = fd;
    tl_conn = &c;
    // Keep-alive loop: requests are parsed and answered until the client or the watchdog ends
    // the connection; httplib closes its descriptor at the end.
    (http.*process_socket_fn())(fd);
    tl_conn = nullptr;
    if (c.linger && !c.shut.load()) linger_close(c.fd);
  }
  std::lock_guard<std::mutex> lk(mu_);
  conns_.remove(&c);
  if (c.fd >= 0) ::close(c.fd);
  stats_.open -= 1;
  cv_.notify_all();
}

void Listener::watchdog() {
  const auto limit = int64_t(opts_.request_timeout_s * 1e9);
  std::unique_lock<std::mutex> lk(mu_);
  while (!watchdog_stop_) {
    cv_.wait_for(lk, std::chrono::milliseconds(100));
    const int64_t now = now_ns();
    const bool draining = draining_.load();
    for (Conn* c : conns_) {
      if (c->phase.load() != kWaiting || c->shut.load()) continue;
      // Waiting: between connect (or the last response) and a fully received request. Too long
      // is a client sending slowly on purpose or by accident; draining, no request is wanted.
      if (draining) {
        c->shut_down();
      } else if (now - c->since_ns.load() > limit) {
        stats_.timed_out += 1;
        c->shut_down();
      }
    }
  }
}

size_t Listener::busy_connections() {
  size_t n = 0;
  for (Conn* c : conns_) n += c->phase.load() == kHandling && !c->shut.load();
  return n;
}

void Listener::drain(const std::function<void()>& cancel) {
  stop();
  draining_.store(true);
  std::unique_lock<std::mutex> lk(mu_);
  cv_.notify_all();  // the watchdog closes the waiting connections now
  const auto grace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(opts_.shutdown_grace_s));
  cv_.wait_for(lk, grace, [this] { return busy_connections() == 0; });
  if (!conns_.empty()) {
    lk.unlock();
    cancel();  // ends the work still running: its handlers answer and return
    lk.lock();
    if (!cv_.wait_for(lk, std::chrono::seconds(5), [this] { return conns_.empty(); })) {
      for (Conn* c : conns_) c->shut_down();  // a handler stuck writing to a client
      cv_.wait(lk, [this] { return conns_.empty(); });
    }
  }
  watchdog_stop_ = true;
  cv_.notify_all();
  lk.unlock();
  if (watchdog_.joinable()) watchdog_.join();
}

}  // namespace inkling::server
