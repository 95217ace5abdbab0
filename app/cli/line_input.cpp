// LineInput with libedit on a terminal, std::getline elsewhere (see line_input.h).
#include "line_input.h"

#include <histedit.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <filesystem>
#include <iostream>

namespace inkling::cli {

volatile std::sig_atomic_t g_sigint = 0;

namespace {

class PlainInput final : public LineInput {
 public:
  // prompt: typed at a terminal while the output goes elsewhere (`chat | tee log`), the prompt
  // goes to stderr.
  explicit PlainInput(bool prompt) : prompt_(prompt) {}
  Line read(const std::string& prompt) override {
    if (prompt_) {
      std::fputs(prompt.c_str(), stderr);
      std::fflush(stderr);
    }
    Line l;
    if (std::getline(std::cin, l.text)) {
      if (!l.text.empty() && l.text.back() == '\r') l.text.pop_back();
      l.kind = Kind::kLine;
    }
    return l;
  }
  bool more_waiting() override { return false; }
  void remember(const std::string&) override {}

 private:
  bool prompt_;
};

// libedit's character source: one UTF-8 character from fd 0, -1 when a SIGINT interrupted the
// read (libedit's own reader retries after EINTR, so Ctrl-C would not end the line).
int read_char(EditLine*, wchar_t* out) {
  std::mbstate_t st{};
  for (;;) {
    // Wait for input with SIGINT unblocked only inside ppoll(): a Ctrl-C that arrived before
    // the wait (while an answer or a command finished) is seen here, never slept through.
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &orig);
    int ready = 0;
    if (!g_sigint) {
      pollfd p{0, POLLIN, 0};
      ready = ::ppoll(&p, 1, nullptr, &orig);
    }
    const int poll_errno = errno;
    pthread_sigmask(SIG_SETMASK, &orig, nullptr);
    if (g_sigint) return -1;
    if (ready < 0) {
      if (poll_errno == EINTR) continue;
      return -1;
    }
    char c = 0;
    const ssize_t n = ::read(0, &c, 1);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR && !g_sigint) continue;
      return -1;
    }
    wchar_t wc = 0;
    const size_t r = std::mbrtowc(&wc, &c, 1, &st);
    if (r == size_t(-2)) continue;  // more bytes of this character to come
    if (r == size_t(-1)) {          // not valid in this locale: pass the byte on
      st = {};
      wc = wchar_t(static_cast<unsigned char>(c));
    }
    *out = wc;
    return 1;
  }
}

std::string g_prompt;  // libedit asks for the prompt through a plain function pointer

const char* prompt_fn(EditLine*) {
  return g_prompt.c_str();
}

// The character type libedit runs under: the user's (UTF-8 when the environment names none, as
// in many containers), set only while libedit works, so the rest of the program keeps "C".
class EditLocale {
 public:
  EditLocale() {
    const char* cur = std::setlocale(LC_CTYPE, nullptr);
    saved_ = cur ? cur : "C";
    const char* set = std::setlocale(LC_CTYPE, "");
    if (!set || std::string(set) == "C" || std::string(set) == "POSIX")
      if (!std::setlocale(LC_CTYPE, "C.UTF-8")) std::setlocale(LC_CTYPE, saved_.c_str());
  }
  ~EditLocale() { std::setlocale(LC_CTYPE, saved_.c_str()); }

 private:
  std::string saved_;
};

class EditInput final : public LineInput {
 public:
  explicit EditInput(std::string history_path) : path_(std::move(history_path)) {
    EditLocale loc;
    el_ = el_init("inkling", stdin, stdout, stderr);
    hist_ = history_init();
    HistEvent ev;
    history(hist_, &ev, H_SETSIZE, 1000);
    history(hist_, &ev, H_SETUNIQUE, 1);
    if (!path_.empty()) history(hist_, &ev, H_LOAD, path_.c_str());
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_HIST, history, hist_);
    el_set(el_, EL_PROMPT, prompt_fn);
    el_set(el_, EL_GETCFN, read_char);
    el_source(el_, nullptr);  // the user's ~/.editrc, if any
  }
  ~EditInput() override {
    history_end(hist_);
    el_end(el_);
  }
  Line read(const std::string& prompt) override {
    g_prompt = prompt;
    int count = 0;
    EditLocale loc;
    const char* s = el_gets(el_, &count);
    Line l;
    if (g_sigint) {
      l.kind = Kind::kInterrupt;
      el_reset(el_);
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      return l;
    }
    if (!s || count <= 0) return l;  // Ctrl-D at an empty line, or input closed
    l.kind = Kind::kLine;
    l.text.assign(s, size_t(count));
    while (!l.text.empty() && (l.text.back() == '\n' || l.text.back() == '\r')) l.text.pop_back();
    return l;
  }
  bool more_waiting() override {
    pollfd p{0, POLLIN, 0};
    return ::poll(&p, 1, 30) == 1 && (p.revents & POLLIN);
  }
  void remember(const std::string& entry) override {
    HistEvent ev;
    history(hist_, &ev, H_ENTER, entry.c_str());
    if (!path_.empty()) {
      history(hist_, &ev, H_SAVE, path_.c_str());
      ::chmod(path_.c_str(), 0600);  // what you typed is yours alone
    }
  }

 private:
  std::string path_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
};

}  // namespace

std::unique_ptr<LineInput> LineInput::open(bool interactive, const std::string& history_path) {
  if (interactive) return std::make_unique<EditInput>(history_path);
  return std::make_unique<PlainInput>(::isatty(0) == 1);
}

std::string default_history_path() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    dir = fs::path(x) / "inkling";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = fs::path(h) / ".local" / "state" / "inkling";
  else
    return "";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "";
  return (dir / "chat_history").string();
}

}  // namespace inkling::cli
