// Audio input: WAV decoding to mono float at 16 kHz, and Inkling's dMel features
// (spec/inkling-multimodal.md, transformers' InklingFeatureExtractor + InklingProcessor).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling {

struct AudioLimits {
  double max_seconds = 600;  // longer recordings are refused
};

struct MonoAudio {
  int64_t sample_rate = 0;
  std::vector<float> samples;  // mono: the mean of the channels (float32, as torch.mean)
};

// RIFF/WAVE with PCM 8/16/24/32-bit integers (WAVE_FORMAT_PCM or EXTENSIBLE) or IEEE float
// 32/64. Integer samples are scaled to [-1, 1) (int16 / 32768). Only 16 kHz is accepted: any
// other rate is refused with a message (no resampling; convert first, e.g. with ffmpeg -ar 16000).
Result<MonoAudio> decode_wav(std::span<const uint8_t> bytes, const std::string& name,
                             const AudioLimits& limits = {});

struct MelFeatures {
  int64_t frames = 0, bins = 0;
  std::vector<float> log_mel;  // [frames, bins] log10(max(mel, 1e-10)), before clamping
  std::vector<int32_t> ids;    // [frames, bins] nearest of the 16 dMel centres after clamping
};

// 16 kHz mono -> frames = ceil(samples / 800) of 80 log-mel bins (hop 800, periodic Hann window
// of 1600, n_fft 1600, left pad 800, right pad to a hop multiple, magnitude spectrum, Slaney mel
// filters 0-8 kHz), clamped to [-7, 2] and quantised to the nearest of linspace(-7, 2, 16).
// The DFT is a mixed-radix FFT in double precision (torch.stft uses a float32 FFT).
MelFeatures dmel_features(std::span<const float> samples);

}  // namespace inkling
