// The towers' forward passes. Vision (hMLP, no attention): per layer a space/time-to-depth fold,
// a bias-free linear, then RMSNorm and exact (erf) GELU except on the last layer; a final
// RMSNorm; one row per tile. Audio (dMel): the sum of one table row per mel bin, then RMSNorm.
#include <algorithm>
#include <cmath>

#include "model/towers.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/quant.h"

namespace inkling {

namespace {

constexpr double kTowerEps = 1e-6;  // InklingRMSNorm's default in both towers
constexpr int64_t kTilesPerPass = 64;

// x [P, T, S, S, C] -> y [P, T/t, S/h, S/h, t*h*h*C], inner order (t_in, h_in, w_in, c).
void fold(const float* x, int64_t P, int64_t T, int64_t S, int64_t C, int t, int h, float* y) {
  const int64_t To = T / t, So = S / h, Co = int64_t(t) * h * h * C;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t tt = 0; tt < T; ++tt)
      for (int64_t yy = 0; yy < S; ++yy)
        for (int64_t xx = 0; xx < S; ++xx) {
          const float* src = x + (((p * T + tt) * S + yy) * S + xx) * C;
          const int64_t ti = tt % t, hi = yy % h, wi = xx % h;
          const int64_t row = ((p * To + tt / t) * So + yy / h) * So + xx / h;
          float* dst = y + row * Co + ((ti * h + hi) * h + wi) * C;
          std::copy_n(src, C, dst);
        }
}

}  // namespace

void vision_forward(const MediaConfig& mc, const Towers& tw, const float* pv, int64_t tiles, int H,
                    float* out, ThreadPool* pool) {
  std::vector<float> a, b;
  for (int64_t p0 = 0; p0 < tiles; p0 += kTilesPerPass) {
    const int64_t P = std::min(kTilesPerPass, tiles - p0);
    int64_t T = mc.temporal, S = mc.patch, C = mc.channels;
    a.assign(pv + p0 * T * S * S * C, pv + (p0 + P) * T * S * S * C);
    for (const VisionLayerWeights& l : tw.vision) {
      const int64_t To = T / l.t_fold, So = S / l.hw_fold, rows = P * To * So * So;
      b.resize(size_t(rows * l.proj.cols));
      fold(a.data(), P, T, S, C, l.t_fold, l.hw_fold, b.data());
      a.resize(size_t(rows * l.proj.rows));
      matmul(b.data(), rows, l.proj.cols, l.proj, a.data(), l.proj.rows, pool);
      if (!l.norm.empty()) {
        rms_norm_rows(a.data(), l.norm.data(), rows, l.proj.rows, kTowerEps, a.data());
        for (float& v : a) v = float(0.5 * double(v) * (1.0 + std::erf(double(v) * M_SQRT1_2)));
      }
      T = To, S = So, C = l.proj.rows;
    }
    rms_norm_rows(a.data(), tw.vision_norm.data(), P, H, kTowerEps, out + p0 * H);
  }
}

void audio_forward(const MediaConfig& mc, const Towers& tw, const int32_t* ids, int64_t frames,
                   int H, float* out) {
  std::vector<float> row(static_cast<size_t>(H));
  for (int64_t f = 0; f < frames; ++f) {
    float* y = out + f * H;
    std::fill_n(y, H, 0.0f);
    for (int b = 0; b < mc.mel_bins; ++b) {
      dequant_row(tw.audio_table, int64_t(b) * mc.mel_levels + ids[f * mc.mel_bins + b],
                  row.data());
      for (int i = 0; i < H; ++i) y[i] += row[size_t(i)];
    }
  }
  rms_norm_rows(out, tw.audio_norm.data(), frames, H, kTowerEps, out);
}

}  // namespace inkling
