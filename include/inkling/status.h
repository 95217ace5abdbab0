// Status and Result<T>: how every user-reachable failure (files, configs, requests) is reported.
// Messages are one line, prefixed with the component: "[load] model.llm.embed.weight: ...".
// No exception crosses the public API; INK_CHECK guards programmer invariants only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace inkling {

class Status {
 public:
  Status() = default;
  static Status success() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message), true); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Prepends context ("[load] file.safetensors: ") to an error; ok stays ok.
  Status with_context(const std::string& prefix) const {
    return failed_ ? Status(prefix + message_, true) : *this;
  }

 private:
  Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

// A value or an error Status. Access value() only after checking ok().
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).ok()) v_ = Status::error("internal: Result built from ok Status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "internal error: INK_CHECK(%s) failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace inkling

#define INK_CHECK(cond) ((cond) ? (void)0 : ::inkling::check_failed(#cond, __FILE__, __LINE__))

// Return early from a function returning Status or Result<U> when `expr` (a Status) failed.
#define INK_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::inkling::Status ink_status_ = (expr);    \
    if (!ink_status_.ok()) return ink_status_; \
  } while (0)

#define INK_CONCAT_INNER(a, b) a##b
#define INK_CONCAT(a, b) INK_CONCAT_INNER(a, b)
// `INK_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its Status.
#define INK_ASSIGN_OR_RETURN(lhs, rexpr) \
  INK_ASSIGN_OR_RETURN_IMPL(INK_CONCAT(ink_result_, __LINE__), lhs, rexpr)
#define INK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                              \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
