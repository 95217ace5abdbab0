// Terminal-aware progress and the timing summary (see terminal.h).
#include "terminal.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace inkling::cli {

bool is_tty(int fd) {
  return ::isatty(fd) == 1;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

BusyIndicator::BusyIndicator(std::string label) : label_(std::move(label)) {
  if (!is_tty(2)) return;
  thread_ = std::thread([this] {
    const auto t0 = std::chrono::steady_clock::now();
    bool drawn = false;
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stop_.load()) break;
      const double s = ms_since(t0) / 1e3;
      if (s < 0.25) continue;
      std::fprintf(stderr, "\r%s... %.1f s\033[K", label_.c_str(), s);
      std::fflush(stderr);
      drawn = true;
    }
    if (drawn) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  });
}

void BusyIndicator::done() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

BusyIndicator::~BusyIndicator() {
  done();
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(std::max<int64_t>(total, 1)),
      tty_(is_tty(2)),
      start_(Clock::now()),
      last_(start_) {}

void ProgressBar::update(int64_t done) {
  if (!tty_ || finished_) return;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 0.5 || std::chrono::duration<double>(now - last_).count() < 0.1) return;
  last_ = now;
  const double frac = std::clamp(double(done) / double(total_), 0.0, 1.0);
  const double rate = double(done) / elapsed;
  const double eta = rate > 0 ? double(total_ - done) / rate : 0;
  constexpr int kWidth = 30;
  const int fill = int(frac * kWidth + 0.5);
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld %s  %.0f %s/s  ETA %.0f s\033[K", label_.c_str(),
               std::string(size_t(fill), '#').c_str(),
               std::string(size_t(kWidth - fill), '-').c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), unit_.c_str(), rate, unit_.c_str(), eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

uint64_t peak_rss_bytes() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return uint64_t(ru.ru_maxrss) * 1024;  // Linux reports kilobytes
}

namespace {

double per_second(int64_t n, double ms) {
  return ms > 0 ? double(n) * 1e3 / ms : 0.0;
}

}  // namespace

std::string Timings::text(const std::string& prefix) const {
  char buf[768];
  auto line = [&](const char* name, int64_t n, double ms) {
    char l[200];
    if (n > 0)
      std::snprintf(l, sizeof l,
                    "%s%-11s = %10.2f ms / %6lld tokens (%8.2f ms per token, %8.2f "
                    "tokens per second)\n",
                    prefix.c_str(), name, ms, static_cast<long long>(n), ms / double(n),
                    per_second(n, ms));
    else
      std::snprintf(l, sizeof l, "%s%-11s = %10.2f ms / %6lld tokens\n", prefix.c_str(), name, ms,
                    static_cast<long long>(n));
    return std::string(l);
  };
  std::snprintf(buf, sizeof buf, "%s%-11s = %10.2f ms\n", prefix.c_str(), "load time", load_ms);
  std::string s = buf;
  s += line("prompt eval", prompt_tokens, prompt_ms);
  s += line("eval time", gen_tokens, gen_ms);
  std::snprintf(buf, sizeof buf, "%s%-11s = %10.2f ms / %6lld tokens\n", prefix.c_str(),
                "total time", total_ms, static_cast<long long>(prompt_tokens + gen_tokens));
  s += buf;
  std::snprintf(buf, sizeof buf, "%s%-11s = %10.1f MiB\n%s%-11s = %llu\n", prefix.c_str(),
                "peak RSS", double(peak_rss_bytes()) / (1024.0 * 1024.0), prefix.c_str(), "seed",
                static_cast<unsigned long long>(seed));
  s += buf;
  return s;
}

nlohmann::json Timings::json() const {
  return {{"load_ms", load_ms},
          {"prompt_tokens", prompt_tokens},
          {"prompt_ms", prompt_ms},
          {"prompt_tok_s", per_second(prompt_tokens, prompt_ms)},
          {"gen_tokens", gen_tokens},
          {"gen_ms", gen_ms},
          {"gen_tok_s", per_second(gen_tokens, gen_ms)},
          {"total_ms", total_ms},
          {"peak_rss_bytes", peak_rss_bytes()},
          {"seed", seed}};
}

}  // namespace inkling::cli
