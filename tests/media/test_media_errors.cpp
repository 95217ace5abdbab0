// Malformed images and recordings give one clear error, never a crash: truncated files, wrong
// headers, unsupported formats, huge dimensions, bad WAV fields.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "media/audio.h"
#include "media/image.h"

namespace inkling {
namespace {

const std::string kDir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mm/media/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void expect_error(const Status& s, const std::string& part) {
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(MediaErrors, Images) {
  for (const char* name : {"rgb_37x53.png", "photo_64x90.jpg"}) {
    SCOPED_TRACE(name);
    const auto good = read_bytes(kDir + name);
    ASSERT_GT(good.size(), 100u);
    // Every truncation point of the first bytes and a few later ones.
    for (size_t n : {size_t(0), size_t(4), size_t(9), size_t(30), size_t(60), good.size() / 2,
                     good.size() - 20}) {
      auto r = decode_image(std::span(good).first(n), name);
      EXPECT_FALSE(r.ok()) << "decoded a file cut at " << n << " bytes";
      if (!r.ok()) {
        EXPECT_EQ(r.status().message().rfind("[image] ", 0), 0u);
      }
    }
    // Corrupted body bytes: an error or an image, never a crash.
    auto bad = good;
    for (size_t i = bad.size() / 3; i < bad.size() / 3 + 40; ++i) bad[i] ^= 0x5a;
    (void)decode_image(bad, name);
  }
  expect_error(decode_image(std::vector<uint8_t>{'G', 'I', 'F', '8', '9', 'a'}, "a.gif").status(),
               "gif images are not supported");
  expect_error(decode_image(std::vector<uint8_t>{1, 2, 3}, "x.bin").status(), "not a PNG or JPEG");
  expect_error(decode_image(std::vector<uint8_t>{}, "empty.png").status(), "empty file");
  // A PNG header claiming 100000 x 100000 pixels: refused before anything is allocated.
  auto huge = read_bytes(kDir + "tiny_3x2.png");
  const uint8_t dim[4] = {0x00, 0x01, 0x86, 0xa0};
  std::memcpy(huge.data() + 16, dim, 4), std::memcpy(huge.data() + 20, dim, 4);
  auto r = decode_image(huge, "huge.png");
  ASSERT_FALSE(r.ok());
  ImageLimits small;
  small.max_pixels = 4;
  expect_error(decode_image(read_bytes(kDir + "tiny_3x2.png"), "t.png", small).status(),
               "exceeds the limit");
  expect_error(decode_image(read_bytes(kDir + "photo_64x90.jpg"), "p.jpg", small).status(),
               "exceeds the limit");
}

std::vector<uint8_t> wav(int tag, int ch, int rate, int bits, int frames) {
  std::vector<uint8_t> raw(size_t(frames * ch * bits / 8), 0);
  const int block = ch * bits / 8;
  auto u32 = [](std::vector<uint8_t>& v, uint32_t x) {
    for (int i = 0; i < 4; ++i) v.push_back(uint8_t(x >> (8 * i)));
  };
  auto u16 = [](std::vector<uint8_t>& v, uint32_t x) {
    v.push_back(uint8_t(x)), v.push_back(uint8_t(x >> 8));
  };
  std::vector<uint8_t> b = {'R', 'I', 'F', 'F'};
  u32(b, uint32_t(36 + raw.size()));
  for (char c : std::string("WAVEfmt ")) b.push_back(uint8_t(c));
  u32(b, 16), u16(b, tag), u16(b, ch), u32(b, rate), u32(b, rate * block), u16(b, block),
      u16(b, bits);
  for (char c : std::string("data")) b.push_back(uint8_t(c));
  u32(b, uint32_t(raw.size()));
  b.insert(b.end(), raw.begin(), raw.end());
  return b;
}

TEST(MediaErrors, Wav) {
  EXPECT_TRUE(decode_wav(wav(1, 2, 16000, 16, 100), "ok.wav").ok());
  expect_error(decode_wav(wav(1, 1, 44100, 16, 100), "cd.wav").status(),
               "44100 Hz is not supported");
  expect_error(decode_wav(wav(2, 1, 16000, 16, 100), "adpcm.wav").status(),
               "unsupported sample format");
  expect_error(decode_wav(wav(1, 0, 16000, 16, 100), "none.wav").status(), "bad channel count");
  expect_error(decode_wav(wav(1, 1, 16000, 16, 0), "silent.wav").status(), "no audio samples");
  auto t = wav(1, 1, 16000, 16, 100);
  t.resize(t.size() - 10);
  expect_error(decode_wav(t, "cut.wav").status(), "data chunk is truncated");
  for (size_t n = 0; n < 44; n += 3) EXPECT_FALSE(decode_wav(std::span(t).first(n), "x.wav").ok());
  expect_error(decode_wav(std::vector<uint8_t>{'O', 'g', 'g', 'S'}, "a.ogg").status(),
               "not a WAV file");
  AudioLimits one;
  one.max_seconds = 1;
  expect_error(decode_wav(wav(1, 1, 16000, 16, 32000), "long.wav", one).status(),
               "the limit is 1 s");
  auto nan = wav(3, 1, 16000, 32, 4);
  const float q = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.data() + 44, &q, 4);
  expect_error(decode_wav(nan, "nan.wav").status(), "not a finite number");
}

}  // namespace
}  // namespace inkling
