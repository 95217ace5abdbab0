// TemplateError: the one exception type used inside the Jinja engine. It never leaves the engine:
// jinja::Template converts it to a Status at its boundary.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace inkling::jinja {

enum class ErrorKind {
  kSyntax,     // TemplateSyntaxError (parse time)
  kRaise,      // raise_exception(msg): the message is the template's own
  kUndefined,  // UndefinedError
  kType,       // TypeError / ValueError from an operation or filter
  kSecurity,   // SecurityError (unsafe attribute in the immutable sandbox)
  kLimit,      // recursion / size limits of this engine (no Jinja2 equivalent)
  kRuntime,    // other runtime errors
};

class TemplateError : public std::runtime_error {
 public:
  TemplateError(ErrorKind kind, std::string message, int line = 0, int column = 0)
      : std::runtime_error(message),
        kind_(kind),
        message_(std::move(message)),
        line_(line),
        column_(column) {}
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  int line() const { return line_; }
  int column() const { return column_; }
  void set_line(int line) {
    if (line_ == 0) line_ = line;
  }

 private:
  ErrorKind kind_;
  std::string message_;
  int line_;
  int column_;
};

[[noreturn]] inline void throw_type_error(std::string message) {
  throw TemplateError(ErrorKind::kType, std::move(message));
}

}  // namespace inkling::jinja
