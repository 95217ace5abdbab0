// The multi-token-prediction (MTP) draft depths of spec/inkling-mtp.md: one depth's forward over
// a run of rows, and the teacher-forced pass over a prompt that tools/mtp_reference.py checks.
// Scheduling (drafts, verification, rollback) is model/speculative.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"

namespace inkling {

// Buffers of one depth call, reused across calls (grown on demand).
struct MtpScratch {
  std::vector<float> e, c, h;
};

// Depth d over n <= scratch.chunk rows at positions [pos, pos + n) of its own cache:
//   e = embed_norm_d(trunk.embed_norm(embed[tokens])); c = concat(hidden_norm_d(h_in), e)
//   (hidden first unless hidden_states_first is false); y = layer_d(input_proj_d(c))
// h_in [n, H]: the trunk's final hidden after the final norm (depth 0) or the previous depth's
// y at the same rows. Writes y [n, H] (may not alias h_in). When `logits` is non-null it gets
// unembed(y / mup)[:head_rows] of rows [first_logit_row, n): [n - first_logit_row, head_rows]
// (head_rows 0 = the unpadded vocabulary; fewer = a draft vocabulary of the first ids).
// `trace` (optional) records the layer's conv inputs for a rollback (model/cache.h).
void mtp_depth_forward(const Model& m, int d, const float* h_in, const int32_t* tokens, int64_t n,
                       LayerCache& cache, int64_t pos, Scratch& s, MtpScratch& ms, ThreadPool* pool,
                       float* y, float* logits, int64_t first_logit_row, int64_t head_rows = 0,
                       ConvTrace* trace = nullptr);

// Teacher-forced trunk + every bound depth over `tokens` (T of them), as mtp_reference.py's
// mtp_forward: result[d] = depth d's logits [T-1-d, unpadded_vocab], row p predicting
// tokens[p+2+d] (row p embeds tokens[p+1+d]). Fresh caches; chunks of `chunk` rows.
std::vector<std::vector<float>> mtp_teacher_forced(const Model& m, std::span<const int32_t> tokens,
                                                   int64_t chunk, ThreadPool* pool);

}  // namespace inkling
