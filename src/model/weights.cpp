// bind_weights(): looks up each canonical tensor, checks dtype and shape against the config and
// errors with the checkpoint's own name and shapes, then builds the views.
#include "model/weights.h"

#include <set>

namespace inkling {

namespace {

// Expected shape of the checkpoint tensor a canonical tensor came from.
std::vector<int64_t> origin_expectation(const TensorRef& r, std::vector<int64_t> want) {
  switch (r.derivation) {
    case Derivation::kInterleavedHalf:
    case Derivation::kContiguousHalf:
      want[want.size() - 2] *= 2;
      return want;
    case Derivation::kConvSqueeze:
      if (r.origin_shape.size() == 3 && r.origin_shape[1] == 1) return {want[0], 1, want[1]};
      return {want[0], want[1], 1};
    case Derivation::kSame:
      return want;
  }
  return want;
}

class Binder {
 public:
  explicit Binder(const TensorMap& m) : m_(m) {}

  const TensorRef* get(const std::string& name, const std::vector<int64_t>& want) {
    used_.insert(name);
    auto it = m_.find(name);
    if (it == m_.end()) {
      fail("[load] missing tensor '" + name + "' (expected shape " + shape_str(want) + ")");
      return nullptr;
    }
    const TensorRef& r = it->second;
    if (r.shape != want) {
      fail("[load] " + r.origin + ": expected " + shape_str(origin_expectation(r, want)) +
           ", got " + shape_str(r.origin_shape));
      return nullptr;
    }
    return &r;
  }

  // A matrix (or one expert of a stacked [E, rows, cols] tensor).
  MatView mat(const std::string& name, int64_t rows, int64_t cols) {
    const TensorRef* r = get(name, {rows, cols});
    if (!r || !float_matrix(*r)) return {};
    return {r->dtype, r->data, rows, cols, r->strides[0]};
  }
  std::vector<MatView> stacked(const std::string& name, int64_t n, int64_t rows, int64_t cols) {
    std::vector<MatView> out;
    const TensorRef* r = get(name, {n, rows, cols});
    if (!r || !float_matrix(*r)) return out;
    for (int64_t e = 0; e < n; ++e)
      out.push_back({r->dtype, r->data + size_t(e * r->strides[0]) * dtype_size(r->dtype), rows,
                     cols, r->strides[1]});
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

  const Status& status() const { return status_; }
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [name, r] : m_)
      if (!used_.count(name)) out.push_back(r.origin);
    return out;
  }

 private:
  bool float_dtype(const TensorRef& r) {
    if (r.dtype == DType::F32 || r.dtype == DType::BF16 || r.dtype == DType::F16) return true;
    fail("[load] " + r.origin + ": dtype " + dtype_name(r.dtype) +
         " is not supported here (expected F32, BF16 or F16)");
    return false;
  }
  bool float_matrix(const TensorRef& r) {
    if (!float_dtype(r)) return false;
    if (r.strides.back() != 1) {
      fail("[load] " + r.origin + ": columns are not contiguous");
      return false;
    }
    return true;
  }
  void fail(std::string msg) {
    if (status_.is_ok()) status_ = Status::error(std::move(msg));
  }
  const TensorMap& m_;
  std::set<std::string> used_;
  Status status_;
};

}  // namespace

Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors) {
  Binder b(tensors);
  Weights w;
  const int64_t H = c.hidden, V = c.vocab_size, K = c.conv_k;
  w.embed = b.mat("model.embed_tokens.weight", V, H);
  w.lm_head = b.mat("lm_head.weight", V, H);
  w.embed_norm = b.vec("model.embed_norm.weight", {H});
  w.final_norm = b.vec("model.norm.weight", {H});
  for (int i = 0; i < c.n_layers && b.status().is_ok(); ++i) {
    const LayerSpec& s = c.layers[size_t(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights L;
    const int64_t nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim;
    L.attn_norm = b.vec(p + "input_layernorm.weight", {H});
    L.mlp_norm = b.vec(p + "post_attention_layernorm.weight", {H});
    L.attn_conv = b.vec(p + "attn_sconv.conv1d.weight", {H, K});
    L.mlp_conv = b.vec(p + "mlp_sconv.conv1d.weight", {H, K});
    AttentionWeights& a = L.attn;
    a.q = b.mat(p + "self_attn.q_proj.weight", nh * hd, H);
    a.k = b.mat(p + "self_attn.k_proj.weight", nkv * hd, H);
    a.v = b.mat(p + "self_attn.v_proj.weight", nkv * hd, H);
    a.r = b.mat(p + "self_attn.r_proj.weight", nh * c.d_rel, H);
    a.o = b.mat(p + "self_attn.o_proj.weight", H, nh * hd);
    a.q_norm = b.vec(p + "self_attn.q_norm.weight", {hd});
    a.k_norm = b.vec(p + "self_attn.k_norm.weight", {hd});
    a.k_conv = b.vec(p + "self_attn.k_sconv.conv1d.weight", {nkv * hd, K});
    a.v_conv = b.vec(p + "self_attn.v_sconv.conv1d.weight", {nkv * hd, K});
    a.rel_proj = b.vec(p + "self_attn.rel_logits_proj.proj", {c.d_rel, s.rel_extent});
    if (s.dense) {
      const int64_t W = c.dense_width;
      L.dense = {b.mat(p + "mlp.gate_proj.weight", W, H), b.mat(p + "mlp.up_proj.weight", W, H),
                 b.mat(p + "mlp.down_proj.weight", H, W)};
      L.dense_scale = b.scalar(p + "mlp.global_scale");
    } else {
      const int64_t E = c.n_routed, S = c.n_shared, I = c.moe_width;
      MoeWeights& m = L.moe;
      m.router = b.mat(p + "mlp.gate.weight", E + S, H);
      m.router_bias = b.vec(p + "mlp.gate.e_score_correction_bias", {E});
      m.router_scale = b.scalar(p + "mlp.gate.global_scale");
      auto g = b.stacked(p + "mlp.experts.gate_proj", E, I, H);
      auto u = b.stacked(p + "mlp.experts.up_proj", E, I, H);
      auto d = b.stacked(p + "mlp.experts.down_proj", E, H, I);
      for (size_t e = 0; e < g.size() && e < u.size() && e < d.size(); ++e)
        m.routed.push_back({g[e], u[e], d[e]});
      if (S > 0) {
        auto sg = b.stacked(p + "mlp.shared_experts.gate_proj", S, I, H);
        auto su = b.stacked(p + "mlp.shared_experts.up_proj", S, I, H);
        auto sd = b.stacked(p + "mlp.shared_experts.down_proj", S, H, I);
        for (size_t e = 0; e < sg.size() && e < su.size() && e < sd.size(); ++e)
          m.shared.push_back({sg[e], su[e], sd[e]});
      }
    }
    w.layers.push_back(std::move(L));
  }
  if (!b.status().is_ok()) return b.status();
  w.unused = b.unused();
  return w;
}

}  // namespace inkling
