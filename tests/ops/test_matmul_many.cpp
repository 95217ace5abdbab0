// matmul_many: a batch of products handed out to the pool in row blocks gives each product the
// bits matmul() gives it alone (f32 and bf16 weights, row counts that are and are not multiples
// of the block, 1-5 tokens, 1-3 threads, no pool), and the observer sees every job once, in order.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ops/matmul.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

struct Recorder : ProductObserver {
  std::vector<const uint8_t*> seen;
  void on_product(const MatView& w, const float*, int64_t, int64_t) override {
    seen.push_back(w.data);
  }
};

TEST(MatmulMany, EachJobHasTheBitsOfMatmulAlone) {
  std::mt19937 rng(5);
  const int64_t cols = 96;
  std::vector<testing::Dense> ws;
  for (int64_t rows : {1, 15, 16, 100, 333})
    for (DType t : {DType::F32, DType::BF16})
      ws.push_back(testing::make_dense(t, rows, cols, uint32_t(rows * 2 + (t == DType::F32))));
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t n_tok : {1, 2, 5}) {
    std::vector<float> x(size_t(n_tok * (cols + 3)));
    for (float& v : x) v = nd(rng);
    std::vector<MatmulJob> jobs;
    std::vector<std::vector<float>> want(ws.size()), got(ws.size());
    for (size_t i = 0; i < ws.size(); ++i) {
      const int64_t rows = ws[i].view.rows, ldy = rows + 1;
      want[i].assign(size_t(n_tok * ldy), -3.f), got[i] = want[i];
      ThreadPool one(1);
      matmul(x.data(), n_tok, cols + 3, ws[i].view, want[i].data(), ldy, &one);
      jobs.push_back({x.data(), n_tok, cols + 3, &ws[i].view, got[i].data(), ldy});
    }
    for (int threads : {0, 1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "tokens " << n_tok << " threads " << threads);
      for (auto& g : got) std::fill(g.begin(), g.end(), -3.f);
      Recorder rec;
      {
        ProductObserverScope scope(&rec);
        if (threads == 0) {
          matmul_many(jobs.data(), jobs.size(), nullptr);
        } else {
          ThreadPool pool(threads);
          matmul_many(jobs.data(), jobs.size(), &pool);
        }
      }
      ASSERT_EQ(rec.seen.size(), ws.size());
      for (size_t i = 0; i < ws.size(); ++i) {
        EXPECT_EQ(rec.seen[i], ws[i].view.data) << i;
        ASSERT_EQ(got[i], want[i]) << "job " << i;
      }
    }
  }
}

}  // namespace
}  // namespace inkling
