// Helpers of the `inkling quantize` tests: the affine widths this build's format registry runs,
// running quantize, reading an output folder's tensors, and a background run that a test can
// interrupt.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/run_cli.h"
#include "base/safetensors.h"
#include "ops/formats.h"

namespace inkling::testing {

inline std::string fixture_path(const std::string& rel) {
  return std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/" + rel;
}

// MLX affine widths the format registry runs ("affine qN" entries): the widths the engine loads.
inline std::set<int> registered_affine_widths() {
  std::set<int> out;
  for (const FormatEntry& f : weight_formats())
    if (f.family == WeightFormat::kAffine) {
      const std::string name = f.name;
      const size_t q = name.rfind('q');
      if (q != std::string::npos) out.insert(std::atoi(name.c_str() + q + 1));
    }
  return out;
}

// Every tensor of a folder's safetensors files: name -> (dtype, shape, bytes).
struct StoredTensor {
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
inline std::map<std::string, StoredTensor> read_tensors(const std::string& dir) {
  std::map<std::string, StoredTensor> out;
  auto store = TensorStore::open_dir(dir);
  if (!store.ok()) {
    ADD_FAILURE() << store.status().message();
    return out;
  }
  for (const auto& [name, t] : store->all())
    out[name] = {t->dtype, t->shape,
                 std::string(reinterpret_cast<const char*>(t->data), t->nbytes)};
  return out;
}

// The GiB column of a line of the dry run's size table ("  routed experts ... 105.000"), or -1.
inline double table_gib(const std::string& out, const std::string& label) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  " + label + " ", 0) == 0) {
      const size_t sp = line.find_last_of(' ');
      return std::stod(line.substr(sp + 1));
    }
  return -1;
}

// `inkling quantize` started in the background with extra environment variables.
class BackgroundRun {
 public:
  BackgroundRun(const std::vector<std::string>& args, const std::string& scratch,
                const std::vector<std::string>& env_extra) {
    std::vector<std::string> full = {kCli};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    env_ = env_extra;
    for (char** e = environ; *e; ++e) env_.push_back(*e);
    std::vector<char*> envp;
    for (auto& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    err_path_ = scratch + "/bg_stderr.txt";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, kCli, &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~BackgroundRun() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  bool started() const { return pid_ > 0; }
  void signal(int sig) { ::kill(pid_, sig); }
  // Exit code, or 128 + signal; -1 on timeout.
  int wait(double timeout_s = 60) {
    const auto t0 = std::chrono::steady_clock::now();
    int status = 0;
    while (true) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
          timeout_s) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reaped_ = true;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  std::string err() const { return read_file(err_path_); }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::vector<std::string> env_;
  std::string err_path_;
};

// Waits until `pred` holds (polling), up to timeout_s.
template <typename F>
bool wait_for(F pred, double timeout_s = 30) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!pred()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace inkling::testing
