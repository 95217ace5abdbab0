// bind_vit() and vit_forward(): Inkling 2's ViT with transformers' float32 arithmetic (eager
// attention: scores = q k^T * hd^-0.5, softmax in f32, then the values), matrices through the
// kernel registry (ops/matmul.h), so fast numerics rounds the tower's activations as the text
// model's.
#include "model/inkling2/vision.h"

#include <algorithm>
#include <cmath>

#include "base/dtype.h"
#include "model/tower_tensors.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/softmax.h"

namespace inkling {

namespace {

constexpr int64_t kQueryChunk = 128;  // attention rows scored at once: [chunk, S] scores

struct VitBinder {
  const TensorMap& m;
  std::vector<std::string>* bound;
  std::string error;

  const TensorRef* get(const std::string& og, const std::string& tf,
                       const std::vector<int64_t>& shape) {
    if (!error.empty()) return nullptr;
    const TensorRef* r = find_tower_tensor(m, {"model.visual." + og, "model.vision_tower." + tf});
    if (!r) {
      error = "[load] missing tensor model.visual." + og + " (transformers: model.vision_tower." +
              tf + ")";
      return nullptr;
    }
    error = check_tower_tensor(*r, shape);
    if (!error.empty()) return nullptr;
    bound->push_back(r->origin);
    return r;
  }
  std::vector<float> vec(const std::string& og, const std::string& tf, int64_t n) {
    const TensorRef* r = get(og, tf, {n});
    return r ? tower_vector(*r) : std::vector<float>{};
  }
  MatView mat(const std::string& og, const std::string& tf, int64_t rows, int64_t cols) {
    const TensorRef* r = get(og, tf, {rows, cols});
    if (!r) return {};
    MatView v = tower_matrix(*r);
    if (!v.kernels) error = "[load] " + r->origin + ": no kernel runs this storage";
    return v;
  }
};

// LayerNorm over rows with bias, statistics in double: (x - mean) * rstd * w + b.
void layer_norm(const float* x, const std::vector<float>& w, const std::vector<float>& b,
                int64_t n_rows, int64_t n, double eps, float* out) {
  for (int64_t i = 0; i < n_rows; ++i) {
    const float* xi = x + i * n;
    float* oi = out + i * n;
    double sum = 0, ss = 0;
    for (int64_t j = 0; j < n; ++j) sum += xi[j];
    const double mean = sum / double(n);
    for (int64_t j = 0; j < n; ++j) ss += (xi[j] - mean) * (xi[j] - mean);
    const double rstd = 1.0 / std::sqrt(ss / double(n) + eps);
    for (int64_t j = 0; j < n; ++j)
      oi[j] = float((xi[j] - mean) * rstd) * w[size_t(j)] + b[size_t(j)];
  }
}

void add_bias(float* y, int64_t n_rows, const std::vector<float>& b) {
  const int64_t n = int64_t(b.size());
  for (int64_t i = 0; i < n_rows; ++i)
    for (int64_t j = 0; j < n; ++j) y[i * n + j] += b[size_t(j)];
}

void gelu(float* x, int64_t n) {  // exact (erf) GELU
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(0.5 * double(x[i]) * (1.0 + std::erf(double(x[i]) * M_SQRT1_2)));
}

// y = x W^T (+ b).
void linear(const float* x, int64_t n, const MatView& w, const std::vector<float>& b, float* y,
            ThreadPool* pool) {
  matmul(x, n, w.cols, w, y, w.rows, pool);
  if (!b.empty()) add_bias(y, n, b);
}

MatView f32_view(const float* data, int64_t rows, int64_t cols) {
  MatView v;
  v.dtype = DType::F32;
  v.data = reinterpret_cast<const uint8_t*>(data);
  v.rows = rows;
  v.cols = cols;
  v.row_stride = cols;
  bind_kernels(v);
  return v;
}

// Native-patch (row, col) of sequence patch n in 2 x 2-merge order over a cols-tile-wide grid.
void patch_coords(int64_t n, int64_t m, int64_t cols, int64_t* row, int64_t* col) {
  const int64_t in_col = n % m, in_row = (n / m) % m, block = n / (m * m);
  *row = (block / cols) * m + in_row;
  *col = (block % cols) * m + in_col;
}

// Bilinear taps (align_corners = false, border clamp) of target index i on an axis of `size`
// into a table side of `side`, as transformers' vision_utils computes them in f32.
void axis_taps(int64_t i, int64_t size, int64_t side, int64_t tap[2], float wt[2]) {
  const float src = (float(i) + 0.5f) * float(side) / float(size) - 0.5f;
  const float fl = std::floor(src);
  for (int o = 0; o < 2; ++o) {
    tap[o] = std::clamp(int64_t(fl) + o, int64_t(0), side - 1);
    const float dist = std::fabs(src - fl - float(o));
    wt[o] = std::max(1.0f - dist, 0.0f);
  }
}

// Interleaved axial RoPE over the full head dim: pairs [0, hd/4) turn with the column position,
// [hd/4, hd/2) with the row position, each pair (a, b) -> (a cos - b sin, b cos + a sin).
void rope(float* x, int64_t S, int64_t nh, int64_t hd, const float* cs) {
  for (int64_t t = 0; t < S; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      float* v = x + (t * nh + h) * hd;
      const float* c = cs + t * hd;  // (cos, sin) per pair
      for (int64_t j = 0; j < hd / 2; ++j) {
        const float a = v[2 * j], b = v[2 * j + 1], co = c[2 * j], si = c[2 * j + 1];
        const float ac = a * co, bs = b * si, bc = b * co, as = a * si;
        v[2 * j] = ac - bs;
        v[2 * j + 1] = bc + as;
      }
    }
}

// Bidirectional multi-head attention of S rows: q, k, v [S, nh * hd] -> out [S, nh * hd]. One
// head's keys [S, hd] and transposed values [hd, S] are a weight view each: f32 (exact), or
// rounded to bf16 (fast, with bf16 activations: the kernels' fast grade).
void attend(const float* q, const float* k, const float* v, int64_t S, int64_t nh, int64_t hd,
            Numerics numerics, float* out, ThreadPool* pool) {
  const bool bf16 = numerics == Numerics::kFast;
  const float scale = float(std::pow(double(hd), -0.5));
  std::vector<float> kh(size_t(S * hd)), vt(size_t(hd * S)), qh(size_t(kQueryChunk * hd));
  std::vector<uint16_t> kh16(bf16 ? kh.size() : 0), vt16(bf16 ? vt.size() : 0);
  std::vector<float> p(size_t(kQueryChunk * S)), o(size_t(kQueryChunk * hd));
  for (int64_t h = 0; h < nh; ++h) {
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < hd; ++d) {
        kh[size_t(t * hd + d)] = k[(t * nh + h) * hd + d];
        vt[size_t(d * S + t)] = v[(t * nh + h) * hd + d];
      }
    MatView K = f32_view(kh.data(), S, hd), Vt = f32_view(vt.data(), hd, S);
    if (bf16) {
      for (size_t i = 0; i < kh.size(); ++i) kh16[i] = f32_to_bf16(kh[i]);
      for (size_t i = 0; i < vt.size(); ++i) vt16[i] = f32_to_bf16(vt[i]);
      K.dtype = Vt.dtype = DType::BF16;
      K.data = reinterpret_cast<const uint8_t*>(kh16.data());
      Vt.data = reinterpret_cast<const uint8_t*>(vt16.data());
      bind_kernels(K, KernelMode::kFastFine);
      bind_kernels(Vt, KernelMode::kFastFine);
    }
    for (int64_t t0 = 0; t0 < S; t0 += kQueryChunk) {
      const int64_t n = std::min(kQueryChunk, S - t0);
      for (int64_t t = 0; t < n; ++t)
        std::copy_n(q + ((t0 + t) * nh + h) * hd, hd, qh.data() + t * hd);
      matmul(qh.data(), n, hd, K, p.data(), S, pool);
      softmax_rows(p.data(), n, S, scale);
      matmul(p.data(), n, S, Vt, o.data(), hd, pool);
      for (int64_t t = 0; t < n; ++t)
        std::copy_n(o.data() + t * hd, hd, out + ((t0 + t) * nh + h) * hd);
    }
  }
}

}  // namespace

std::string bind_vit(const VitConfig& vc, const TensorMap& m, int text_hidden, VitWeights* w,
                     std::vector<std::string>* bound) {
  if (vc.text_hidden != 0 && vc.text_hidden != text_hidden)
    return "[config] vision_config.text_hidden_size " + std::to_string(vc.text_hidden) +
           " is not the text model's hidden size " + std::to_string(text_hidden);
  const int64_t D = vc.hidden, F = vc.intermediate, G = int64_t(vc.grid) * vc.grid;
  const int64_t in = int64_t(vc.channels) * vc.patch * vc.patch, mm = int64_t(vc.merge) * vc.merge;
  VitBinder b{m, bound, ""};
  const std::string e = "backbone.embeddings.", te = "embeddings.";
  w->patch_embed = b.mat(e + "patch_embedding.weight", te + "patch_embedding.weight", D, in);
  if (find_tower_tensor(m, {"model.visual." + e + "position_embedding.weight"}))
    w->pos_table = b.vec(e + "position_embedding.weight", te + "position_embedding.weight", G * D);
  else if (const TensorRef* r =
               b.get(e + "position_embedding", te + "position_embedding.weight", {G, D}))
    w->pos_table = tower_vector(*r);
  const std::vector<float> cls = b.vec(e + "class_embedding", te + "class_embedding", D);
  const std::vector<float> cpos =
      b.vec(e + "cls_position_embedding", te + "cls_position_embedding", D);
  w->ln_pre_w = b.vec("backbone.ln_pre.weight", "pre_layernorm.weight", D);
  w->ln_pre_b = b.vec("backbone.ln_pre.bias", "pre_layernorm.bias", D);
  for (int i = 0; i < vc.layers && b.error.empty(); ++i) {
    const std::string o = "backbone.layers." + std::to_string(i) + ".",
                      t = "layers." + std::to_string(i) + ".";
    VitLayer L;
    L.ln1_w = b.vec(o + "ln_1.weight", t + "layernorm_before.weight", D);
    L.ln1_b = b.vec(o + "ln_1.bias", t + "layernorm_before.bias", D);
    L.ln2_w = b.vec(o + "ln_2.weight", t + "layernorm_after.weight", D);
    L.ln2_b = b.vec(o + "ln_2.bias", t + "layernorm_after.bias", D);
    L.lambda1 = b.vec(o + "ls_1.gamma", t + "lambda_1", D);
    L.lambda2 = b.vec(o + "ls_2.gamma", t + "lambda_2", D);
    struct Lin {
      MatView* w;
      std::vector<float>* b;
      const char *og, *tf;
      int64_t rows, cols;
    } lins[] = {{&L.q, &L.q_b, "self_attn.q_proj", "self_attn.q_proj", D, D},
                {&L.k, &L.k_b, "self_attn.k_proj", "self_attn.k_proj", D, D},
                {&L.v, &L.v_b, "self_attn.v_proj", "self_attn.v_proj", D, D},
                {&L.o, &L.o_b, "self_attn.out_proj", "self_attn.out_proj", D, D},
                {&L.fc1, &L.fc1_b, "mlp.c_fc", "mlp.fc1", F, D},
                {&L.fc2, &L.fc2_b, "mlp.c_proj", "mlp.fc2", D, F}};
    for (Lin& l : lins) {
      *l.w = b.mat(o + l.og + ".weight", t + l.tf + ".weight", l.rows, l.cols);
      *l.b = b.vec(o + l.og + ".bias", t + l.tf + ".bias", l.rows);
    }
    w->layers.push_back(std::move(L));
  }
  const int64_t P = vc.proj_hidden;
  w->proj1 = b.mat("proj_in.weight", "merger.linear_1.weight", P, mm * D);
  w->proj2 = b.mat("proj_out.weight", "merger.linear_2.weight", text_hidden, P);
  if (vc.projector_bias) {
    w->proj1_b = b.vec("proj_in.bias", "merger.linear_1.bias", P);
    w->proj2_b = b.vec("proj_out.bias", "merger.linear_2.bias", text_hidden);
  }
  if (!b.error.empty()) return b.error;
  w->cls.resize(size_t(D));
  for (int64_t j = 0; j < D; ++j) w->cls[size_t(j)] = cls[size_t(j)] + cpos[size_t(j)];
  return "";
}

void vit_forward(const VitConfig& vc, const VitWeights& w, const float* pv, int64_t rows,
                 int64_t cols, float* out, ThreadPool* pool) {
  const int64_t D = vc.hidden, nh = vc.heads, hd = D / nh, F = vc.intermediate;
  const int64_t p = vc.patch, m = vc.merge, C = vc.channels, tile = p * m, side = vc.grid;
  const int64_t tiles = rows * cols, N = tiles * m * m, S = N + 1, in = C * p * p;
  // Patches in 2 x 2-merge order, each flattened (ph, pw, c).
  std::vector<float> patches(size_t(N * in)), h(size_t(S * D));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = n / (m * m), mh = (n / m) % m, mw = n % m;
    for (int64_t y = 0; y < p; ++y)
      std::copy_n(pv + ((t * tile + mh * p + y) * tile + mw * p) * C, p * C,
                  patches.data() + n * in + y * p * C);
  }
  std::copy_n(w.cls.data(), D, h.data());
  matmul(patches.data(), N, in, w.patch_embed, h.data() + D, D, pool);
  // The learned position table resampled to the (rows m) x (cols m) patch grid; RoPE angles.
  std::vector<float> cs(size_t(S * hd), 0.0f), inv(size_t(hd / 4));
  const float spatial = float(hd / 2);
  for (int64_t i = 0; i < hd / 4; ++i)
    inv[size_t(i)] = 1.0f / std::pow(float(vc.rope_theta), float(2 * i) / spatial);
  for (int64_t j = 0; j < hd / 2; ++j) cs[size_t(2 * j)] = 1.0f;  // the class token: (0, 0)
  for (int64_t n = 0; n < N; ++n) {
    int64_t r = 0, c = 0, ht[2], wt[2];
    float hw[2], ww[2];
    patch_coords(n, m, cols, &r, &c);
    axis_taps(r, rows * m, side, ht, hw);
    axis_taps(c, cols * m, side, wt, ww);
    float* e = h.data() + (n + 1) * D;
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0;
      for (int a = 0; a < 2; ++a)
        for (int bb = 0; bb < 2; ++bb)
          acc += w.pos_table[size_t((ht[a] * side + wt[bb]) * D + d)] * (hw[a] * ww[bb]);
      e[d] += acc;
    }
    float* ang = cs.data() + (n + 1) * hd;
    for (int64_t j = 0; j < hd / 2; ++j) {
      const float f = float(j < hd / 4 ? c + 1 : r + 1) * inv[size_t(j % (hd / 4))];
      ang[2 * j] = std::cos(f), ang[2 * j + 1] = std::sin(f);
    }
  }
  layer_norm(h.data(), w.ln_pre_w, w.ln_pre_b, S, D, vc.eps, h.data());
  std::vector<float> a(size_t(S * D)), q(size_t(S * D)), k(size_t(S * D)), v(size_t(S * D));
  std::vector<float> att(size_t(S * D)), f(size_t(S * F));
  for (const VitLayer& L : w.layers) {
    layer_norm(h.data(), L.ln1_w, L.ln1_b, S, D, vc.eps, a.data());
    linear(a.data(), S, L.q, L.q_b, q.data(), pool);
    linear(a.data(), S, L.k, L.k_b, k.data(), pool);
    linear(a.data(), S, L.v, L.v_b, v.data(), pool);
    rope(q.data(), S, nh, hd, cs.data());
    rope(k.data(), S, nh, hd, cs.data());
    attend(q.data(), k.data(), v.data(), S, nh, hd, w.numerics, att.data(), pool);
    linear(att.data(), S, L.o, L.o_b, a.data(), pool);
    for (int64_t i = 0; i < S * D; ++i) h[size_t(i)] += L.lambda1[size_t(i % D)] * a[size_t(i)];
    layer_norm(h.data(), L.ln2_w, L.ln2_b, S, D, vc.eps, a.data());
    linear(a.data(), S, L.fc1, L.fc1_b, f.data(), pool);
    gelu(f.data(), S * F);
    linear(f.data(), S, L.fc2, L.fc2_b, a.data(), pool);
    for (int64_t i = 0; i < S * D; ++i) h[size_t(i)] += L.lambda2[size_t(i % D)] * a[size_t(i)];
  }
  // Without the class token, each tile's m^2 patch rows side by side: [tiles, m^2 D].
  std::vector<float> g(size_t(tiles * w.proj1.rows));
  linear(h.data() + D, tiles, w.proj1, w.proj1_b, g.data(), pool);
  gelu(g.data(), int64_t(g.size()));
  linear(g.data(), tiles, w.proj2, w.proj2_b, out, pool);
}

}  // namespace inkling
