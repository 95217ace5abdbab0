// Message assembly and command recognition for `inkling chat` (see chat_input.h).
#include "chat_input.h"
#include "trim.h"

#include <algorithm>
#include <cctype>

namespace inkling::cli {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

constexpr const char* kPrompt = "> ";
constexpr const char* kMore = "... ";

}  // namespace

const char* chat_help() {
  return "Commands:\n"
         "  /help              this list\n"
         "  /bye, /exit        leave (also Ctrl-D, or Ctrl-C twice at the prompt)\n"
         "  /reset             start a new conversation (the system message stays)\n"
         "  /system [TEXT]     set the system message (none: remove it); resets the conversation\n"
         "  /effort [X]        reasoning effort: none, minimal, low, medium, high, max or 0..0.99\n"
         "                     (none given: back to the template's default)\n"
         "  /think on|off      show or hide the model's reasoning\n"
         "  /save FILE         write the conversation as OpenAI JSON ({\"messages\": [...]})\n"
         "  /load FILE         continue a conversation saved by /save (or any OpenAI messages)\n"
         "  /image FILE        attach a PNG or JPEG to the next message (repeatable)\n"
         "  /audio FILE        attach a 16 kHz WAV recording to the next message (repeatable)\n"
         "  /stats             timings, context use and memory\n"
         "Input: end a line with \\ to continue on the next line, or put the message between\n"
         "lines starting and ending with \"\"\"; a paste is one message. Start a message with //\n"
         "to send a leading /. Ctrl-C stops an answer.\n";
}

ChatInput read_chat_input(LineInput& in) {
  for (;;) {
    ChatInput out;
    LineInput::Line first = in.read(kPrompt);
    if (first.kind == LineInput::Kind::kEnd) return out;
    if (first.kind == LineInput::Kind::kInterrupt) {
      out.kind = ChatInput::Kind::kInterrupt;
      return out;
    }
    std::string text;
    std::string line = first.text;
    bool ended = false;  // the input ended inside the message
    if (trim(line).rfind("\"\"\"", 0) == 0) {
      // A block: everything up to the line that ends with """.
      std::string rest = trim(line).substr(3);
      bool closed = rest.size() >= 3 && ends_with(rest, "\"\"\"");
      text = closed ? rest.substr(0, rest.size() - 3) : rest;
      bool first_line = true;
      while (!closed) {
        LineInput::Line l = in.read(kMore);
        if (l.kind == LineInput::Kind::kInterrupt) {
          out.kind = ChatInput::Kind::kInterrupt;
          return out;
        }
        if (l.kind == LineInput::Kind::kEnd) {
          ended = true;
          break;
        }
        std::string part = l.text;
        const std::string t = trim(part);
        if (ends_with(t, "\"\"\"")) {
          closed = true;
          part = part.substr(0, part.rfind("\"\"\""));
          if (trim(part).empty()) part.clear();
          if (part.empty()) break;
        }
        text += (first_line && text.empty() ? "" : "\n") + part;
        first_line = false;
      }
    } else {
      while (ends_with(line, "\\")) {
        text += line.substr(0, line.size() - 1) + "\n";
        LineInput::Line l = in.read(kMore);
        if (l.kind == LineInput::Kind::kInterrupt) {
          out.kind = ChatInput::Kind::kInterrupt;
          return out;
        }
        if (l.kind == LineInput::Kind::kEnd) {
          ended = true;
          line.clear();
          break;
        }
        line = l.text;
      }
      text += line;
      // The rest of a paste: lines that were already waiting when this one ended (a command is
      // one line: what follows it is the next input).
      const bool command = !text.empty() && text[0] == '/' && text.rfind("//", 0) != 0;
      while (!ended && !command && in.more_waiting()) {
        LineInput::Line l = in.read(kMore);
        if (l.kind != LineInput::Kind::kLine) break;
        text += "\n" + l.text;
      }
    }
    if (trim(text).empty()) continue;
    in.remember(text);
    if (text[0] == '/' && text.rfind("//", 0) != 0) {
      const size_t sp = text.find_first_of(" \t\n");
      out.kind = ChatInput::Kind::kCommand;
      out.command = text.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
      std::transform(out.command.begin(), out.command.end(), out.command.begin(),
                     [](unsigned char c) { return char(std::tolower(c)); });
      out.text = sp == std::string::npos ? "" : trim(text.substr(sp + 1));
      return out;
    }
    out.kind = ChatInput::Kind::kMessage;
    out.text = text.rfind("//", 0) == 0 ? text.substr(1) : text;
    return out;
  }
}

}  // namespace inkling::cli
