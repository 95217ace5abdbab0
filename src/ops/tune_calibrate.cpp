// The decode calibration (see tune_calibrate.h).
#include "ops/tune_calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/machine_hwy.h"
#include "ops/matmul.h"

namespace inkling {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  }
};

// Random bytes; bf16 numbers of one binade (|x| in [2^-7, 2^-6), either sign): no NaN, infinity
// or subnormal, whose cost could differ from real weights'.
void fill_bytes(std::vector<uint8_t>& v, Rng& rng) {
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(v.data() + i, &r, 8);
  }
  for (; i < v.size(); ++i) v[i] = uint8_t(rng.next());
}
void fill_bf16(std::vector<uint8_t>& v, Rng& rng) {
  fill_bytes(v, rng);
  for (size_t i = 0; i + 2 <= v.size(); i += 2) {
    uint16_t h;
    std::memcpy(&h, v.data() + i, 2);
    h = uint16_t((h & 0x807f) | 0x3c00);
    std::memcpy(v.data() + i, &h, 2);
  }
}

// Matrices of 4096 x 4096 (an Inkling-Small expert's fused gate/up) in one format, `bytes` in all,
// stored as one block so that consecutive products stream through memory like a decode step.
struct Synthetic {
  std::vector<uint8_t> codes, scales, biases;
  std::vector<MatView> views;
  std::vector<float> x, y;
  double bytes = 0;
};

constexpr int64_t kRows = 4096, kCols = 4096;

std::unique_ptr<Synthetic> make_synthetic(const std::string& fmt, size_t bytes) {
  auto s = std::make_unique<Synthetic>();
  Rng rng;
  MatView v;
  v.rows = kRows, v.cols = kCols;
  double per_elem = 2;
  if (fmt == "bf16") {
    v.dtype = DType::BF16, v.format = WeightFormat::kDense, v.row_stride = kCols;
  } else if (fmt == "nvfp4") {
    v.dtype = DType::U8, v.format = WeightFormat::kNvfp4, v.bits = 4, v.group = 16;
    v.row_stride = kCols / 2, v.scale_dtype = DType::F8_E4M3, v.scale_stride = kCols / 16;
    v.scale2 = 1.f / 64;
    per_elem = 0.5 + 1.0 / 16;
  } else {
    const int bits = fmt == "q4" ? 4 : fmt == "q8" ? 8 : 3;
    v.dtype = DType::U32, v.format = WeightFormat::kAffine, v.bits = bits, v.group = 64;
    v.row_stride = kCols * bits / 8, v.scale_dtype = DType::BF16, v.scale_stride = kCols / 64;
    per_elem = bits / 8.0 + 4.0 / 64;
  }
  const double per_matrix = per_elem * double(kRows * kCols);
  const int64_t n = std::max<int64_t>(1, int64_t((double(bytes) + per_matrix - 1) / per_matrix));
  const int64_t rows = n * kRows;
  const size_t row_bytes = v.format == WeightFormat::kDense ? size_t(kCols) * 2 : v.row_stride;
  s->codes.resize(size_t(rows) * row_bytes);
  if (v.format == WeightFormat::kDense) {
    fill_bf16(s->codes, rng);
  } else {
    fill_bytes(s->codes, rng);
    const size_t sb = size_t(rows * v.scale_stride) * dtype_size(v.scale_dtype);
    s->scales.resize(sb);
    if (v.format == WeightFormat::kNvfp4) {
      fill_bytes(s->scales, rng);
      for (auto& b : s->scales) b = uint8_t(0x30 | (b & 0x0f));  // positive normal e4m3
    } else {
      fill_bf16(s->scales, rng);
      s->biases.resize(sb);
      fill_bf16(s->biases, rng);
    }
  }
  MatView all = v;
  all.rows = rows;
  all.data = s->codes.data();
  all.scales = s->scales.empty() ? nullptr : s->scales.data();
  all.biases = s->biases.empty() ? nullptr : s->biases.data();
  for (int64_t i = 0; i < n; ++i) {
    MatView m = all.slice_rows(i * kRows, kRows);
    if (!bind_kernels(m)) return nullptr;
    s->views.push_back(m);
  }
  s->x.resize(size_t(kCols));
  for (auto& e : s->x) e = float(int64_t(rng.next() % 2001) - 1000) / 1000.f;
  s->y.resize(size_t(kRows));
  s->bytes = per_matrix * double(n);
  return s;
}

// Seconds of the fastest of `passes` passes over every matrix (one token each, as decode).
double time_pass(Synthetic& s, ThreadPool& pool, int passes) {
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    const double t0 = now_s();
    for (const MatView& m : s.views) matmul(s.x.data(), 1, kCols, m, s.y.data(), kRows, &pool);
    best = std::min(best, now_s() - t0);
  }
  return best;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Stage {
  std::string fmt;
  std::vector<TuneParam> params;
  std::vector<std::vector<int>> values;  // per param; the first value of each is tried first
};

// Every combination of the stage's values over `base` (the base's own values first).
std::vector<DecodeTuning> candidates(const Stage& st, const DecodeTuning& base) {
  std::vector<DecodeTuning> out{base};
  for (size_t k = 0; k < st.params.size(); ++k) {
    std::vector<DecodeTuning> next;
    for (const DecodeTuning& t : out)
      for (int v : st.values[k]) {
        DecodeTuning c = t;
        c[st.params[k]] = v;
        next.push_back(c);
      }
    out = std::move(next);
  }
  std::vector<DecodeTuning> uniq{base};
  for (const DecodeTuning& c : out)
    if (std::find(uniq.begin(), uniq.end(), c) == uniq.end()) uniq.push_back(c);
  return uniq;
}

// Per candidate: the median over rounds of its speed relative to candidate 0 measured right
// before or after it (paired: a drift of the machine between candidates cancels out), the
// medians of GB/s and of GB/s over the probe of the round, and the probe's median.
struct Scores {
  std::vector<double> paired, ratio, gbs;
  double probe = 0;
};

Scores measure(Synthetic& s, ThreadPool& pool, ReadProbe& probe, const std::vector<DecodeTuning>& c,
               int rounds, int passes) {
  std::vector<std::vector<double>> paired(c.size()), ratios(c.size()), gbs(c.size());
  std::vector<double> probes;
  auto gbs_of = [&](const DecodeTuning& t) {
    set_decode_tuning(t, "tune");
    return s.bytes / time_pass(s, pool, passes) / 1e9;
  };
  auto add = [&](size_t i, double g, double g0, double bw) {
    gbs[i].push_back(g);
    ratios[i].push_back(g / bw);
    paired[i].push_back(g / g0);
  };
  for (int r = 0; r < rounds; ++r) {
    const double bw = probe.measure(1);
    probes.push_back(bw);
    if (c.size() == 1) {
      const double g = gbs_of(c[0]);
      add(0, g, g, bw);
    }
    for (size_t i = 1; i < c.size(); ++i) {
      // Candidate 0 next to every other one, before it in even rounds and after it in odd ones
      // (an order effect would otherwise favour one side).
      double g0 = 0, g = 0;
      if (r % 2 == 0) g0 = gbs_of(c[0]);
      g = gbs_of(c[i]);
      if (r % 2 == 1) g0 = gbs_of(c[0]);
      add(i, g, g0, bw);
      add(0, g0, g0, bw);
    }
  }
  Scores out;
  for (size_t i = 0; i < c.size(); ++i) {
    out.paired.push_back(median(paired[i]));
    out.ratio.push_back(median(ratios[i]));
    out.gbs.push_back(median(gbs[i]));
  }
  out.probe = median(probes);
  return out;
}

std::string describe(const DecodeTuning& t, const std::vector<TuneParam>& ps) {
  std::string s;
  for (TuneParam p : ps)
    s += (s.empty() ? "" : " ") + std::string(tune_param_info(p).name) + "=" + std::to_string(t[p]);
  return s;
}

}  // namespace

// sysfs first: glibc's sysconf reported 320 MiB for the 32 MiB L3 of the Zen 4 VM.
size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream f(dir + "size");
    std::string sz;
    if (!(f >> sz) || sz.empty()) continue;
    size_t v = size_t(std::strtoull(sz.c_str(), nullptr, 10));
    if (sz.back() == 'K') v <<= 10;
    if (sz.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  if (best == 0) {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    best = l3 > 0 ? size_t(l3) : size_t(32) << 20;
  }
  return best;
}

namespace {

size_t default_bytes() {
  return std::clamp<size_t>(3 * last_level_cache_bytes(), size_t(128) << 20, size_t(512) << 20);
}

}  // namespace

CalibrateResult calibrate_decode(ThreadPool& pool, const CalibrateOptions& opt,
                                 const std::function<void(const std::string&)>& log) {
  const double t_start = now_s();
  auto say = [&](const std::string& m) {
    if (log) log(m);
  };
  std::vector<std::string> fmts = opt.formats;
  if (fmts.empty()) fmts = {"bf16", "q4", "q8", "q3"};
  const size_t bytes = opt.bytes ? opt.bytes : default_bytes();
  const bool has_q4 = std::find(fmts.begin(), fmts.end(), "q4") != fmts.end();

  std::vector<Stage> stages;
  for (const std::string& f : fmts) {
    if (f == "bf16") {
      stages.push_back({f, {TuneParam::kSplitRows}, {{0, 256, 1024}}});
      // Rows in flight (dense_rows) are not calibrated: on the Zen 4 VM the synthetic products
      // favoured 4 rows by 5-12 % while the slices' decode ran 0.86x with them (median of 15
      // one-run A/Bs, docs/performance.md); a tuning file may still set them.
      stages.push_back({f, {TuneParam::kDensePrefetch}, {{0, 2, 4, 8}}});
    } else if (f == "q4" || (f == "nvfp4" && !has_q4)) {
      stages.push_back(
          {f, {TuneParam::kQ4Rows, TuneParam::kQ4Prefetch}, {{4, 2, 1}, {1, 0, 2, 3}}});
    } else if (f == "q3") {
      stages.push_back({f, {TuneParam::kAffinePrefetch}, {{1, 0, 2, 3}}});
    } else if (f == "q8") {
      stages.push_back({f, {TuneParam::kBytesPrefetch}, {{1, 0, 2, 3}}});
    }
  }

  // Weights per format, made once; one pass each to fault the pages in and time a pass.
  std::vector<std::pair<std::string, std::unique_ptr<Synthetic>>> data;
  double pass_s = 0;
  const DecodeTuning defaults = DecodeTuning::defaults();
  set_decode_tuning(defaults, "tune");
  for (const std::string& f : fmts) {
    auto s = make_synthetic(f, bytes);
    if (!s) {
      say("skipping " + f + ": no kernel binds the synthetic weights");
      continue;
    }
    pass_s += time_pass(*s, pool, 1);
    data.emplace_back(f, std::move(s));
  }
  auto find = [&](const std::string& f) -> Synthetic* {
    for (auto& [n, s] : data)
      if (n == f) return s.get();
    return nullptr;
  };
  ReadProbe probe(pool, std::min(bytes, size_t(256) << 20));

  // Measurements: every stage's candidates plus the final default-vs-chosen check, `rounds` each.
  size_t n_meas = 4 * data.size();  // the final check: 2 candidates in twice the rounds
  for (const Stage& st : stages) n_meas += 2 * (candidates(st, defaults).size() - 1);
  const double per_pass = pass_s / std::max<size_t>(1, data.size());
  const double left = opt.budget_s;  // measurement only: the setup above is not counted
  int rounds = 3, passes = int(left / (double(n_meas) * rounds * per_pass * 1.3));
  if (passes < 1) rounds = 1, passes = 1;
  passes = std::min(passes, 6);
  say("weights: " + std::to_string(bytes >> 20) + " MiB per format; " + std::to_string(rounds) +
      " rounds of " + std::to_string(passes) + " passes per candidate");

  DecodeTuning best = defaults;
  for (const Stage& st : stages) {
    Synthetic* s = find(st.fmt);
    if (!s) continue;
    const std::vector<DecodeTuning> c = candidates(st, best);
    const Scores sc = measure(*s, pool, probe, c, rounds, passes);
    size_t arg = 0;
    for (size_t i = 1; i < c.size(); ++i)
      if (sc.paired[i] > sc.paired[arg]) arg = i;
    if (arg != 0 && sc.paired[arg] < 1 + opt.min_gain) arg = 0;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-5s %s: %.3fx the previous choice, %.2f of the read probe (%.1f GB/s)",
                  st.fmt.c_str(), describe(c[arg], st.params).c_str(), sc.paired[arg],
                  sc.ratio[arg], sc.gbs[arg]);
    say(line);
    best = c[arg];
  }

  // Defaults against the choice, per format, interleaved, in twice the rounds: a format whose
  // choice does not hold up here (a lucky moment in its stage) gets its parameters back to the
  // defaults (bf16's include the row split, which every format uses).
  CalibrateResult res;
  res.measured = nlohmann::json::object();
  for (auto& [f, s] : data) {
    std::vector<TuneParam> mine;
    for (const Stage& st : stages)
      if (st.fmt == f) mine.insert(mine.end(), st.params.begin(), st.params.end());
    bool differs = false;
    for (TuneParam p : mine) differs = differs || best[p] != defaults[p];
    const Scores sc = measure(*s, pool, probe, {defaults, best}, 2 * rounds, passes);
    const bool keep = !differs || sc.paired[1] >= 1 + opt.min_gain / 2;
    if (!keep)
      for (TuneParam p : mine) best[p] = defaults[p];
    res.measured[f] = {{"probe_gbs", sc.probe},
                       {"default_gbs", sc.gbs[0]},
                       {"default_ratio", sc.ratio[0]},
                       {"tuned_gbs", sc.gbs[1]},
                       {"tuned_ratio", sc.ratio[1]},
                       {"tuned_over_default", sc.paired[1]},
                       {"kept", keep}};
    char line[320];
    std::snprintf(line, sizeof line,
                  "%-5s default %.2f -> tuned %.2f of the read probe (%.1f -> %.1f GB/s, probe "
                  "%.1f; paired %.3fx)%s",
                  f.c_str(), sc.ratio[0], sc.ratio[1], sc.gbs[0], sc.gbs[1], sc.probe, sc.paired[1],
                  keep ? "" : ": not confirmed, defaults kept");
    say(line);
  }
  res.measured["weights_mib"] = bytes >> 20;
  res.measured["rounds"] = rounds;
  res.measured["passes"] = passes;
  res.tuning = best;
  set_decode_tuning(best, "tune");
  res.seconds = now_s() - t_start;
  return res;
}

}  // namespace inkling
