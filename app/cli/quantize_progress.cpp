// Progress rendering: bar on a terminal (at most 10 redraws a second), a line every 10 seconds
// elsewhere.
#include "quantize_progress.h"

#include <unistd.h>

#include <string>

namespace inkling::cli {

namespace {

std::string duration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

Progress::Progress(uint64_t total_bytes, int64_t total_tensors, bool quiet)
    : total_bytes_(total_bytes),
      total_tensors_(total_tensors),
      quiet_(quiet),
      tty_(::isatty(2) == 1),
      start_(Clock::now()),
      last_draw_(start_) {}

void Progress::set(uint64_t bytes, int64_t tensors) {
  done_bytes_ = bytes;
  done_tensors_ = tensors;
  const double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
  if (since >= (tty_ ? 0.1 : 10.0)) draw(false);
}

void Progress::finish() {
  draw(true);
}

void Progress::draw(bool final) {
  if (quiet_) return;
  last_draw_ = Clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  const double frac = total_bytes_ ? double(done_bytes_) / double(total_bytes_) : 1.0;
  const double rate = elapsed > 0 ? double(done_bytes_) / elapsed : 0;  // bytes per second
  const double eta = rate > 0 ? double(total_bytes_ - done_bytes_) / rate : -1;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  char stats[160];
  std::snprintf(stats, sizeof stats, "%5.1f%%  %.2f/%.2f GiB  %lld/%lld tensors  %.0f MB/s  %s %s",
                100 * frac, double(done_bytes_) / gib, double(total_bytes_) / gib,
                static_cast<long long>(done_tensors_), static_cast<long long>(total_tensors_),
                rate / 1e6, final ? "in" : "ETA", duration(final ? elapsed : eta).c_str());
  if (tty_) {
    constexpr int kWidth = 30;
    const int fill = int(frac * kWidth + 0.5);
    std::fprintf(out_, "\r[%s%s] %s\033[K%s", std::string(size_t(fill), '#').c_str(),
                 std::string(size_t(kWidth - fill), '-').c_str(), stats, final ? "\n" : "");
  } else {
    std::fprintf(out_, "quantize: %s\n", stats);
  }
  std::fflush(out_);
}

}  // namespace inkling::cli
