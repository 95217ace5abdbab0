// `inkling chat` as a user drives it, on the demo model (models/inkling-demo, it loads in a tenth
// of a second): local
// commands, multi-line input, /save + /load, a conversation longer than the context, options
// checked before the model loads, and plain output (no escape codes) when piped. The terminal
// behaviour (line editing, Ctrl-C stopping an answer, Ctrl-C twice or Ctrl-D to leave) runs the
// binary under a pseudo-terminal.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::read_file;
using testing::run_cli;
using testing::RunResult;
using testing::TempDir;
using testing::write_file;

class CliChatFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(model_ + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  }
  // chat with `input` on stdin (a file) and the given extra flags.
  RunResult chat(const std::string& input, std::vector<std::string> extra = {}) {
    write_file(tmp_.file("in.txt"), input);
    std::vector<std::string> args = {"chat", "-m",     model_, "-n",
                                     "8",    "--seed", "5",    "--no-history"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_cli(args, tmp_.path(), 120, tmp_.file("in.txt"));
    EXPECT_FALSE(r.timed_out);
    EXPECT_FALSE(r.signaled) << r.err;
    // Piped: plain text, never an escape sequence.
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    return r;
  }
  nlohmann::json saved(const std::string& name) {
    auto j = nlohmann::json::parse(read_file(tmp_.file(name)), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << read_file(tmp_.file(name));
    return j.is_discarded() ? nlohmann::json::array() : j["messages"];
  }
  const std::string model_ = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
  TempDir tmp_;
};

TEST_F(CliChatFeatures, CommandsAreHandledLocally) {
  auto r = chat(
      "/help\n/think on\n/think maybe\n/effort bogus\n/effort low\n/frobnicate\n"
      "/system Be brief.\nHello\n/stats\n/save " +
      tmp_.file("s.json") + "\n/bye\nnever sent\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Commands:"));
  // Piped, commands are acknowledged on a terminal only: the output holds the answers.
  EXPECT_THAT(r.out, Not(HasSubstr("(reasoning shown)")));
  EXPECT_THAT(r.out, HasSubstr("prompt eval"));  // /stats
  EXPECT_THAT(r.out, HasSubstr("peak RSS"));
  EXPECT_THAT(r.err, HasSubstr("/think: expected on or off"));
  EXPECT_THAT(r.err, HasSubstr("/effort: expected"));
  EXPECT_THAT(r.err, HasSubstr("unknown command /frobnicate"));
  // Only "Hello" reached the model, after the system message; nothing after /bye.
  const auto m = saved("s.json");
  ASSERT_EQ(m.size(), 3u) << m.dump();
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "Be brief.");
  EXPECT_EQ(m[1]["content"], "Hello");
  EXPECT_EQ(m[2]["role"], "assistant");
}

TEST_F(CliChatFeatures, MultiLineMessagesAndSaveLoadRoundTrip) {
  auto r = chat("line one\\\nline two\n\"\"\"\nblock a\n\nblock c\n\"\"\"\n//slash text\n/save " +
                tmp_.file("a.json") + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto a = saved("a.json");
  ASSERT_EQ(a.size(), 6u) << a.dump();
  EXPECT_EQ(a[0]["content"], "line one\nline two");
  EXPECT_EQ(a[2]["content"], "block a\n\nblock c");
  EXPECT_EQ(a[4]["content"], "/slash text");
  for (int i : {1, 3, 5}) EXPECT_EQ(a[i]["role"], "assistant");

  // Loaded, the conversation goes on from there.
  r = chat("/load " + tmp_.file("a.json") + "\nNext\n/save " + tmp_.file("b.json") + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto b = saved("b.json");
  ASSERT_EQ(b.size(), 8u) << b.dump();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(b[i], a[i]) << i;
  EXPECT_EQ(b[6]["content"], "Next");

  // A bad file is reported and the chat goes on.
  write_file(tmp_.file("bad.json"), R"({"messages": [{"role": "wizard", "content": "x"}]})");
  r = chat("/load " + tmp_.file("bad.json") + "\n/load " + tmp_.file("missing.json") + "\nHi\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("message 0: unknown role 'wizard'"));
  EXPECT_THAT(r.err, HasSubstr("missing.json: cannot read"));
}

TEST_F(CliChatFeatures, ContextFullDropsTheOldestTurns) {
  std::string turns;
  for (int i = 0; i < 12; ++i)
    turns += "Tell me something about the number " + std::to_string(i) + "\n";
  std::string huge;
  for (int i = 0; i < 300; ++i) huge += "word ";
  turns += huge + "\n/save " + tmp_.file("c.json") + "\n";
  auto r = chat(turns, {"-c", "128"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("context full: dropped the"));
  EXPECT_THAT(r.err, HasSubstr("tokens of context and the limit is 128"));  // the huge message
  const auto c = saved("c.json");
  ASSERT_GE(c.size(), 2u);
  EXPECT_LT(c.size(), 24u);  // older turns were dropped
  EXPECT_EQ(c[c.size() - 2]["content"], "Tell me something about the number 11");
}

TEST_F(CliChatFeatures, OptionsAreCheckedBeforeTheModelLoads) {
  auto r =
      run_cli({"chat", "-m", tmp_.file("nowhere"), "--reasoning-effort", "bogus"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--reasoning-effort"));
  r = run_cli({"chat", "-m", tmp_.file("nowhere"), "--temperature", "nan"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--temperature"));
  write_file(tmp_.file("m.gguf"), "GGUF");
  r = run_cli({"chat", "-m", tmp_.file("m.gguf")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("GGUF is not supported"));
  r = run_cli({"generate", "-m", model_ + "/model.safetensors", "-p", "x"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("-m takes the model folder that holds it: -m " + model_));
}

// ---- under a pseudo-terminal ----

struct Pty {
  pid_t pid = -1;
  int fd = -1;
  std::string seen;  // everything the program wrote (stdout and stderr share the terminal)
  // Reads until `want` appears after `from`, or `timeout_s` passes; true when it appeared.
  bool wait_for(const std::string& want, size_t from, double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (seen.find(want, from) == std::string::npos) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
        return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) {
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return seen.find(want, from) != std::string::npos;
        seen.append(buf, size_t(n));
      }
    }
    return true;
  }
  // Waits until the terminal is out of canonical mode (libedit is reading keys); the master
  // side reports the terminal's settings.
  bool wait_editing(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      termios t{};
      if (::tcgetattr(fd, &t) == 0 && !(t.c_lflag & ICANON)) return true;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
        return false;
      wait_for("\x01never\x02", seen.size(), 0.02);
    }
  }
  void send(const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), ssize_t(s.size())); }
  // Drains output until the program exits; its exit code, or -1 (killed after the timeout).
  int wait_exit(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
        break;
      wait_for("\x01never\x02", seen.size(), 0.05);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
    return -1;
  }
  ~Pty() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (fd >= 0) ::close(fd);
  }
};

std::unique_ptr<Pty> spawn_pty(const std::vector<std::string>& args, const std::string& home) {
  auto p = std::make_unique<Pty>();
  winsize ws{};
  ws.ws_row = 40;
  ws.ws_col = 120;
  p->pid = forkpty(&p->fd, nullptr, nullptr, &ws);
  if (p->pid == 0) {
    std::vector<std::string> full = {testing::kCli};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::setenv("HOME", home.c_str(), 1);
    ::setenv("XDG_STATE_HOME", (home + "/state").c_str(), 1);
    ::setenv("TERM", "xterm", 1);
    ::execv(testing::kCli, argv.data());
    ::_exit(127);
  }
  return p;
}

TEST_F(CliChatFeatures, TerminalCtrlCStopsAnAnswerThenLeaves) {
  // The demo model's ends of answer (<|endoftext|>, <|message_model|>, end of sampling,
  // <|end_message|>) banned, so only Ctrl-C (or the context, seconds away) ends it.
  auto p = spawn_pty({"chat", "-m", model_, "-n", "100000", "--seed", "1", "-t", "1",
                      "--logit-bias", "4001=-100,4003=-100,4008=-100,4012=-100"},
                     tmp_.path());
  ASSERT_GT(p->pid, 0);
  ASSERT_TRUE(p->wait_for("/help for commands", 0, 60)) << p->seen;
  ASSERT_TRUE(p->wait_for("> ", 0, 10)) << p->seen;
  size_t mark = p->seen.size();
  p->send("Hello there\r");
  // The answer (or the hidden-reasoning indicator) is streaming: stop it.
  ASSERT_TRUE(p->wait_for("Hello there", mark, 10)) << p->seen;
  mark = p->seen.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  p->send("\x03");
  ASSERT_TRUE(p->wait_for("(stopped)", mark, 30)) << p->seen.substr(mark, 2000);
  ASSERT_TRUE(p->wait_for("answer ", mark, 10)) << p->seen.substr(mark, 2000);  // timing line
  // Back at the prompt: the chat still works, and Ctrl-C twice leaves.
  mark = p->seen.size();
  p->send("/think on\r");
  ASSERT_TRUE(p->wait_for("(reasoning shown)", mark, 10)) << p->seen.substr(mark);
  p->send("\x03");
  ASSERT_TRUE(p->wait_for("Ctrl-C again", mark, 10)) << p->seen.substr(mark);
  p->send("\x03");
  EXPECT_EQ(p->wait_exit(20), 0) << p->seen.substr(mark);
  // The history file holds what was typed.
  const std::string hist = read_file(tmp_.path() + "/state/inkling/chat_history");
  EXPECT_THAT(hist, HasSubstr("think"));
}

TEST_F(CliChatFeatures, TerminalCtrlDLeaves) {
  auto p = spawn_pty({"chat", "-m", model_, "-n", "4", "--no-history"}, tmp_.path());
  ASSERT_GT(p->pid, 0);
  ASSERT_TRUE(p->wait_for("> ", 0, 60)) << p->seen;
  // libedit draws the prompt, then puts the terminal in its editing mode: a ^D typed in
  // between is the line discipline's end-of-file, which the mode switch may drop.
  ASSERT_TRUE(p->wait_editing(20));
  p->send("\x04");
  EXPECT_EQ(p->wait_exit(20), 0) << p->seen;
}

}  // namespace
}  // namespace inkling
