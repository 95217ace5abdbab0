// measure_sensitivity(): the reference distributions (top tokens per position), then each
// (unit, width): the unit's matrices encoded as the writer encodes them, their views in a copy of
// the source's bound weights pointed at the encoded rows, the windows run again, the views put
// back. The table's file: JSON.
#include "quantize/sensitivity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/mapped_file.h"
#include "model/model.h"
#include "ops/affine_quantize.h"
#include "ops/formats.h"
#include "quantize/quantize_jobs.h"

namespace inkling::quant {

namespace {

// Per position of every window: the reference's top K token ids, their log-probabilities and the
// probability of every other token together.
struct Reference {
  int64_t K = 0;
  std::vector<int32_t> ids;
  std::vector<float> lp;
  std::vector<double> rest;
};

double log_sum_exp(const float* x, int64_t V) {
  float m = x[0];
  for (int64_t i = 1; i < V; ++i) m = std::max(m, x[i]);
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += std::exp(double(x[i]) - double(m));
  return double(m) + std::log(s);
}

void reference_row(const float* x, int64_t V, int64_t K, std::vector<int32_t>& order, int32_t* ids,
                   float* lp, double* rest) {
  const double lse = log_sum_exp(x, V);
  order.resize(size_t(V));
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin() + (K - 1), order.end(),
                   [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  double mass = 0;
  for (int64_t i = 0; i < K; ++i) {
    ids[i] = order[size_t(i)];
    lp[i] = float(double(x[ids[i]]) - lse);
    mass += std::exp(double(lp[i]));
  }
  *rest = K < V ? std::max(0.0, 1.0 - mass) : 0.0;
}

// KL(reference || q) over the reference's top tokens and the rest as one outcome.
double kl_row(const float* q, int64_t V, int64_t K, const int32_t* ids, const float* lp,
              double rest) {
  const double lse = log_sum_exp(q, V);
  double kl = 0, q_top = 0;
  for (int64_t i = 0; i < K; ++i) {
    const double lq = double(q[ids[i]]) - lse;
    kl += std::exp(double(lp[i])) * (double(lp[i]) - lq);
    q_top += std::exp(lq);
  }
  if (rest > 1e-12) kl += rest * std::log(rest / std::max(1.0 - q_top, 1e-30));
  return kl;
}

// The source model (its bound views, fast numerics) run window by window.
class Runner {
 public:
  Runner(const Source& src, const SensitivityOptions& o)
      : pool_(o.threads), window_(o.window), chunk_(std::min<int64_t>(o.window, 512)) {
    model_.config = src.config;
    model_.weights = src.weights;
    bind_numerics(model_.weights, Numerics::kFast);
    scratch_ = Scratch::make(model_.config, chunk_);
    V_ = model_.config.unpadded_vocab;
    for_each_matrix(model_.weights, [&](const char* group, const std::string&, MatView& v) {
      const std::string_view g(group);
      const KernelMode mode = g == "router"           ? KernelMode::kExact
                              : g == "routed experts" ? KernelMode::kFast
                                                      : KernelMode::kFastFine;
      by_data_.emplace(v.data, Slot{&v, mode});
    });
  }

  int64_t vocab() const { return V_; }
  ThreadPool& pool() { return pool_; }

  // All positions' logits of one window [window, V].
  void run(const int32_t* ids, std::vector<float>& logits) {
    logits.resize(size_t(window_ * V_));
    SequenceState st = SequenceState::fresh(model_.config, chunk_);
    for (int64_t at = 0; at < window_; at += chunk_) {
      Segment seg;
      seg.state = &st;
      seg.tokens = ids + at;
      seg.n = std::min(chunk_, window_ - at);
      seg.logits = logits.data() + at * V_;
      seg.all_positions = true;
      forward_batch(model_, &seg, 1, scratch_, &pool_);
    }
  }

  struct Slot {
    MatView* view;
    KernelMode mode;
  };
  // The running model's views that start at `data`.
  auto views_at(const uint8_t* data) { return by_data_.equal_range(data); }

 private:
  ThreadPool pool_;
  Model model_;
  Scratch scratch_;
  int64_t window_, chunk_, V_ = 0;
  std::unordered_multimap<const uint8_t*, Slot> by_data_;
};

// One unit's matrices encoded at a spec and swapped into the running model until destroyed.
class Swap {
 public:
  ~Swap() {
    for (size_t i = saved_.size(); i-- > 0;) *saved_[i].first = saved_[i].second;
  }

  Status add(const Source& src, Runner& run, const Module& planned, const QuantSpec& spec,
             const SensitivityOptions& o) {
    auto m = std::make_unique<Module>(planned);
    m->spec = spec;
    std::vector<Job> jobs(1);
    Job& j = jobs[0];
    INK_ASSIGN_OR_RETURN(j.rows, RowSource::of(src, *m));
    m->float_dtype = o.dtype.value_or(j.rows.natural_dtype());
    j.module = m.get();
    if (o.search) attach_importance(jobs, o.imatrix);
    const int64_t R = m->total_rows(), C = m->cols;
    const size_t fsz = dtype_size(m->float_dtype);
    const size_t code_row = size_t(affine_code_bytes(C, spec.bits));
    const size_t side_row = size_t(affine_scale_bytes(C, spec.group, m->float_dtype));
    Encoded e;
    e.codes.resize(size_t(R) * code_row);
    e.scales.resize(size_t(R) * side_row);
    e.biases.resize(size_t(R) * side_row);
    const int64_t bad =
        encode_rows(j, 0, R, e.codes.data(), e.scales.data(), e.biases.data(), run.pool());
    if (bad >= 0) return bad_row_error(*m, bad);
    for (const RowSource::Band& band : j.rows.bands())
      for (const RowSource::Part& part : band.parts) {
        bool placed = false;
        auto [lo, hi] = run.views_at(part.view.data);
        for (auto it = lo; it != hi; ++it) {
          MatView& v = *it->second.view;
          // Same columns; rows: the band's (a padded head's view is longer than the rows the
          // writer writes, and the loaded output's view is the band's).
          if (v.cols != part.view.cols) continue;
          saved_.emplace_back(&v, v);
          MatView q;
          q.format = WeightFormat::kAffine;
          q.dtype = DType::U32;
          q.rows = std::min(v.rows, band.rows);
          q.cols = v.cols;
          q.row_stride = int64_t(code_row);
          q.bits = spec.bits;
          q.group = spec.group;
          q.scale_dtype = m->float_dtype;
          q.scale_stride = C / spec.group;
          const size_t row0 = size_t(band.row0);
          const size_t col_groups = size_t(part.col0 / spec.group);
          q.data = e.codes.data() + row0 * code_row + size_t(part.col0 * spec.bits / 8);
          q.scales = e.scales.data() + row0 * side_row + col_groups * fsz;
          q.biases = e.biases.data() + row0 * side_row + col_groups * fsz;
          if (!bind_kernels(q, it->second.mode))
            return Status::error("[sensitivity] " + m->path + ": no kernel runs " + spec.str());
          v = q;
          placed = true;
        }
        if (!placed)
          return Status::error("[sensitivity] " + m->path +
                               ": the running model holds no matrix where the plan reads rows " +
                               std::to_string(band.row0) + ".." +
                               std::to_string(band.row0 + band.rows));
      }
    encoded_.push_back(std::move(e));
    modules_.push_back(std::move(m));
    return Status::success();
  }

 private:
  struct Encoded {
    std::vector<uint8_t> codes, scales, biases;
  };
  std::vector<std::pair<MatView*, MatView>> saved_;
  std::vector<Encoded> encoded_;
  std::vector<std::unique_ptr<Module>> modules_;
};

}  // namespace

bool unit_takes(const Plan& plan, const AutoUnit& u, const QuantSpec& spec) {
  for (size_t i : u.items)
    if (!group_fits(std::get<Module>(plan.items[i]), spec.group)) return false;
  return true;
}

const SensitivityTable::Row* SensitivityTable::find(const std::string& unit) const {
  for (const Row& r : rows)
    if (r.unit == unit) return &r;
  return nullptr;
}

Result<SensitivityTable> measure_sensitivity(const Source& src, const Plan& plan,
                                             const std::vector<AutoUnit>& units,
                                             const SensitivityOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n_windows =
      std::min<int64_t>(int64_t(o.ids.size()), o.max_tokens) / std::max<int64_t>(o.window, 1);
  if (n_windows < 1)
    return Status::error("[sensitivity] the calibration text is shorter than one window of " +
                         std::to_string(o.window) + " tokens");
  Runner run(src, o);
  const int64_t V = run.vocab(), K = std::min(V, kSensitivityTop);
  const int64_t P = n_windows * o.window;  // positions
  Reference ref;
  ref.K = K;
  ref.ids.resize(size_t(P * K));
  ref.lp.resize(size_t(P * K));
  ref.rest.resize(size_t(P));
  std::vector<float> logits;
  for (int64_t w = 0; w < n_windows; ++w) {
    run.run(o.ids.data() + w * o.window, logits);
    run.pool().parallel_for(size_t(o.window), [&](size_t b, size_t e) {
      std::vector<int32_t> order;
      for (size_t i = b; i < e; ++i) {
        const int64_t p = w * o.window + int64_t(i);
        reference_row(logits.data() + int64_t(i) * V, V, K, order, ref.ids.data() + p * K,
                      ref.lp.data() + p * K, &ref.rest[size_t(p)]);
      }
    });
  }

  SensitivityTable t;
  t.model_type = family_name(src.config.family);
  t.specs = o.specs;
  t.tokens = P;
  t.windows = n_windows;
  int64_t total = 0, done = 0;
  for (const AutoUnit& u : units)
    for (const QuantSpec& spec : o.specs) total += unit_takes(plan, u, spec);
  std::vector<double> kl(size_t(o.window));
  for (const AutoUnit& u : units) {
    SensitivityTable::Row row;
    row.unit = u.key;
    for (const QuantSpec& spec : o.specs) {
      if (!unit_takes(plan, u, spec)) {
        row.kl.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      Swap swap;
      for (size_t i : u.items)
        INK_RETURN_IF_ERROR(swap.add(src, run, std::get<Module>(plan.items[i]), spec, o));
      double sum = 0;
      for (int64_t w = 0; w < n_windows; ++w) {
        run.run(o.ids.data() + w * o.window, logits);
        run.pool().parallel_for(size_t(o.window), [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) {
            const int64_t p = w * o.window + int64_t(i);
            kl[i] = kl_row(logits.data() + int64_t(i) * V, V, K, ref.ids.data() + p * K,
                           ref.lp.data() + p * K, ref.rest[size_t(p)]);
          }
        });
        for (double x : kl) sum += x;
      }
      row.kl.push_back(std::max(0.0, sum / double(P)));
      if (o.progress) o.progress(++done, total);
      if (o.cancel && o.cancel->load()) return Status::error("[sensitivity] cancelled");
    }
    t.rows.push_back(std::move(row));
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

Status save_sensitivity(const SensitivityTable& t, const std::string& path) {
  nlohmann::ordered_json j;
  j["format"] = "inkling-sensitivity";
  j["version"] = 1;
  j["model_type"] = t.model_type;
  j["specs"] = nlohmann::ordered_json::array();
  for (const QuantSpec& q : t.specs) j["specs"].push_back(q.str());
  j["tokens"] = t.tokens;
  j["windows"] = t.windows;
  j["kl_nats_per_token"] = nlohmann::ordered_json::object();
  for (const auto& r : t.rows) {
    auto& costs = j["kl_nats_per_token"][r.unit] = nlohmann::ordered_json::array();
    for (double x : r.kl)
      costs.push_back(std::isnan(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x));
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(1) << "\n";
    if (!f) return Status::error("[sensitivity] " + path + ": cannot write it");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::error("[sensitivity] " + path + ": " + ec.message());
  return Status::success();
}

Result<SensitivityTable> load_sensitivity(const std::string& path) {
  const std::string where = "[sensitivity] " + path + ": ";
  auto text = read_text_file(path);
  if (!text.ok()) return text.status().with_context("[sensitivity] ");
  INK_RETURN_IF_ERROR(check_json_depth(text.value(), where));
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::error(where + "not JSON (a sensitivity table is a JSON object)");
  if (j.value("format", std::string()) != "inkling-sensitivity")
    return Status::error(where +
                         "not a sensitivity table (\"format\" is not "
                         "\"inkling-sensitivity\")");
  SensitivityTable t;
  auto field = [&](const char* name,
                   nlohmann::json::value_t type) -> const nlohmann::ordered_json* {
    auto it = j.find(name);
    if (it == j.end() ||
        (it->type() != type && !(type == nlohmann::json::value_t::number_integer &&
                                 it->type() == nlohmann::json::value_t::number_unsigned)))
      return nullptr;
    return &*it;
  };
  using VT = nlohmann::json::value_t;
  const auto* mt = field("model_type", VT::string);
  const auto* specs = field("specs", VT::array);
  const auto* kl = field("kl_nats_per_token", VT::object);
  if (!mt || !specs || !kl)
    return Status::error(where + "needs model_type, specs and kl_nats_per_token of their types");
  t.model_type = mt->get<std::string>();
  for (const auto& sp : *specs) {
    int bits = 0, group = 0;
    char tail = 0;
    const std::string text = sp.is_string() ? sp.get<std::string>() : std::string();
    if (std::sscanf(text.c_str(), "q%d/g%d%c", &bits, &group, &tail) != 2 || bits < 1 || bits > 8 ||
        (group != 32 && group != 64 && group != 128))
      return Status::error(where + "\"specs\" holds " + sp.dump() + ", not a spec like \"q4/g64\"");
    t.specs.push_back(QuantSpec::affine(bits, group));
  }
  if (t.specs.empty()) return Status::error(where + "\"specs\" is empty");
  if (const auto* n = field("tokens", VT::number_integer)) t.tokens = n->get<int64_t>();
  if (const auto* n = field("windows", VT::number_integer)) t.windows = n->get<int64_t>();
  for (const auto& [unit, v] : kl->items()) {
    SensitivityTable::Row r;
    r.unit = unit;
    if (!v.is_array() || v.size() != t.specs.size())
      return Status::error(where + unit + ": needs " + std::to_string(t.specs.size()) +
                           " costs, one per spec");
    for (const auto& x : v) {
      if (x.is_null()) {
        r.kl.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
        return Status::error(where + unit + ": " + x.dump() + " is not a KL (>= 0) or null");
      r.kl.push_back(x.get<double>());
    }
    t.rows.push_back(std::move(r));
  }
  return t;
}

Status check_sensitivity(const SensitivityTable& t, const std::vector<AutoUnit>& units,
                         const std::string& path) {
  const std::string where = "[sensitivity] " + path + ": ";
  for (const AutoUnit& u : units)
    if (!t.find(u.key))
      return Status::error(where + "has no cost for " + u.key +
                           " (a sensitivity table of another model?)");
  if (t.rows.size() != units.size())
    for (const auto& r : t.rows) {
      bool known = false;
      for (const AutoUnit& u : units) known |= u.key == r.unit;
      if (!known)
        return Status::error(where + r.unit +
                             ": no such unit in this model (a sensitivity table of another "
                             "model?)");
    }
  return Status::success();
}

}  // namespace inkling::quant
