// Runs the `inkling` binary as a user would (posix_spawn), with stdin from a file, stdout and
// stderr captured, and a kill after a timeout; reports exit code or signal.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tmp_files.h"

extern char** environ;

namespace inkling::testing {

inline const char* kCli = INKLING_BINARY_DIR "/inkling";

struct RunResult {
  bool timed_out = false;
  bool signaled = false;
  int signal = 0;
  int exit_code = -1;
  double seconds = 0;
  std::string out, err;
};

// Runs the CLI with `args`, stdout/stderr captured to files in `scratch`; kills it after
// `timeout_s` seconds.
inline RunResult run_cli(const std::vector<std::string>& args, const std::string& scratch,
                         double timeout_s = 30, const std::string& stdin_path = "/dev/null") {
  RunResult r;
  const std::string out_path = scratch + "/stdout.txt", err_path = scratch + "/stderr.txt";
  std::vector<std::string> full = {kCli};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = posix_spawn(&pid, kCli, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << kCli << ": " << std::strerror(rc);
    return r;
  }
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (w == pid) break;
    if (r.seconds > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  }
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

}  // namespace inkling::testing
