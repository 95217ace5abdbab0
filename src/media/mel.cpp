// dmel_features(): the feature extractor's framed DFT, Slaney mel bank and log10, then the
// processor's clamp and 16-level quantisation. Constants: 16 kHz, hop 800, window and n_fft 1600.
#include <algorithm>
#include <cmath>
#include <complex>

#include "media/audio.h"

namespace inkling {

namespace {

constexpr int kHop = 800, kWin = 1600, kFreqs = kWin / 2 + 1, kBins = 80, kLevels = 16;
constexpr double kRate = 16000;

double hz_to_mel(double f) {  // Slaney scale
  const double logstep = 27.0 / std::log(6.4);
  return f >= 1000.0 ? 15.0 + std::log(f / 1000.0) * logstep : 3.0 * f / 200.0;
}
double mel_to_hz(double m) {
  const double logstep = std::log(6.4) / 27.0;
  return m >= 15.0 ? 1000.0 * std::exp(logstep * (m - 15.0)) : 200.0 * m / 3.0;
}

// numpy.linspace / torch.linspace in double: start + i * step, the second half from the end.
double linspace(double a, double b, int n, int i) {
  const double step = (b - a) / double(n - 1);
  return i < n / 2 ? a + step * i : b - step * (n - 1 - i);
}

struct Tables {
  std::vector<float> window;         // [kWin] periodic Hann (float32, as torch.hann_window)
  std::vector<double> cos_t, sin_t;  // [kWin]: cos/sin(2 pi j / kWin)
  std::vector<float> mel;            // [kBins, kFreqs] (float32, as the extractor stores it)
  float centres[kLevels];
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.window.resize(kWin);
    t.cos_t.resize(kWin), t.sin_t.resize(kWin);
    for (int i = 0; i < kWin; ++i) {
      t.window[size_t(i)] = float(0.5 - 0.5 * std::cos(2.0 * M_PI * i / kWin));
      t.cos_t[size_t(i)] = std::cos(2.0 * M_PI * i / kWin);
      t.sin_t[size_t(i)] = std::sin(2.0 * M_PI * i / kWin);
    }
    double hz[kBins + 2];
    const double m0 = hz_to_mel(0.0), m1 = hz_to_mel(kRate / 2);
    for (int i = 0; i < kBins + 2; ++i) hz[i] = mel_to_hz(linspace(m0, m1, kBins + 2, i));
    t.mel.resize(size_t(kBins * kFreqs));
    for (int f = 0; f < kFreqs; ++f) {
      const double fft_hz = linspace(0, kRate / 2, kFreqs, f);
      for (int m = 0; m < kBins; ++m) {
        const double down = -(hz[m] - fft_hz) / (hz[m + 1] - hz[m]);
        const double up = (hz[m + 2] - fft_hz) / (hz[m + 2] - hz[m + 1]);
        const double tri = std::max(0.0, std::min(down, up));
        t.mel[size_t(m * kFreqs + f)] = float(tri * (2.0 / (hz[m + 2] - hz[m])));
      }
    }
    for (int i = 0; i < kLevels; ++i) t.centres[i] = float(linspace(-7.0, 2.0, kLevels, i));
    return t;
  }();
  return t;
}

using cplx = std::complex<double>;

// Mixed-radix decimation-in-time DFT of `n` (a divisor of kWin) points in[0], in[stride], ...
// into out[0..n), in double: the n / p point transforms of the p interleaved subsequences, then
// the p-point butterflies. 1600 = 2^6 * 5^2: ~22 complex multiply-adds per point instead of
// 1600 for the direct sum. `scratch` holds kWin entries per recursion level.
void fft(const cplx* in, size_t stride, int n, cplx* out, cplx* scratch, const Tables& t) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  const int p = n % 2 == 0 ? 2 : n % 5 == 0 ? 5 : n;
  const int m = n / p;
  for (int r = 0; r < p; ++r)
    fft(in + size_t(r) * stride, stride * size_t(p), m, out + size_t(r) * m, scratch + kWin, t);
  std::copy_n(out, n, scratch);
  const int step = kWin / n;  // W_n^e = W_kWin^(e * step)
  for (int idx = 0; idx < n; ++idx) {
    const int k = idx % m;
    cplx acc = scratch[k];
    for (int r = 1; r < p; ++r) {
      const int e = int((int64_t(r) * idx * step) % kWin);
      acc += scratch[size_t(r) * m + k] * cplx(t.cos_t[size_t(e)], -t.sin_t[size_t(e)]);
    }
    out[idx] = acc;
  }
}

}  // namespace

MelFeatures dmel_features(std::span<const float> samples) {
  const Tables& t = tables();
  MelFeatures out;
  const int64_t n = int64_t(samples.size());
  out.frames = (n + kHop - 1) / kHop;
  out.bins = kBins;
  out.log_mel.resize(size_t(out.frames * kBins));
  out.ids.resize(size_t(out.frames * kBins));
  std::vector<double> mag(kFreqs);
  std::vector<cplx> xw(kWin), spec(kWin), scratch(size_t(kWin) * 10);
  for (int64_t f = 0; f < out.frames; ++f) {
    // Padded signal: 800 zeros, the samples, zeros up to a hop multiple.
    for (int i = 0; i < kWin; ++i) {
      const int64_t s = f * kHop + i - (kWin - kHop);
      const float x = s >= 0 && s < n ? samples[size_t(s)] : 0.0f;
      xw[size_t(i)] = double(x * t.window[size_t(i)]);
    }
    fft(xw.data(), 1, kWin, spec.data(), scratch.data(), t);
    for (int k = 0; k < kFreqs; ++k) {
      const double re = spec[size_t(k)].real(), im = spec[size_t(k)].imag();
      mag[size_t(k)] = double(std::sqrt(std::max(float(re * re + im * im), 1e-10f)));
    }
    for (int m = 0; m < kBins; ++m) {
      const float* w = t.mel.data() + m * kFreqs;
      double acc = 0;
      for (int k = 0; k < kFreqs; ++k) acc += double(w[k]) * mag[size_t(k)];
      const float lm = std::log10(std::max(float(acc), 1e-10f));
      out.log_mel[size_t(f * kBins + m)] = lm;
      const float c = std::clamp(lm, -7.0f, 2.0f);
      int best = 0;
      float best_d = std::fabs(c - t.centres[0]);
      for (int q = 1; q < kLevels; ++q) {
        const float d = std::fabs(c - t.centres[q]);
        if (d < best_d) best = q, best_d = d;
      }
      out.ids[size_t(f * kBins + m)] = best;
    }
  }
  return out;
}

}  // namespace inkling
