#include "base/cpus.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace inkling {
namespace {

int affinity_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return 0;
}

// cgroup v2 "cpu.max" of this process's cgroup: "max 100000" (no quota) or "QUOTA PERIOD".
int cgroup_quota_cpus() {
#if defined(__linux__)
  std::ifstream cg("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cg, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return 0;
  std::ifstream f("/sys/fs/cgroup" + path + "/cpu.max");
  std::string quota;
  double period = 0;
  if (!(f >> quota >> period) || quota == "max" || period <= 0) return 0;
  double q = 0;
  std::istringstream(quota) >> q;
  if (q <= 0) return 0;
  return std::max(1, int(std::ceil(q / period)));
#else
  return 0;
#endif
}

}  // namespace

int available_cpus() {
  int n = affinity_cpus();
  if (n <= 0) n = int(std::thread::hardware_concurrency());
  if (const int q = cgroup_quota_cpus(); q > 0) n = n > 0 ? std::min(n, q) : q;
  return std::max(1, n);
}

std::string available_cpus_source() {
  std::ostringstream s;
  const int a = affinity_cpus();
  const int hw = int(std::thread::hardware_concurrency());
  if (a > 0)
    s << "affinity " << a << " of " << hw << " CPUs";
  else
    s << "hardware concurrency " << hw;
  if (const int q = cgroup_quota_cpus(); q > 0) s << ", cgroup quota " << q;
  return s.str();
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto b = line.find_first_not_of(" \t", colon + 1);
    return b == std::string::npos ? "unknown" : line.substr(b);
  }
  return "unknown";
}

std::vector<std::string> cpu_kernel_flags() {
  static const char* const kWanted[] = {"avx2",        "fma",         "avx512f",    "avx512bw",
                                        "avx512_vnni", "avx512_bf16", "avx512vbmi", "avx512_fp16",
                                        "amx_tile",    "amx_bf16",    "amx_int8"};
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  std::vector<std::string> out;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::istringstream words(line.substr(colon + 1));
    std::vector<std::string> have;
    for (std::string w; words >> w;) have.push_back(w);
    for (const char* want : kWanted)
      for (const std::string& h : have)
        if (h == want) {
          out.push_back(h);
          break;
        }
    break;
  }
  return out;
}

}  // namespace inkling
