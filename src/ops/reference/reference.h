// Plain scalar twins of the optimised ops: the definition of what each kernel must compute.
// Tests compare every optimised kernel against these on random data.
#pragma once

#include <cstdint>

#include "ops/attention.h"
#include "ops/matmul.h"

namespace inkling::ref {

void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy);
void rms_norm(const float* x, const float* w, int64_t n, double eps, float* out);
// out[t, c] = u[t, c] + sum_j w[c, j] * u[t - (K-1) + j, c], history from state [K-1, C].
void short_conv(const float* u, int64_t T, int64_t C, const float* w, int64_t K, float* state,
                float* out);

// Attention of T queries at pos0.. against kv, one (query, head) at a time: scores, bias row,
// softmax, weighted values (the definition ops/attention.cpp's blocked kernel must match).
void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out);

}  // namespace inkling::ref
