// The expert-parallel seam without MPI: an executor that plays N ranks in one process (each
// "rank" runs its experts e mod N into its own compact buffer with its own thread pool, as
// src/dist/mpi does, and the slots are then put back and combined in gate order) must give
// moe_block() results bit-identical to the single-process expert loop.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "base/thread_pool.h"
#include "model/expert_executor.h"
#include "model/moe.h"

namespace inkling {
namespace {

class SplitExecutor final : public ExpertExecutor {
 public:
  explicit SplitExecutor(int n) : n_(n) {}
  void run(const MoeWeights& w, const float* m, int64_t T, int64_t H, const int32_t* idx,
           const float* weight, int k, float* out, ThreadPool* pool) override {
    ++calls;
    std::vector<float> y(size_t(T * k * H), 0.f);
    for (int r = 0; r < n_; ++r) {
      // This rank's slots, compact, in (row, j) order: what it would send back.
      std::vector<int32_t> place(size_t(T * k), -1);
      int32_t n = 0;
      for (int64_t s = 0; s < T * k; ++s)
        if (idx[s] % n_ == r) place[size_t(s)] = n++;
      std::vector<float> mine(size_t(std::max<int64_t>(n * H, 1)));
      ExpertBuffers b;
      ThreadPool* p = r == 0 ? pool : &other_;
      for (int e = r; e < int(w.routed.size()); e += n_)
        run_routed_expert(w.routed[size_t(e)], e, m, T, H, idx, k, b, mine.data(), place.data(), p);
      for (int64_t s = 0; s < T * k; ++s)
        if (place[size_t(s)] >= 0)
          std::memcpy(y.data() + s * H, mine.data() + place[size_t(s)] * H, size_t(H) * 4);
    }
    add_in_gate_order(y.data(), weight, T, H, k, out);
  }
  int calls = 0;

 private:
  int n_;
  ThreadPool other_{1};  // another "rank" runs with another thread count
};

TEST(ExpertExecutor, SplitOverRanksIsBitIdentical) {
  ModelConfig c;
  c.hidden = 40, c.n_routed = 8, c.n_shared = 2, c.top_k = 3, c.moe_width = 24;
  c.dense_width = 24, c.route_scale = 2.0;
  c.n_layers = 1;
  c.layers.assign(1, LayerSpec{});
  const int64_t H = c.hidden, I = c.moe_width, E = c.n_routed, S = c.n_shared;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 0.4f);
  std::vector<std::vector<float>> store;
  auto mat = [&](int64_t rows, int64_t cols) {
    store.emplace_back(size_t(rows * cols));
    for (float& v : store.back()) v = nd(rng);
    return MatView{DType::F32, reinterpret_cast<const uint8_t*>(store.back().data()), rows, cols,
                   cols};
  };
  store.reserve(size_t(3 * (E + S) + 1));
  MoeWeights w;
  w.router = mat(E + S, H);
  for (int64_t e = 0; e < E; ++e) w.router_bias.push_back(nd(rng));
  for (int64_t e = 0; e < E; ++e) w.routed.push_back({mat(I, H), mat(I, H), mat(H, I)});
  for (int64_t s = 0; s < S; ++s) w.shared.push_back({mat(I, H), mat(I, H), mat(H, I)});
  ThreadPool pool(2);
  for (int64_t T : {1, 2, 9, 16}) {  // one row, the few-row and the gemm shape classes
    std::vector<float> x(size_t(T * H));
    for (float& v : x) v = nd(rng) * 3;
    Scratch s = Scratch::make(c, T);
    std::vector<float> want(size_t(T * H)), got(size_t(T * H));
    w.executor = nullptr;
    moe_block(c, w, x.data(), T, s, want.data(), &pool);
    for (int n : {1, 2, 3}) {
      SplitExecutor ex(n);
      w.executor = &ex;
      moe_block(c, w, x.data(), T, s, got.data(), &pool);
      EXPECT_EQ(ex.calls, 1);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
          << "T " << T << ", " << n << " ranks";
    }
    w.executor = nullptr;
  }
}

}  // namespace
}  // namespace inkling
