// Test helper: a tiny real-vocabulary model generated into the build dir (tools/
// make_tiny_chat_model) and an `inkling serve --port 0` child process on 127.0.0.1 whose port is
// read from its first stdout line. The child is stopped with SIGTERM and must exit cleanly.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace inkling::testing {

inline const char* kInkling = INKLING_BINARY_DIR "/inkling";
inline const std::string kTokenizerDir = INKLING_SOURCE_DIR "/tests/data/inkling";
inline const std::string kTinyModel = INKLING_BINARY_DIR "/tiny_chat_model";

inline int spawn_wait(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Writes `text` to `path` atomically (a temporary file renamed over it): ctest runs the tests of
// one suite as parallel processes, and a server starting in one must never read the script
// half-written by another.
inline void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream(tmp) << text;
  std::filesystem::rename(tmp, path);
}

// Empty string = ready; else the reason the tests must be skipped.
inline std::string ensure_tiny_model() {
  namespace fs = std::filesystem;
  if (!fs::exists(kTokenizerDir + "/tokenizer.json"))
    return "no tokenizer files at " + kTokenizerDir;
  if (fs::exists(kTinyModel + "/model.safetensors") && fs::exists(kTinyModel + "/tokenizer.json"))
    return "";
  // ctest starts several test processes at once: each makes the model in a folder of its own and
  // renames it into place, so no server ever loads a half-written one. The first rename wins.
  const std::string tmp = kTinyModel + ".tmp." + std::to_string(getpid());
  if (spawn_wait({INKLING_BINARY_DIR "/make_tiny_chat_model", tmp, kTokenizerDir}) != 0)
    return "make_tiny_chat_model failed";
  std::error_code ec;
  fs::rename(tmp, kTinyModel, ec);
  fs::remove_all(tmp, ec);  // lost the race (the folder exists now): drop ours
  return fs::exists(kTinyModel + "/model.safetensors") ? "" : "tiny model missing after make";
}

class ServerProcess {
 public:
  // Starts the server on `model` (default: the tiny random chat model); port() is 0 when it
  // failed to come up within 60 s.
  explicit ServerProcess(std::vector<std::string> extra, const std::string& model = kTinyModel) {
    // A server that answers early (413) and closes while a client still sends would otherwise
    // kill the test process: Debian's httplib 0.11 client sends without MSG_NOSIGNAL.
    std::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    if (pipe(fds) != 0) return;
    std::vector<std::string> args = {kInkling, "serve", "-m", model, "--port", "0", "-t", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    const bool ok = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (!ok) {
      close(fds[0]);
      pid_ = 0;
      return;
    }
    // Read the "listening on http://HOST:PORT" line.
    std::string line;
    const auto t0 = std::chrono::steady_clock::now();
    char c;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60) &&
           read(fds[0], &c, 1) == 1) {
      if (c == '\n') break;
      line += c;
    }
    close(fds[0]);
    const size_t colon = line.rfind(':');
    if (line.find("listening on") != std::string::npos && colon != std::string::npos)
      port_ = std::atoi(line.c_str() + colon + 1);
  }
  ~ServerProcess() { stop(); }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Resident memory of the server process in KiB (VmRSS), -1 when unreadable.
  long rss_kib() const {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof(line), f))
      if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    std::fclose(f);
    return kib;
  }
  // SIGTERM, then the exit status (0 = clean shutdown); -1 when it had to be killed.
  int stop() {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; ++i) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = 0;
        return exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    pid_ = 0;
    return exit_code_ = -1;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  int exit_code_ = -1;
};

// A test suite sharing one server: started before the first test with Derived::server_args(),
// stopped (and required to exit cleanly) after the last; every test is skipped when the tiny
// model cannot be made.
template <class Derived>
class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = ensure_tiny_model();
    if (!skip_.empty()) return;
    server_ = new ServerProcess(Derived::server_args());
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << "server did not shut down cleanly";
    }
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_GT(server_->port(), 0) << "server did not start";
  }
  static inline std::string skip_;
  static inline ServerProcess* server_ = nullptr;
};

}  // namespace inkling::testing
