// Source::open (the engine's load pipeline, plus the MTP tensors it drops) and RowSource: which
// bound views make up each module of the mlx-vlm layout, and their rows.
#include "quantize/quantize_sources.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "base/mapped_file.h"
#include "model/inkling2/bind.h"
#include "model/inkling2/layouts.h"
#include "ops/quant.h"

namespace inkling::quant {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

bool is_mtp(const std::string& name) {
  return starts_with(name, "model.mtp.") || starts_with(name, "mtp.");
}

}  // namespace

Result<std::unique_ptr<Source>> Source::open(const std::string& dir, bool bind_mtp) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::error("[quantize] " + dir + ": no such folder");
  if (!fs::is_directory(dir, ec))
    return Status::error("[quantize] " + dir + ": not a folder (give the model folder)");
  auto s = std::make_unique<Source>();
  s->dir = dir;
  auto text = read_text_file(dir + "/config.json");
  if (!text.ok()) return text.status().with_context("[quantize] ");
  s->config_text = std::move(text).value();
  INK_ASSIGN_OR_RETURN(s->config, load_config(dir));
  const bool v2 = s->config.family == Family::kInkling2;
  auto store = TensorStore::open_dir(dir);
  if (!store.ok()) return store.status().with_context("[load] ");
  s->store = std::move(store).value();
  for (const auto& f : s->store.files()) s->files.push_back(f->path());
  for (const auto& [name, info] : s->store.all())
    if (is_mtp(name)) s->mtp.push_back(info);
  // The original layout keeps MTP in mtp.safetensors, which an index need not list.
  const std::string mtp_file = dir + "/mtp.safetensors";
  if (fs::exists(mtp_file, ec) &&
      std::find(s->files.begin(), s->files.end(), mtp_file) == s->files.end()) {
    auto m = TensorStore::from_files({mtp_file});
    if (!m.ok()) return m.status().with_context("[load] ");
    s->mtp_store = std::move(m).value();
    s->files.push_back(mtp_file);
    for (const auto& [name, info] : s->mtp_store->all())
      if (is_mtp(name) && !s->store.find(name)) s->mtp.push_back(info);
  }
  for (const TensorInfo* t : s->mtp) {
    const std::string& n = t->name;
    s->mtp_quantized |= n.size() > 7 && n.compare(n.size() - 7, 7, ".scales") == 0;
  }
  bind_mtp |= s->mtp_quantized && !s->config.mtp.depths.empty();
  SanitizeReport report;
  if (v2) {
    // As the engine loads Inkling 2 (model/engine.cpp): no MTP depths to bind.
    if (bind_mtp)
      return Status::error("[quantize] " + dir + ": --mtp quantize, but " +
                           family_name(s->config.family) + " has no MTP depths");
    INK_ASSIGN_OR_RETURN(s->tensors, sanitize_inkling2(refs_from_store(s->store), &report));
    s->layout = report.layout;
    INK_ASSIGN_OR_RETURN(s->quant, load_quant_config(dir));
    INK_ASSIGN_OR_RETURN(s->weights, bind_inkling2(s->config, s->tensors, s->quant));
    return s;
  }
  INK_ASSIGN_OR_RETURN(s->tensors, sanitize(refs_from_store(s->store), &report));
  s->layout = report.layout;
  if (bind_mtp) {
    // As the engine binds them (model/engine.cpp): sanitize_mtp over every MTP tensor.
    if (s->config.mtp.depths.empty())
      return Status::error("[quantize] " + dir +
                           "/config.json: --mtp quantize, but the config declares no MTP depths "
                           "(mtp_config.num_nextn_predict_layers)");
    TensorMap raw;
    for (const TensorInfo* t : s->mtp) raw.emplace(t->name, ref_from_info(*t));
    INK_ASSIGN_OR_RETURN(TensorMap mtp, sanitize_mtp(raw));
    if (!mtp.count("mtp.0.input_proj.weight"))
      return Status::error("[quantize] " + dir +
                           ": --mtp quantize, but the source has no MTP tensors "
                           "(model.mtp.layers.0.input_proj.weight is missing)");
    s->tensors.merge(mtp);
  }
  INK_ASSIGN_OR_RETURN(s->quant, load_quant_config(dir));
  INK_ASSIGN_OR_RETURN(s->weights, bind_weights(s->config, s->tensors, s->quant));
  if (bind_mtp && s->weights.mtp.size() != s->config.mtp.depths.size())
    return Status::error("[quantize] " + dir + ": the MTP depths did not bind");
  return s;
}

void RowSource::append(const MatView& v) {
  const int64_t row0 = bands_.empty() ? 0 : bands_.back().row0 + bands_.back().rows;
  bands_.push_back({row0, v.rows, {{v, 0}}});
}

const RowSource::Band& RowSource::band_of(int64_t r) const {
  auto it = std::upper_bound(bands_.begin(), bands_.end(), r,
                             [](int64_t v, const Band& b) { return v < b.row0; });
  INK_CHECK(it != bands_.begin());
  return *(it - 1);
}

void RowSource::row(int64_t r, float* out) const {
  const Band& b = band_of(r);
  for (const Part& p : b.parts) dequant_row(p.view, r - b.row0, out + p.col0);
}

bool RowSource::copyable(const QuantSpec& spec, DType scale_dtype) const {
  if (!spec.quantized) return false;
  for (const Band& b : bands_)
    for (const Part& p : b.parts) {
      const MatView& v = p.view;
      if (v.format != WeightFormat::kAffine || v.bits != spec.bits || v.group != spec.group ||
          v.scale_dtype != scale_dtype || !v.biases || p.col0 % spec.group != 0)
        return false;
    }
  return true;
}

void RowSource::copy_row(int64_t r, const QuantSpec& spec, DType scale_dtype, uint8_t* codes,
                         uint8_t* scales, uint8_t* biases) const {
  const Band& b = band_of(r);
  const size_t ssz = dtype_size(scale_dtype);
  for (const Part& p : b.parts) {
    const MatView& v = p.view;
    const int64_t rr = r - b.row0;
    std::memcpy(codes + size_t(p.col0 * spec.bits / 8), v.row(rr), size_t(v.cols * v.bits / 8));
    const size_t off = size_t(rr * v.scale_stride) * ssz, n = size_t(v.cols / v.group) * ssz;
    const size_t at = size_t(p.col0 / spec.group) * ssz;
    std::memcpy(scales + at, v.scales + off, n);
    std::memcpy(biases + at, v.biases + off, n);
  }
}

QuantSpec RowSource::stored_spec() const {
  const MatView& f = bands_.front().parts.front().view;
  for (const Band& b : bands_)
    for (const Part& p : b.parts)
      if (p.view.format != WeightFormat::kAffine || p.view.bits != f.bits ||
          p.view.group != f.group)
        return {};
  return QuantSpec::affine(f.bits, f.group);
}

DType RowSource::natural_dtype() const {
  const MatView& v = bands_.front().parts.front().view;
  switch (v.format) {
    case WeightFormat::kDense:
      return v.dtype;
    case WeightFormat::kAffine:
      return v.scale_dtype;
    case WeightFormat::kNvfp4:
    case WeightFormat::kMxfp8:
      return DType::BF16;
  }
  return DType::BF16;
}

void release_pages(const void* p, size_t n) {
  if (!p || n == 0) return;
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  // A read-only file mapping: the pages leave this process and stay in the page cache.
  ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

void RowSource::release(int64_t r0, int64_t r1) const {
  for (const Band& b : bands_) {
    const int64_t lo = std::max(r0, b.row0) - b.row0, hi = std::min(r1, b.row0 + b.rows) - b.row0;
    if (lo >= hi) continue;
    for (const Part& p : b.parts) {
      const MatView& v = p.view;
      const bool dense = v.format == WeightFormat::kDense;
      const size_t row_bytes =
          dense ? size_t(v.cols) * dtype_size(v.dtype) : size_t(v.cols * v.bits / 8);
      release_pages(v.row(lo), size_t(v.row(hi - 1) - v.row(lo)) + row_bytes);
      if (dense) continue;
      const size_t ssz = dtype_size(v.scale_dtype);
      const size_t span =
          size_t((hi - 1 - lo) * v.scale_stride) * ssz + size_t(v.cols / v.group) * ssz;
      release_pages(v.scales + size_t(lo * v.scale_stride) * ssz, span);
      if (v.biases) release_pages(v.biases + size_t(lo * v.scale_stride) * ssz, span);
    }
  }
}

Result<RowSource> RowSource::of(const Source& src, const Module& m) {
  if (src.config.family == Family::kInkling2) return of_inkling2(src, m);
  RowSource rs;
  rs.cols_ = m.cols;
  const Weights& w = src.weights;
  auto one = [&](const MatView& v) { rs.append(v); };
  auto stack = [&](const std::vector<MatView>& vs) {
    for (const MatView& v : vs) rs.append(v);
  };
  if (m.group == Group::kMtp) {
    if (m.depth < 0 || size_t(m.depth) >= w.mtp.size())
      return Status::error("[quantize] " + m.path + ": the source has no MTP depth " +
                           std::to_string(m.depth));
    const MtpDepthWeights& D = w.mtp[size_t(m.depth)];
    const AttentionWeights& a = D.block.attn;
    switch (m.role) {
      case Role::kMtpInput:
        one(D.input_proj);
        break;
      case Role::kMtpQ:
        one(a.q);
        break;
      case Role::kMtpK:
        one(a.k);
        break;
      case Role::kMtpV:
        one(a.v);
        break;
      case Role::kMtpR:
        one(a.r);
        break;
      case Role::kMtpO:
        one(a.o);
        break;
      case Role::kMtpGateUp:
        // The released row order: gate row i at 2i, up row i at 2i + 1.
        for (int64_t i = 0; i < D.block.dense.gate.rows; ++i) {
          rs.bands_.push_back({2 * i, 1, {{D.block.dense.gate.slice_rows(i, 1), 0}}});
          rs.bands_.push_back({2 * i + 1, 1, {{D.block.dense.up.slice_rows(i, 1), 0}}});
        }
        break;
      case Role::kMtpDown:
        one(D.block.dense.down);
        break;
      default:
        return Status::error("[quantize] " + m.path + ": not an MTP module");
    }
    return std::move(rs).checked(m);
  }
  const bool in_layers = m.layer >= 0 && size_t(m.layer) < w.layers.size();
  if (m.layer >= 0 && !in_layers)
    return Status::error("[quantize] " + m.path + ": the source has no layer " +
                         std::to_string(m.layer));
  const LayerWeights* L = in_layers ? &w.layers[size_t(m.layer)] : nullptr;
  auto experts = [&](auto pick) {
    std::vector<MatView> vs;
    for (const SwiGluWeights& e : L->moe.routed) vs.push_back(pick(e));
    return vs;
  };
  auto shared = [&](auto pick) {
    std::vector<MatView> vs;
    for (const SwiGluWeights& e : L->moe.shared) vs.push_back(pick(e));
    return vs;
  };
  switch (m.role) {
    case Role::kEmbed:
      one(w.embed);
      break;
    case Role::kHead:
      one(w.lm_head);
      break;
    case Role::kQkvr:
      stack({L->attn.q, L->attn.k, L->attn.v, L->attn.r});
      break;
    case Role::kO:
      one(L->attn.o);
      break;
    case Role::kDenseGate:
      one(L->dense.gate);
      break;
    case Role::kDenseUp:
      one(L->dense.up);
      break;
    case Role::kDenseDown:
      one(L->dense.down);
      break;
    case Role::kRouter:
      one(L->moe.router);
      break;
    case Role::kExpertGate:
      stack(experts([](const SwiGluWeights& e) { return e.gate; }));
      break;
    case Role::kExpertUp:
      stack(experts([](const SwiGluWeights& e) { return e.up; }));
      break;
    case Role::kExpertDown:
      stack(experts([](const SwiGluWeights& e) { return e.down; }));
      break;
    case Role::kSharedGate:
      stack(shared([](const SwiGluWeights& e) { return e.gate; }));
      break;
    case Role::kSharedUp:
      stack(shared([](const SwiGluWeights& e) { return e.up; }));
      break;
    case Role::kSharedDown: {
      Band b{0, m.rows, {}};
      int64_t col0 = 0;
      for (const MatView& v : shared([](const SwiGluWeights& e) { return e.down; })) {
        b.parts.push_back({v, col0});
        col0 += v.cols;
      }
      rs.bands_.push_back(std::move(b));
      break;
    }
    default:
      return Status::error("[quantize] " + m.path + ": an MTP role outside the MTP group");
  }
  return std::move(rs).checked(m);
}

Result<RowSource> RowSource::checked(const Module& m) && {
  // Binding checked every shape against the config; this guards the plan/bind agreement.
  int64_t rows = 0;
  for (const Band& b : bands_) {
    int64_t cols = 0;
    for (const Part& p : b.parts) {
      if (!p.view.data || p.view.rows != b.rows)
        return Status::error("[quantize] " + m.path + ": source views do not match the plan");
      cols += p.view.cols;
    }
    if (b.row0 != rows || cols != m.cols)
      return Status::error("[quantize] " + m.path + ": source views do not match the plan");
    rows += b.rows;
  }
  if (bands_.empty() || rows != m.total_rows())
    return Status::error("[quantize] " + m.path + ": source views do not match the plan");
  return std::move(*this);
}

}  // namespace inkling::quant
