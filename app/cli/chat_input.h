// The chat's input rules: how lines make a message (trailing-backslash continuation, """ blocks,
// a paste arriving as one message) and which messages are local commands (/help, /bye, ...).
#pragma once

#include <string>

#include "line_input.h"

namespace inkling::cli {

struct ChatInput {
  enum class Kind { kMessage, kCommand, kEnd, kInterrupt };
  Kind kind = Kind::kEnd;
  std::string text;     // the message; for a command, its argument (trimmed)
  std::string command;  // "help", "bye", ... (lower case, without the slash)
};

// Reads one message or command:
//  - a line ending in a backslash continues on the next line (the backslash is dropped);
//  - a line starting with """ opens a block that ends at a line ending with """;
//  - on a terminal, lines already waiting when a line ends (a paste) join the same message;
//  - a first line starting with "/" is a command ("/name argument"); "//" sends one "/".
// Empty messages are skipped. Interrupt: Ctrl-C at the prompt (the partial message is dropped).
ChatInput read_chat_input(LineInput& in);

// The text of /help.
const char* chat_help();

}  // namespace inkling::cli
