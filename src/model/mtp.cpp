// mtp_depth_forward(): one MTP depth, reading like the spec's block (embed, norms, concat,
// input_proj, one decoder layer, the trunk's head without a final norm).
#include "model/mtp.h"

#include <algorithm>

#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/quant.h"

namespace inkling {

void mtp_depth_forward(const Model& m, int d, const float* h_in, const int32_t* tokens, int64_t n,
                       LayerCache& cache, int64_t pos, Scratch& s, MtpScratch& ms, ThreadPool* pool,
                       float* y, float* logits, int64_t first_logit_row, int64_t head_rows,
                       ConvTrace* trace) {
  const ModelConfig& c = m.config;
  const Weights& w = m.weights;
  const MtpDepthWeights& dw = w.mtp[size_t(d)];
  const int64_t H = c.hidden, V = c.unpadded_vocab;
  INK_CHECK(n > 0 && n <= s.chunk);
  ms.e.resize(size_t(n * H));
  ms.h.resize(size_t(n * H));
  ms.c.resize(size_t(n * 2 * H));
  // The trunk's normed embedding of each row's token, then the depth's own embed_norm.
  for (int64_t t = 0; t < n; ++t) dequant_row(w.embed, tokens[t], ms.e.data() + t * H);
  rms_norm_rows(ms.e.data(), w.embed_norm.data(), n, H, c.rms_eps, ms.e.data());
  rms_norm_rows(ms.e.data(), dw.embed_norm.data(), n, H, c.rms_eps, ms.e.data());
  rms_norm_rows(h_in, dw.hidden_norm.data(), n, H, c.rms_eps, ms.h.data());
  const int64_t h_at = c.mtp.hidden_first ? 0 : H, e_at = H - h_at;
  for (int64_t t = 0; t < n; ++t) {
    std::copy_n(ms.h.data() + t * H, H, ms.c.data() + t * 2 * H + h_at);
    std::copy_n(ms.e.data() + t * H, H, ms.c.data() + t * 2 * H + e_at);
  }
  matmul(ms.c.data(), n, 2 * H, dw.input_proj, y, H, pool);
  const LayerSegment seg{&cache, pos, n, trace};
  forward_layer(c, c.mtp.depths[size_t(d)], dw.block, y, {&seg, 1}, s, pool);
  if (!logits) return;
  // The trunk's head on y / mup (a true division, as the reference), no final norm.
  const int64_t rows = n - first_logit_row;
  const float mup = float(c.mup_divisor);
  for (int64_t i = 0; i < rows * H; ++i) ms.h[size_t(i)] = y[first_logit_row * H + i] / mup;
  const int64_t n_head = head_rows > 0 ? std::min(head_rows, V) : V;
  matmul(ms.h.data(), rows, H, w.lm_head.slice_rows(0, n_head), logits, n_head, pool);
}

std::vector<std::vector<float>> mtp_teacher_forced(const Model& m, std::span<const int32_t> tokens,
                                                   int64_t chunk, ThreadPool* pool) {
  const ModelConfig& c = m.config;
  const int64_t T = int64_t(tokens.size()), H = c.hidden, V = c.unpadded_vocab;
  Scratch s = Scratch::make(c, chunk);
  SequenceState st = SequenceState::fresh(c, chunk);
  std::vector<float> h(size_t(T * H));  // the input hidden of the next depth, row p at p
  for (int64_t b = 0; b < T; b += chunk) {
    Segment seg{&st, tokens.data() + b, std::min(chunk, T - b)};
    seg.all_positions = true;
    seg.hidden_normed = h.data() + b * H;
    forward_batch(m, &seg, 1, s, pool);
  }
  std::vector<std::vector<float>> out;
  MtpScratch ms;
  std::vector<float> y(size_t(T * H));
  for (size_t d = 0; d < m.weights.mtp.size(); ++d) {
    const int64_t L = T - 1 - int64_t(d);
    if (L <= 0) break;
    LayerCache cache = LayerCache::fresh(c, c.mtp.depths[d], chunk, KvType::kF32);
    std::vector<float> logits(size_t(L * V));
    for (int64_t b = 0; b < L; b += chunk) {
      const int64_t n = std::min(chunk, L - b);
      mtp_depth_forward(m, int(d), h.data() + b * H, tokens.data() + 1 + int64_t(d) + b, n, cache,
                        b, s, ms, pool, y.data() + b * H, logits.data() + b * V, 0);
    }
    out.push_back(std::move(logits));
    std::swap(h, y);
  }
  return out;
}

}  // namespace inkling
