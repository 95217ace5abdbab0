// decode_wav(): walks the RIFF chunks with bounds checks on every length, then converts the
// `data` chunk to mono float.
#include <cmath>
#include <cstring>

#include "media/audio.h"

namespace inkling {

namespace {

uint32_t u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t u16(const uint8_t* p) {
  return uint16_t(p[0] | p[1] << 8);
}

}  // namespace

Result<MonoAudio> decode_wav(std::span<const uint8_t> b, const std::string& name,
                             const AudioLimits& limits) {
  auto err = [&](const std::string& m) { return Status::error("[audio] " + name + ": " + m); };
  if (b.size() < 12 || std::memcmp(b.data(), "RIFF", 4) != 0 ||
      std::memcmp(b.data() + 8, "WAVE", 4) != 0)
    return err("not a WAV file (expected a RIFF/WAVE header); only WAV audio is supported");
  const uint8_t* fmt = nullptr;
  size_t fmt_len = 0;
  const uint8_t* data = nullptr;
  size_t data_len = 0;
  for (size_t pos = 12; pos + 8 <= b.size();) {
    const uint8_t* h = b.data() + pos;
    const size_t len = u32(h + 4);
    const size_t avail = b.size() - pos - 8;
    if (std::memcmp(h, "fmt ", 4) == 0) {
      if (len > avail) return err("the fmt chunk is truncated");
      fmt = h + 8, fmt_len = len;
    } else if (std::memcmp(h, "data", 4) == 0) {
      if (len > avail)
        return err("the data chunk is truncated (" + std::to_string(avail) + " of " +
                   std::to_string(len) + " bytes)");
      data = h + 8, data_len = len;
      break;
    }
    if (len > avail) break;
    pos += 8 + len + (len & 1);
  }
  if (!fmt) return err("no fmt chunk");
  if (!data) return err("no data chunk");
  if (fmt_len < 16) return err("the fmt chunk is too short");
  uint16_t tag = u16(fmt);
  const int channels = u16(fmt + 2);
  const int64_t rate = u32(fmt + 4);
  const int bits = u16(fmt + 14);
  if (tag == 0xFFFE) {  // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the tag
    if (fmt_len < 40) return err("the extensible fmt chunk is too short");
    tag = u16(fmt + 24);
  }
  if (channels < 1 || channels > 64) return err("bad channel count " + std::to_string(channels));
  const bool pcm = tag == 1 && (bits == 8 || bits == 16 || bits == 24 || bits == 32);
  const bool flt = tag == 3 && (bits == 32 || bits == 64);
  if (!pcm && !flt)
    return err("unsupported sample format (tag " + std::to_string(tag) + ", " +
               std::to_string(bits) + " bits); expected PCM 8/16/24/32-bit or float 32/64");
  if (rate != 16000)
    return err("sample rate " + std::to_string(rate) +
               " Hz is not supported: Inkling takes 16000 Hz audio (resample it first, e.g. "
               "ffmpeg -i in.wav -ar 16000 out.wav)");
  const size_t frame_bytes = size_t(channels) * size_t(bits / 8);
  const int64_t n = int64_t(data_len / frame_bytes);
  if (n == 0) return err("no audio samples");
  if (double(n) / double(rate) > limits.max_seconds)
    return err("the recording is " + std::to_string(n / rate) + " s long; the limit is " +
               std::to_string(int64_t(limits.max_seconds)) + " s");
  MonoAudio out;
  out.sample_rate = rate;
  out.samples.resize(size_t(n));
  const int bps = bits / 8;
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int c = 0; c < channels; ++c) {
      const uint8_t* p = data + size_t(i) * frame_bytes + size_t(c * bps);
      float v = 0;
      if (flt && bits == 32) {
        std::memcpy(&v, p, 4);
      } else if (flt) {
        double d;
        std::memcpy(&d, p, 8);
        v = float(d);
      } else if (bits == 8) {
        v = float(int(p[0]) - 128) / 128.0f;
      } else if (bits == 16) {
        v = float(int16_t(u16(p))) / 32768.0f;
      } else if (bits == 24) {
        const int32_t s =
            int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24);
        v = float(s >> 8) / 8388608.0f;
      } else {
        v = float(double(int32_t(u32(p))) / 2147483648.0);
      }
      if (!std::isfinite(v)) return err("sample " + std::to_string(i) + " is not a finite number");
      sum = c == 0 ? v : sum + v;
    }
    out.samples[size_t(i)] = channels == 1 ? sum : sum / float(channels);
  }
  return out;
}

}  // namespace inkling
