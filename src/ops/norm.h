// RMSNorm over rows: out = (x * rsqrt(mean(x^2) + eps)) * w, statistics in f32 (double sum).
#pragma once

#include <cstdint>

namespace inkling {

// n_rows rows of width n, row i at x + i * n; `out` may alias `x`.
void rms_norm_rows(const float* x, const float* w, int64_t n_rows, int64_t n, double eps,
                   float* out);

}  // namespace inkling
