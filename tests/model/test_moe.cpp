// The MoE branch (route -> experts -> combine) against a plain double-precision loop over every
// token and expert written straight from the math, including shared experts weighted before
// their down projection and routed experts after it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/moe.h"

namespace inkling {
namespace {

struct Mat {
  std::vector<float> data;
  int64_t rows = 0, cols = 0;
  MatView view() const {
    return {DType::F32, reinterpret_cast<const uint8_t*>(data.data()), rows, cols, cols};
  }
  double at(int64_t r, int64_t c) const { return data[size_t(r * cols + c)]; }
};

Mat random_mat(int64_t rows, int64_t cols, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.f, scale);
  Mat m{std::vector<float>(size_t(rows * cols)), rows, cols};
  for (auto& x : m.data) x = d(rng);
  return m;
}

double silu(double x) {
  return x / (1 + std::exp(-x));
}

// y = W2 (silu(W1 x) * (W3 x)) * pre (pre multiplies before the down projection).
std::vector<double> expert_ref(const Mat& g, const Mat& u, const Mat& d, const float* x,
                               double pre) {
  std::vector<double> h(size_t(g.rows)), y(size_t(d.rows), 0.0);
  for (int64_t i = 0; i < g.rows; ++i) {
    double a = 0, b = 0;
    for (int64_t c = 0; c < g.cols; ++c) a += g.at(i, c) * x[c], b += u.at(i, c) * x[c];
    h[size_t(i)] = silu(a) * b * pre;
  }
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t i = 0; i < d.cols; ++i) y[size_t(r)] += d.at(r, i) * h[size_t(i)];
  return y;
}

TEST(Moe, BlockMatchesScalarMath) {
  ModelConfig c;
  c.hidden = 24, c.n_routed = 6, c.n_shared = 2, c.top_k = 2, c.moe_width = 10, c.dense_width = 10;
  c.route_scale = 2.5;
  c.n_layers = 1;
  c.layers.assign(1, LayerSpec{});
  const int64_t H = c.hidden, I = c.moe_width, E = c.n_routed, S = c.n_shared, T = 7;
  std::mt19937 rng(42);
  std::vector<Mat> mats;  // keeps storage alive
  mats.reserve(size_t(3 * (E + S) + 1));
  MoeWeights w;
  mats.push_back(random_mat(E + S, H, rng, 0.5f));
  w.router = mats.back().view();
  std::normal_distribution<float> nb(0.f, 0.3f);
  for (int64_t e = 0; e < E; ++e) w.router_bias.push_back(nb(rng));
  w.router_scale = 1.3f;
  auto add_expert = [&](std::vector<SwiGluWeights>& dst) {
    mats.push_back(random_mat(I, H, rng, 0.3f));
    mats.push_back(random_mat(I, H, rng, 0.3f));
    mats.push_back(random_mat(H, I, rng, 0.3f));
    dst.push_back({mats[mats.size() - 3].view(), mats[mats.size() - 2].view(), mats.back().view()});
  };
  for (int64_t e = 0; e < E; ++e) add_expert(w.routed);
  for (int64_t s = 0; s < S; ++s) add_expert(w.shared);
  std::vector<float> x(size_t(T * H));
  std::normal_distribution<float> nx(0.f, 1.f);
  for (auto& v : x) v = nx(rng);

  Scratch scratch = Scratch::make(c, T);
  std::vector<float> out(size_t(T * H));
  ThreadPool pool(2);
  moe_block(c, w, x.data(), T, scratch, out.data(), &pool);

  const Mat& router = mats[0];
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x.data() + t * H;
    std::vector<double> logit(static_cast<size_t>(E + S), 0.0), score(static_cast<size_t>(E), 0.0);
    for (int64_t r = 0; r < E + S; ++r)
      for (int64_t ch = 0; ch < H; ++ch) logit[size_t(r)] += router.at(r, ch) * xt[ch];
    std::vector<int> order(static_cast<size_t>(E), 0);
    for (int e = 0; e < E; ++e)
      order[size_t(e)] = e,
      score[size_t(e)] = 1 / (1 + std::exp(-logit[size_t(e)])) + w.router_bias[size_t(e)];
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return score[size_t(a)] > score[size_t(b)]; });
    // Weights: sigmoid of raw logits normalised over the chosen + shared, x scales.
    double den = 0;
    for (int j = 0; j < c.top_k; ++j) den += 1 / (1 + std::exp(-logit[size_t(order[size_t(j)])]));
    for (int64_t s = 0; s < S; ++s) den += 1 / (1 + std::exp(-logit[size_t(E + s)]));
    const double scale = c.route_scale * w.router_scale;
    std::vector<double> y(size_t(H), 0.0);
    for (int j = 0; j < c.top_k; ++j) {
      const int e = order[size_t(j)];
      const double wt = scale / (1 + std::exp(-logit[size_t(e)])) / den;
      auto ye = expert_ref(mats[size_t(1 + 3 * e)], mats[size_t(2 + 3 * e)],
                           mats[size_t(3 + 3 * e)], xt, 1.0);
      for (int64_t h = 0; h < H; ++h) y[size_t(h)] += wt * ye[size_t(h)];  // weight after down
    }
    for (int64_t s = 0; s < S; ++s) {
      const double gamma = scale / (1 + std::exp(-logit[size_t(E + s)])) / den;
      const size_t b = size_t(1 + 3 * (E + s));
      auto ys = expert_ref(mats[b], mats[b + 1], mats[b + 2], xt, gamma);  // gamma before down
      for (int64_t h = 0; h < H; ++h) y[size_t(h)] += ys[size_t(h)];
    }
    for (int64_t h = 0; h < H; ++h)
      EXPECT_NEAR(out[size_t(t * H + h)], y[size_t(h)], 1e-4 * (1 + std::fabs(y[size_t(h)])))
          << "token " << t << " dim " << h;
  }
}

// With few token slots (T x top_k within the scratch's rows: decode and batched decode) the
// experts' products go out in two matmul_many hand-outs; with more, one expert after another.
// Both give the same bits: plain and softcapped (Inkling 2) SwiGLU, gate and up as separate
// matrices and as adjacent halves of one, tokens sharing experts, 1-3 threads.
TEST(Moe, ExpertsInOneHandOutAreBitwiseOneAfterAnother) {
  for (float cap : {0.f, 4.f})
    for (bool joined : {false, true})
      for (int64_t T : {1, 3, 7}) {
        ModelConfig c;
        c.hidden = 40, c.n_routed = 5, c.n_shared = 1, c.top_k = 3, c.moe_width = 24;
        c.dense_width = 24, c.route_scale = 2.0, c.n_layers = 1;
        c.layers.assign(1, LayerSpec{});
        const int64_t H = c.hidden, I = c.moe_width;
        std::mt19937 rng(uint32_t(T * 10 + joined + int(cap)));
        std::vector<Mat> mats;
        mats.reserve(32);
        MoeWeights w;
        mats.push_back(random_mat(c.n_routed + c.n_shared, H, rng, 0.5f));
        w.router = mats.back().view();
        w.router_bias.assign(size_t(c.n_routed), 0.f);
        w.router_scale = 1.f;
        auto add_expert = [&](std::vector<SwiGluWeights>& dst) {
          SwiGluWeights e;
          if (joined) {  // gate rows then up rows of one matrix
            mats.push_back(random_mat(2 * I, H, rng, 0.4f));
            const MatView gu = mats.back().view();
            e.gate = gu.slice_rows(0, I), e.up = gu.slice_rows(I, I);
          } else {
            mats.push_back(random_mat(I, H, rng, 0.4f));
            e.gate = mats.back().view();
            mats.push_back(random_mat(I, H, rng, 0.4f));
            e.up = mats.back().view();
          }
          mats.push_back(random_mat(H, I, rng, 0.4f));
          e.down = mats.back().view();
          e.gate_cap = cap, e.up_cap = cap > 0 ? 6.f : 0.f;
          dst.push_back(e);
        };
        for (int64_t e = 0; e < c.n_routed; ++e) add_expert(w.routed);
        add_expert(w.shared);
        std::vector<float> x(size_t(T * H));
        std::normal_distribution<float> nx(0.f, 1.f);
        for (auto& v : x) v = nx(rng);
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(::testing::Message() << "cap " << cap << " joined " << joined << " T " << T
                                            << " threads " << threads);
          ThreadPool pool(threads);
          Scratch one_by_one = Scratch::make(c, T), grouped = Scratch::make(c, T * c.top_k);
          std::vector<float> a(size_t(T * H)), b(size_t(T * H));
          moe_block(c, w, x.data(), T, one_by_one, a.data(), &pool);
          moe_block(c, w, x.data(), T, grouped, b.data(), &pool);
          for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
          // The routing spread the tokens over more than one expert.
          std::vector<int32_t> ids(grouped.route_idx.begin(), grouped.route_idx.begin() + T * 3);
          std::sort(ids.begin(), ids.end());
          EXPECT_GE(std::unique(ids.begin(), ids.end()) - ids.begin(), 3);
        }
      }
}

}  // namespace
}  // namespace inkling
