// Test helper: small HTTP client calls against an `inkling serve` child on 127.0.0.1 (JSON
// POSTs, /metrics values, streamed POSTs that may hang up early). Every call has a time limit.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

namespace inkling::testing {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A raw TCP connection to 127.0.0.1:port; -1 on failure.
inline int connect_local(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline httplib::Client local_client(int port, int read_timeout_s = 60) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(read_timeout_s, 0);
  c.set_write_timeout(10, 0);
  return c;
}

// POST JSON; the parsed answer (null when there was none), *status = the HTTP status or -1.
inline nlohmann::json post_json(int port, const std::string& path, const nlohmann::json& body,
                                int* status = nullptr) {
  auto c = local_client(port);
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  if (status) *status = r ? r->status : -1;
  if (!r) return nlohmann::json();
  return nlohmann::json::parse(r->body, nullptr, false);
}

// One value from /metrics (a line "NAME VALUE"), -1 when missing.
inline double metric_value(int port, const std::string& name) {
  auto c = local_client(port, 10);
  auto r = c.Get("/metrics");
  if (!r) return -1;
  std::smatch m;
  const std::regex re("(^|\n)" + name + " ([0-9.eE+-]+)");
  return std::regex_search(r->body, m, re) ? std::stod(m[2]) : -1;
}

// POST whose response body is handed to `receive` as it arrives (false = hang up).
inline httplib::Result post_streamed(httplib::Client& c, const std::string& path,
                                     const nlohmann::json& body,
                                     std::function<bool(const char*, size_t)> receive) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [receive](const char* d, size_t n, uint64_t, uint64_t) {
    return receive(d, n);
  };
  return c.send(req);
}

}  // namespace inkling::testing
