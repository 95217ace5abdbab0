// The server's own front door, in front of cpp-httplib's request handling: one listening socket
// (SO_REUSEADDR only, so a second server on the same port fails to bind; a backlog of our
// choosing instead of the 5 compiled into Debian's httplib), one thread per connection up to a
// cap (beyond it: an immediate 503), a watchdog that closes connections whose request has not
// fully arrived within a deadline (slowloris), and a bounded drain on shutdown.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "inkling/status.h"
#include "listener_options.h"

namespace inkling::server {

// Counters for /metrics and tests.
struct ListenerStats {
  std::atomic<int64_t> open{0};            // connections open now
  std::atomic<uint64_t> accepted{0};       // connections accepted in total
  std::atomic<uint64_t> rejected_full{0};  // answered 503: max_connections reached
  std::atomic<uint64_t> timed_out{0};      // closed by the watchdog (request too slow)
};

// The phase of the calling thread's connection, set from httplib callbacks (each connection is
// served on its own thread). No-ops on threads that serve no connection.
namespace conn {
void request_received();      // head and body are in: the request deadline stops
void response_written();      // the answer is out: the connection waits for the next request
void close_after_response();  // the body was not read to its end: do not reuse the connection
int socket_fd();              // the connection's socket (for liveness peeks), or -1
}  // namespace conn

class Listener {
 public:
  explicit Listener(ListenerOptions opts) : opts_(std::move(opts)) {}
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds through `http` (whose keep-alive loop needs its own listening socket) and applies our
  // socket options and backlog. Returns the bound port.
  Result<int> bind(httplib::Server& http);
  // Accepts and serves connections until stop(); then stops accepting and returns.
  void run(httplib::Server& http);
  // From any thread (signal thread included): makes run() return.
  void stop();
  bool stopping() const { return stop_.load(); }

  // Drain after run(): idle connections are closed at once and busy ones when their response is
  // out; waits up to shutdown_grace_s for requests in flight, then calls `cancel` (which must
  // end the remaining work) and waits for every connection thread to finish.
  void drain(const std::function<void()>& cancel);

  const ListenerStats& stats() const { return stats_; }
  const ListenerOptions& options() const { return opts_; }

  struct Conn;

 private:
  void serve(httplib::Server& http, int fd);
  void reject(int fd);
  void watchdog();
  size_t busy_connections();

  ListenerOptions opts_;
  ListenerStats stats_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop on stop()
  std::atomic<bool> stop_{false};
  std::atomic<bool> draining_{false};

  std::mutex mu_;
  std::condition_variable cv_;  // a connection ended / the watchdog should look again
  std::list<Conn*> conns_;
  std::thread watchdog_;
  bool watchdog_stop_ = false;
};

}  // namespace inkling::server
