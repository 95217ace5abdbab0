// Row softmax of a dense score matrix (bidirectional attention: the ViT): row = softmax(row *
// scale), max-subtracted, f32 throughout. softmax_rows is the vector kernel (Highway's Exp, as the
// text attention's online softmax); softmax_rows_scalar its scalar twin with std::exp (the two
// agree within a few ulps: tests/ops/test_softmax.cpp).
#pragma once

#include <cstdint>

namespace inkling {

// rows x n scores at x (row i at x + i * n), in place.
void softmax_rows(float* x, int64_t rows, int64_t n, float scale);
void softmax_rows_scalar(float* x, int64_t rows, int64_t n, float scale);

}  // namespace inkling
