// Fuzzes the WAV decoder (src/media/wav_decode.cpp) and the dMel features of what decodes.
#include <cstdint>
#include <span>

#include "media/audio.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inkling::AudioLimits limits;
  limits.max_seconds = 0.5;
  auto a = inkling::decode_wav(std::span<const uint8_t>(data, size), "fuzz", limits);
  if (!a.ok()) return 0;
  auto f = inkling::dmel_features(a->samples);
  (void)f;
  return 0;
}
