// Lanczos-3 resampling with Pillow's fixed-point arithmetic (see media/image_prep.h), and the
// processor's upscale size rule.
#include <algorithm>
#include <cmath>

#include "media/image_prep.h"

namespace inkling {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images
constexpr double kSupport = 3.0;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) {
  return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
}

// Per output pixel: the first input index, the tap count and ksize fixed-point coefficients.
struct Coeffs {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> k;
};

Coeffs precompute(int64_t in_size, int64_t out_size) {
  const double scale = double(in_size) / double(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = kSupport * filterscale;
  Coeffs c;
  c.ksize = int(std::ceil(support)) * 2 + 1;
  c.first.resize(size_t(out_size));
  c.count.resize(size_t(out_size));
  c.k.assign(size_t(out_size * c.ksize), 0);
  std::vector<double> w(size_t(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = (double(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = int(in_size);
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[size_t(x)] = lanczos((double(x + xmin) - center + 0.5) * ss);
      ww += w[size_t(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[size_t(x)] / ww : w[size_t(x)];
      c.k[size_t(xx * c.ksize + x)] =
          int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.first[size_t(xx)] = xmin;
    c.count[size_t(xx)] = xmax;
  }
  return c;
}

uint8_t clip8(int64_t ss) {
  const int64_t v = ss >> kPrecisionBits;
  return uint8_t(std::clamp<int64_t>(v, 0, 255));
}

}  // namespace

void upscaled_size(int64_t height, int64_t width, const UpscalePolicy& p, int64_t* out_h,
                   int64_t* out_w) {
  *out_h = height, *out_w = width;
  if (!p.frac) return;
  const double long_edge = double(std::max(height, width));
  double target = long_edge * *p.frac;
  target = std::min(target, std::max(double(p.max_long_edge), long_edge));
  const double ratio = target / long_edge;
  if (ratio == 1.0) return;
  *out_h = int64_t(std::floor(double(height) * ratio + 0.5));
  *out_w = int64_t(std::floor(double(width) * ratio + 0.5));
  *out_h = std::max<int64_t>(*out_h, 1), *out_w = std::max<int64_t>(*out_w, 1);
}

RgbImage resize_lanczos(const RgbImage& in, int64_t out_h, int64_t out_w) {
  if (out_h == in.height && out_w == in.width) return in;
  const Coeffs ch = precompute(in.width, out_w), cv = precompute(in.height, out_h);
  // Pillow runs the horizontal pass only over the input rows the vertical pass reads.
  const int64_t y0 = cv.first.front();
  const int64_t y1 = cv.first.back() + cv.count.back();
  const int64_t th = y1 - y0;
  std::vector<uint8_t> tmp(size_t(th * out_w * 3));
  for (int64_t y = 0; y < th; ++y) {
    const uint8_t* src = in.pixels.data() + (y + y0) * in.width * 3;
    for (int64_t x = 0; x < out_w; ++x) {
      const int32_t* k = ch.k.data() + x * ch.ksize;
      const int first = ch.first[size_t(x)], n = ch.count[size_t(x)];
      for (int c = 0; c < 3; ++c) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int i = 0; i < n; ++i) ss += int64_t(src[(first + i) * 3 + c]) * k[i];
        tmp[size_t((y * out_w + x) * 3 + c)] = clip8(ss);
      }
    }
  }
  RgbImage out;
  out.height = out_h, out.width = out_w;
  out.pixels.resize(size_t(out_h * out_w * 3));
  for (int64_t y = 0; y < out_h; ++y) {
    const int32_t* k = cv.k.data() + y * cv.ksize;
    const int64_t first = cv.first[size_t(y)] - y0;
    const int n = cv.count[size_t(y)];
    for (int64_t x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int i = 0; i < n; ++i)
          ss += int64_t(tmp[size_t(((first + i) * out_w + x) * 3 + c)]) * k[i];
        out.pixels[size_t((y * out_w + x) * 3 + c)] = clip8(ss);
      }
  }
  return out;
}

}  // namespace inkling
