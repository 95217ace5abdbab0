// softmax_rows (Highway Exp) against its scalar twin (std::exp): within 4 ulps of the twin's
// value plus 1e-7 absolute, over row widths that leave every tail length, scales, very negative
// and equal scores; rows sum to 1.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/softmax.h"

namespace inkling {
namespace {

TEST(Softmax, VectorKernelMatchesScalarTwin) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 4.f);
  for (int64_t n : {1, 3, 7, 16, 17, 31, 64, 65, 257, 2705}) {
    for (float scale : {0.125f, 1.0f}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " scale " << scale);
      const int64_t rows = 3;
      std::vector<float> x(static_cast<size_t>(rows * n));
      for (float& v : x) v = nd(rng);
      x[0] = -1e30f;                                            // a key that gets nothing
      for (int64_t j = 0; j < n; ++j) x[size_t(n + j)] = 2.5f;  // equal scores
      std::vector<float> a = x, b = x;
      softmax_rows(a.data(), rows, n, scale);
      softmax_rows_scalar(b.data(), rows, n, scale);
      for (int64_t i = 0; i < rows; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          const size_t k = size_t(i * n + j);
          EXPECT_NEAR(a[k], b[k], 4 * std::fabs(b[k]) * 1.2e-7 + 1e-7) << i << " " << j;
          sum += a[k];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
      EXPECT_NEAR(a[size_t(n + 1)], 1.0 / double(n), 1e-6);
    }
  }
}

}  // namespace
}  // namespace inkling
