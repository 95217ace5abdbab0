// Reading the chat's input lines: with libedit (line editing, history kept in a file) when stdin
// and stdout are terminals, plain lines from stdin otherwise. Ctrl-C at the prompt is reported as
// an interrupt (the SIGINT handler of chat sets the flag this reads), Ctrl-D as end of input.
#pragma once

#include <atomic>
#include <csignal>
#include <memory>
#include <string>

namespace inkling::cli {

// Set by the chat's SIGINT handler; cleared by whoever acts on it.
extern volatile std::sig_atomic_t g_sigint;

class LineInput {
 public:
  enum class Kind { kLine, kEnd, kInterrupt };
  struct Line {
    Kind kind = Kind::kEnd;
    std::string text;
  };
  // Editing when `interactive`; `history_path` (may be empty: no history file) is read now and
  // written after every entry.
  static std::unique_ptr<LineInput> open(bool interactive, const std::string& history_path);
  virtual ~LineInput() = default;
  // One physical line (without its newline) read after showing `prompt` (terminal only).
  virtual Line read(const std::string& prompt) = 0;
  // True when more input is already waiting (the rest of a paste); false when not interactive.
  virtual bool more_waiting() = 0;
  virtual void remember(const std::string& entry) = 0;
};

// $XDG_STATE_HOME/inkling/chat_history, else ~/.local/state/inkling/chat_history (the folder is
// created); empty when neither is known or the folder cannot be made.
std::string default_history_path();

}  // namespace inkling::cli
