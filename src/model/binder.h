// Binder: looks up canonical tensors, decides each matrix's storage (dense, MLX affine, NVFP4,
// MXFP8) from its sidecars, shapes and the quantization config, checks dtype and shape and builds
// the views, keeping the first error (named by the checkpoint's own tensor and shape). Shared by
// every model family's weight binding (model/weights.cpp, model/inkling2/bind.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/layouts.h"
#include "model/quant_config.h"
#include "model/weights.h"
#include "ops/formats.h"
#include "ops/quant.h"

namespace inkling {

// MLX affine widths come from the format registry: a width is loadable when an entry runs it.
inline bool affine_width_registered(int bits) {
  MatView probe;
  probe.format = WeightFormat::kAffine;
  probe.bits = bits;
  return bits > 0 && bits <= 8 && find_format(probe) != nullptr;
}

inline std::string registered_affine_widths() {
  std::string out;
  for (const FormatEntry& f : weight_formats())
    if (f.family == WeightFormat::kAffine) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

// Expected shape of the checkpoint tensor a canonical tensor came from.
inline std::vector<int64_t> origin_expectation(const TensorRef& r, std::vector<int64_t> want) {
  switch (r.derivation) {
    case Derivation::kInterleavedHalf:
    case Derivation::kContiguousHalf:
      if (want.size() >= 2) want[want.size() - 2] *= 2;
      return want;
    case Derivation::kConvSqueeze:
      if (r.origin_shape.size() == 3 && r.origin_shape[1] == 1) return {want[0], 1, want[1]};
      return {want[0], want[1], 1};
    case Derivation::kSame:
      return want;
  }
  return want;
}

inline bool float_type(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

// Module path of a checkpoint tensor, as quantization configs key it: "x.weight" -> "x";
// a bare parameter "m.experts.w13_weight" -> "m.experts".
inline std::string module_of(const std::string& origin) {
  const std::string w = ".weight";
  if (origin.size() > w.size() && origin.compare(origin.size() - w.size(), w.size(), w) == 0)
    return origin.substr(0, origin.size() - w.size());
  const size_t dot = origin.rfind('.');
  return dot == std::string::npos ? origin : origin.substr(0, dot);
}

inline std::vector<int64_t> with_lead(int64_t n, std::vector<int64_t> s) {
  if (n > 0) s.insert(s.begin(), n);
  return s;
}

class Binder {
 public:
  Binder(const TensorMap& m, const QuantConfig& q) : m_(m), q_(q) {}

  const TensorRef* find(const std::string& name) {
    auto it = m_.find(name);
    if (it == m_.end()) return nullptr;
    used_.insert(name);
    return &it->second;
  }
  bool has(const std::string& name) const { return m_.count(name) > 0; }

  const TensorRef* get(const std::string& name, const std::vector<int64_t>& want) {
    const TensorRef* r = find(name);
    if (!r) {
      used_.insert(name);
      fail("[load] missing tensor '" + name + "' (expected shape " + shape_str(want) + ")");
      return nullptr;
    }
    if (!check_shape(*r, want)) return nullptr;
    return r;
  }

  // `n` matrices [rows, cols] from a stacked [n, rows, cols] tensor (n = 0: one 2-D matrix), in
  // whatever storage the checkpoint holds them.
  std::vector<MatView> matrices(const std::string& name, int64_t n, int64_t rows, int64_t cols) {
    const std::vector<int64_t> logical = with_lead(n, {rows, cols});
    const TensorRef* r = find(name);
    if (!r) {
      get(name, logical);
      return {};
    }
    const TensorRef* scales = find(sidecar_name(name, Sidecar::kScales));
    const TensorRef* biases = find(sidecar_name(name, Sidecar::kBiases));
    const TensorRef* scale2 = find(sidecar_name(name, Sidecar::kScale2));
    const TensorRef* amax = find(sidecar_name(name, Sidecar::kAmax));
    const TensorRef* denom = find(sidecar_name(name, Sidecar::kDenominator));
    const ModuleQuant mq = q_.lookup(module_of(r->origin));
    if ((amax || denom) && !scales)
      return failv("[load] " + (amax ? amax : denom)->origin +
                   ": an NVFP4 companion without the block scales of " + r->origin);
    if (!scales) {
      if (r->dtype == DType::U32 || r->dtype == DType::U8 || r->dtype == DType::F8_E4M3)
        return failv("[load] " + r->origin + ": dtype " + dtype_name(r->dtype) +
                     " holds quantized codes, but there is no scales tensor (" +
                     sidecar_name(r->origin, Sidecar::kScales) + ")");
      if (mq.stated && mq.quantized)
        return failv("[load] " + r->origin + ": " + mq.why +
                     " says this module is quantized, but it" + " is a " + dtype_name(r->dtype) +
                     " tensor without scales");
      if (!check_shape(*r, logical) || !float_matrix(*r)) return {};
      count(dtype_name(r->dtype), {r});
      return views(*r, nullptr, nullptr, n, [&](MatView v, int64_t) {
        v.cols = cols;
        return v;
      });
    }
    if (mq.stated && !mq.quantized)
      return failv("[load] " + r->origin + ": " + mq.why +
                   " says this module is not quantized, but it has quantization scales");
    if (r->dtype == DType::F8_E4M3 && !biases && !amax && !denom && !scale2)
      return mxfp8(*r, *scales, n, rows, cols);
    if (r->dtype != DType::U32 && r->dtype != DType::U8)
      return failv("[load] " + r->origin +
                   ": quantized codes must be U32 (MLX), U8 (NVFP4) or F8_E4M3 (MXFP8), got " +
                   dtype_name(r->dtype));
    if (biases) return affine(*r, *scales, *biases, mq, n, rows, cols);
    if (amax || denom || r->dtype == DType::U8 || mq.mode == QuantMode::kNvfp4) {
      const std::vector<float> s2 =
          amax || denom ? amax_factors(*r, amax, denom, n) : scale2_factors(*r, scale2, n);
      if (s2.empty()) return {};
      count("nvfp4", {scale2, amax, denom});
      return nvfp4(*r, *scales, s2, n, rows, cols);
    }
    if (mq.mode == QuantMode::kMxfp4 || mq.mode == QuantMode::kOther)
      return failv("[load] " + r->origin + ": quantization mode " + quant_mode_name(mq.mode) +
                   " (" + mq.why + ") is not supported");
    return failv("[load] " + r->origin + ": MLX affine weight without its biases tensor (" +
                 sidecar_name(r->origin, Sidecar::kBiases) + ")");
  }
  MatView mat(const std::string& name, int64_t rows, int64_t cols) {
    auto v = matrices(name, 0, rows, cols);
    return v.empty() ? MatView{} : v[0];
  }
  // Shared experts: stacked [S, rows, cols], or flattened like mlx-vlm (gate/up [S*I, H],
  // down [H, S*I] expert-major: expert s is a row or column slice of the flat matrix).
  std::vector<MatView> shared(const std::string& name, int64_t S, int64_t rows, int64_t cols,
                              bool down) {
    auto it = m_.find(name);
    if (it == m_.end() || it->second.shape.size() != 2) return matrices(name, S, rows, cols);
    std::vector<MatView> out;
    if (!down) {
      const MatView flat = mat(name, S * rows, cols);
      if (!status_.ok()) return {};
      for (int64_t s = 0; s < S; ++s) out.push_back(flat.slice_rows(s * rows, rows));
      return out;
    }
    const MatView flat = mat(name, rows, S * cols);
    if (!status_.ok()) return {};
    const int64_t align = flat.format == WeightFormat::kDense ? 1 : flat.group;
    if (cols % align != 0)
      return failv("[load] " + it->second.origin + ": expert width " + std::to_string(cols) +
                   " is not a multiple of the quantization group " + std::to_string(align) +
                   ", so the flattened shared experts cannot be split");
    for (int64_t s = 0; s < S; ++s) out.push_back(slice_cols(flat, s * cols, cols));
    return out;
  }
  std::vector<float> vec(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorRef* r = get(name, shape);
    if (!r || !float_dtype(*r)) return {};
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> out(static_cast<size_t>(n));
    // Walk the (possibly strided) view in row-major order.
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * r->strides[d];
      out[size_t(i)] = load_as_f32(r->dtype, r->data, size_t(off));
      for (int d = int(shape.size()) - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < shape[size_t(d)]) break;
        idx[size_t(d)] = 0;
      }
    }
    return out;
  }
  float scalar(const std::string& name) {
    auto v = vec(name, {1});
    return v.empty() ? 1.f : v[0];
  }
  void fail(std::string msg) {
    if (status_.ok()) status_ = Status::error(std::move(msg));
  }
  std::vector<MatView> failv(std::string msg) {
    fail(std::move(msg));
    return {};
  }
  std::vector<float> failv_f(std::string msg) {
    fail(std::move(msg));
    return {};
  }

  const Status& status() const { return status_; }
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [name, r] : m_)
      if (!used_.count(name)) out.push_back(r.origin);
    return out;
  }
  std::map<std::string, Weights::Storage> storage() const { return storage_; }

 private:
  bool check_shape(const TensorRef& r, const std::vector<int64_t>& want) {
    if (r.shape == want) return true;
    fail("[load] " + r.origin + ": expected " + shape_str(origin_expectation(r, want)) + ", got " +
         shape_str(r.origin_shape));
    return false;
  }
  bool float_dtype(const TensorRef& r) {
    if (float_type(r.dtype)) return true;
    fail("[load] " + r.origin + ": dtype " + dtype_name(r.dtype) +
         " is not supported here (expected F32, BF16 or F16)");
    return false;
  }
  bool contiguous_cols(const TensorRef& r) {
    if (r.strides.back() == 1) return true;
    fail("[load] " + r.origin + ": columns are not contiguous");
    return false;
  }
  bool float_matrix(const TensorRef& r) { return float_dtype(r) && contiguous_cols(r); }

  // Builds the n (or 1) views; `finish` fills in format-specific fields of each.
  template <typename F>
  std::vector<MatView> views(const TensorRef& codes, const TensorRef* scales,
                             const TensorRef* biases, int64_t n, F finish) {
    std::vector<MatView> out;
    const int64_t rows = codes.shape[codes.shape.size() - 2];
    for (int64_t e = 0; e < std::max<int64_t>(n, 1); ++e) {
      MatView v;
      v.dtype = codes.dtype;
      v.data = codes.data + size_t(n > 0 ? e * codes.strides[0] : 0) * dtype_size(codes.dtype);
      v.rows = rows;
      v.row_stride = codes.strides[codes.strides.size() - 2];
      if (scales) {
        const size_t off = size_t(n > 0 ? e * scales->strides[0] : 0) * dtype_size(scales->dtype);
        v.scales = scales->data + off;
        v.scale_dtype = scales->dtype;
        v.scale_stride = scales->strides[scales->strides.size() - 2];
        if (biases) v.biases = biases->data + off;
        // Quantized rows are addressed in bytes.
        v.row_stride *= int64_t(dtype_size(codes.dtype));
      }
      out.push_back(finish(v, e));
    }
    return out;
  }

  void count(const std::string& label, std::initializer_list<const TensorRef*> refs) {
    for (const TensorRef* r : refs) {
      if (!r || !counted_.insert(r->origin).second) continue;
      int64_t numel = 1;
      for (int64_t d : r->origin_shape) numel *= d;
      Weights::Storage& s = storage_[label];
      s.tensors += 1;
      s.bytes += uint64_t(numel) * dtype_size(r->dtype);
    }
  }

  std::vector<MatView> affine(const TensorRef& r, const TensorRef& s, const TensorRef& b,
                              const ModuleQuant& mq, int64_t n, int64_t rows, int64_t cols) {
    const std::string& o = r.origin;
    if (r.dtype != DType::U32)
      return failv("[load] " + o + ": MLX affine codes must be U32, got " + dtype_name(r.dtype));
    // Bits: as configured, else inferred from the packed width.
    const int64_t packed = r.shape.empty() ? 0 : r.shape.back();
    int bits = mq.bits;
    if (!bits && packed > 0 && (packed * 32) % cols == 0) bits = int(packed * 32 / cols);
    if (!affine_width_registered(bits))
      return failv("[load] " + o + ": " +
                   (mq.bits ? "bits " + std::to_string(mq.bits) + " (" + mq.why + ")"
                            : shape_str(r.origin_shape) + " implies " +
                                  std::to_string(double(packed) * 32 / double(cols)) + " bits") +
                   " is not supported (this build runs " + registered_affine_widths() + ")");
    if (!check_shape(r, with_lead(n, {rows, cols * bits / 32})) || !contiguous_cols(r)) return {};
    // Group: as configured, else inferred from the scales' width.
    const int64_t ngroups = s.shape.empty() ? 0 : s.shape.back();
    int64_t group = mq.group;
    if (!group && ngroups > 0 && cols % ngroups == 0) group = cols / ngroups;
    if (group <= 0 || cols % group != 0)
      return failv("[load] " + o + ": group size " + (group > 0 ? std::to_string(group) : "?") +
                   " does not divide the row length " + std::to_string(cols) + " (scales " +
                   shape_str(s.origin_shape) + ")");
    if (group != 32 && group != 64 && group != 128)
      return failv("[load] " + o + ": group size " + std::to_string(group) +
                   " is not supported (MLX affine groups 32, 64 or 128)");
    if (!check_shape(s, with_lead(n, {rows, cols / group})) || !contiguous_cols(s)) return {};
    if (!float_type(s.dtype))
      return failv("[load] " + s.origin + ": scales must be F32, BF16 or F16, got " +
                   dtype_name(s.dtype));
    if (b.shape != s.shape || b.strides != s.strides || b.dtype != s.dtype)
      return failv("[load] " + b.origin + ": biases must match the scales " +
                   shape_str(s.origin_shape) + " " + dtype_name(s.dtype) + ", got " +
                   shape_str(b.origin_shape) + " " + dtype_name(b.dtype));
    count("affine q" + std::to_string(bits) + "/g" + std::to_string(group), {&r, &s, &b});
    return views(r, &s, &b, n, [&](MatView v, int64_t) {
      v.format = WeightFormat::kAffine;
      v.cols = cols;
      v.bits = bits;
      v.group = int(group);
      return v;
    });
  }

  // Values of a float tensor of 1 or n (> 0) elements ([], [1], [n] or [n, 1]) as n factors;
  // empty after an error naming it.
  std::vector<float> per_expert(const TensorRef& t, int64_t n, const char* what) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const size_t ne = size_t(std::max<int64_t>(n, 1));
    const bool shape_ok = t.shape.size() <= 2 && (t.shape.size() < 2 || t.shape[1] == 1) &&
                          (numel == 1 || numel == int64_t(ne));
    if (!shape_ok || !float_type(t.dtype))
      return failv_f("[load] " + t.origin + ": expected a float " + what + " of " +
                     (n > 0 ? "[" + std::to_string(n) + "] or " : std::string()) +
                     "[] elements, got " + shape_str(t.origin_shape) + " " + dtype_name(t.dtype));
    std::vector<float> out(ne);
    for (size_t e = 0; e < ne; ++e)
      out[e] = load_as_f32(t.dtype, t.data,
                           numel == 1 ? 0 : e * size_t(t.strides.empty() ? 1 : t.strides[0]));
    return out;
  }

  // NVFP4's per-tensor (per-expert) factor, n of them (1 for n = 0): ModelOpt's scale2 (U8 codes
  // always ship it; MLX nvfp4, U32 codes, may omit it: 1).
  std::vector<float> scale2_factors(const TensorRef& r, const TensorRef* s2, int64_t n) {
    if (s2) return per_expert(*s2, n, "scale2");
    if (r.dtype == DType::U8)
      return failv_f("[load] " + r.origin +
                     ".scale2: missing (an NVFP4 weight needs its per-tensor scale2)");
    return std::vector<float>(size_t(std::max<int64_t>(n, 1)), 1.f);
  }

  // Inkling 2's NVFP4 experts: scale2 = amax[e] / outer_scale_denominator (transformers'
  // Inkling2LoopDequantizeExperts: both as f32, one division).
  std::vector<float> amax_factors(const TensorRef& r, const TensorRef* amax, const TensorRef* denom,
                                  int64_t n) {
    if (!amax || !denom)
      return failv_f("[load] " + r.origin + ": NVFP4 experts need both " + r.origin + "_amax and " +
                     r.origin + "_outer_scale_denominator (found only " +
                     (amax ? amax : denom)->origin + ")");
    if (r.dtype != DType::U8)
      return failv_f("[load] " + r.origin + ": NVFP4 codes must be U8, got " + dtype_name(r.dtype));
    std::vector<float> a = per_expert(*amax, n, "amax");
    const std::vector<float> d = per_expert(*denom, n, "outer_scale_denominator");
    if (a.empty() || d.empty()) return {};
    for (size_t e = 0; e < a.size(); ++e) a[e] /= d[e];
    return a;
  }

  // MXFP8: E4M3 values [.., rows, cols], U8 (E8M0) exponents [.., rows, cols / 32].
  std::vector<MatView> mxfp8(const TensorRef& r, const TensorRef& s, int64_t n, int64_t rows,
                             int64_t cols) {
    if (cols % 32 != 0)
      return failv("[load] " + r.origin + ": MXFP8 block size 32 does not divide the row length " +
                   std::to_string(cols));
    if (!check_shape(r, with_lead(n, {rows, cols})) || !contiguous_cols(r)) return {};
    if (s.dtype != DType::U8 && s.dtype != DType::F8_E8M0)
      return failv("[load] " + s.origin + ": MXFP8 block scales must be U8 or F8_E8M0, got " +
                   dtype_name(s.dtype));
    if (!check_shape(s, with_lead(n, {rows, cols / 32})) || !contiguous_cols(s)) return {};
    count("mxfp8", {&r, &s});
    return views(r, &s, nullptr, n, [&](MatView v, int64_t) {
      v.format = WeightFormat::kMxfp8;
      v.cols = cols;
      v.bits = 8;
      v.group = 32;
      return v;
    });
  }

  // NVFP4 codes and block scales; `scale2` holds the factor of each of the n (or 1) matrices.
  std::vector<MatView> nvfp4(const TensorRef& r, const TensorRef& s,
                             const std::vector<float>& scale2, int64_t n, int64_t rows,
                             int64_t cols) {
    const std::string& o = r.origin;
    if (cols % 16 != 0)
      return failv("[load] " + o + ": NVFP4 block size 16 does not divide the row length " +
                   std::to_string(cols));
    const int64_t per = r.dtype == DType::U8 ? 2 : 8;
    if (!check_shape(r, with_lead(n, {rows, cols / per})) || !contiguous_cols(r)) return {};
    if (s.dtype != DType::F8_E4M3 && s.dtype != DType::U8)
      return failv("[load] " + s.origin + ": NVFP4 block scales must be F8_E4M3 (or U8), got " +
                   dtype_name(s.dtype));
    if (!check_shape(s, with_lead(n, {rows, cols / 16})) || !contiguous_cols(s)) return {};
    count("nvfp4", {&r, &s});
    return views(r, &s, nullptr, n, [&](MatView v, int64_t e) {
      v.format = WeightFormat::kNvfp4;
      v.cols = cols;
      v.bits = 4;
      v.group = 16;
      v.scale2 = scale2[size_t(e)];
      return v;
    });
  }

  const TensorMap& m_;
  const QuantConfig& q_;
  std::set<std::string> used_, counted_;
  std::map<std::string, Weights::Storage> storage_;
  Status status_;
};

// The end of every family's binding: the binder's first error, else every matrix of `w` bound to
// its kernels (one error naming a matrix no kernel runs), and the unused tensors and storage
// totals recorded (model/weights.cpp).
Status finish_binding(const Binder& b, Weights* w);

}  // namespace inkling
