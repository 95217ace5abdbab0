// RMSNorm over rows: out = (x * rsqrt(mean(x^2) + eps)) * w, statistics in f32 (double sum).
#pragma once

#include <cstdint>

namespace inkling {

// n_rows rows of width n, row i at x + i * n; `out` may alias `x`. w null: no weight (Inkling 2's
// unweighted RMSNorm).
void rms_norm_rows(const float* x, const float* w, int64_t n_rows, int64_t n, double eps,
                   float* out);

// Inkling 2's (scaled) L2 clip per row: v = x * scale, out = v * min(threshold / (|v| + 1e-6), 1).
// scale: null, or scale_rows rows of width n, row i taking scale row i % scale_rows (per head).
void l2_clip_rows(const float* x, const float* scale, int64_t scale_rows, int64_t n_rows, int64_t n,
                  float threshold, float* out);

}  // namespace inkling
