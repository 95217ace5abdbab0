// The split of x into int8 parts used by the AVX512-VNNI affine kernel, and that kernel's scalar
// twin (see quant_affine_vnni.h). Portable C++: compiled for every host.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/dtype.h"
#include "ops/quant_affine_vnni.h"

namespace inkling {

int64_t affine_vnni_span(int bits, int group) {
  return std::max<int64_t>(bits == 4 ? 128 : 64, group);
}

int64_t affine_vnni_lane_col(int bits, int64_t span, int k, int j) {
  const int64_t V = bits == 4 ? 2 : 1, C = 64 * V;  // code vectors, columns per chunk
  (void)span;
  // Member j of lane k: chunk j / (4 V), code vector (j / 4) % V, byte 4k + j % 4.
  const int64_t chunk = j / (4 * V), v = (j / 4) % V, byte = 4 * k + j % 4;
  return chunk * C + V * byte + v;
}

namespace {

// Round to nearest, ties to even, of |v| < 2^51 (exact in double).
inline double rint_d(double v) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  return v >= 0 ? (v + kMagic) - kMagic : -((-v + kMagic) - kMagic);
}

// Code of column col in MLX's little-endian bit stream.
inline int code_at(const uint8_t* row, int64_t col, int bits) {
  const int64_t bit = col * bits;
  uint32_t w = row[bit / 8];
  if (bit % 8 + bits > 8) w |= uint32_t(row[bit / 8 + 1]) << 8;
  return int((w >> (bit % 8)) & ((1u << bits) - 1u));
}

}  // namespace

void affine_vnni_split(const float* x, int64_t cols, int bits, int group, int parts, int8_t* a,
                       int8_t* c, int8_t* d, float* fac) {
  const int64_t span = affine_vnni_span(bits, group), per = span / 16;
  const int64_t spans = (cols + span - 1) / span;
  int64_t idx[16];
  for (int64_t sp = 0; sp < spans; ++sp)
    for (int k = 0; k < 16; ++k) {
      float m = 0.f;
      int64_t n = 0;
      bool finite = true;
      for (int64_t j = 0; j < per; ++j) {
        const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
        if (col >= cols) continue;
        idx[n++] = col;
        const float v = x[col];
        if (!std::isfinite(v)) finite = false;
        m = std::max(m, std::fabs(v));
      }
      for (int64_t j = 0; j < per; ++j) {  // every member zero first (past cols, non-finite)
        const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
        if (col < cols) {
          a[col] = 0;
          if (parts > 1) c[col] = 0;
          if (parts > 2) d[col] = 0;
        }
      }
      if (!finite) {
        fac[sp * 16 + k] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      if (parts == 1) {  // fast numerics: one part, scale M / 127 in f32 (the kernel's ops)
        if (!(m >= kVnniTiny)) {
          fac[sp * 16 + k] = 0.f;
          continue;
        }
        const float inv = 127.f / m;
        fac[sp * 16 + k] = m / 127.f;
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[idx[i]] * inv;
          a[idx[i]] = int8_t(rint_d(double(v)));
        }
        continue;
      }
      int E = 0;
      if (m > 0.f) {
        int e = 0;
        (void)std::frexp(m, &e);  // m = f 2^e, f in [0.5, 1)
        E = e - 7;                // m 2^-E in [64, 128)
        if (rint_d(std::ldexp(double(m), -E)) > 126.0) ++E;
        E = std::max(E, -140);
      }
      fac[sp * 16 + k] = float(std::ldexp(1.0, E - 8));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t col = idx[i];
        const double v = std::ldexp(double(x[col]), -E);  // exact
        double ai = rint_d(v);
        const double r = (v - ai) * 256.0;  // in [-128, 128], exact
        double ci = rint_d(r);
        const double r2 = (r - ci) * 256.0;      // exact
        if (ci > 127.0) ci -= 256.0, ai += 1.0;  // c = 128: carried (|a| <= 126 before)
        a[col] = int8_t(ai);
        c[col] = int8_t(ci);
        if (parts > 2) d[col] = int8_t(std::min(rint_d(r2), 127.0));
      }
    }
}

void affine_vnni_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                          int64_t r1, float* y, int64_t ldy, int parts) {
  const int bits = w.bits;
  const int64_t cols = w.cols, group = w.group, ngroups = cols / group;
  const int64_t span = affine_vnni_span(bits, w.group), per = span / 16;
  const int64_t spans = (cols + span - 1) / span;
  const bool fused = parts > 2 && affine_vnni_fused(bits, span);
  const size_t n = static_cast<size_t>(cols), ng = static_cast<size_t>(ngroups);
  std::vector<int8_t> pa(n), pc(n), pd(n);
  std::vector<float> fac(static_cast<size_t>(spans * 16)), xsum(ng), s(ng), b(ng);
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* xt = x + t * ldx;
    affine_vnni_split(xt, cols, bits, w.group, parts, pa.data(), pc.data(), pd.data(), fac.data());
    for (int64_t g = 0; g < ngroups; ++g) {  // 16 lanes over the group, then vnni_sum16
      float lanes[16] = {};
      for (int64_t col = 0; col < group; ++col) lanes[col % 16] += xt[g * group + col];
      xsum[size_t(g)] = vnni_sum16(lanes);
    }
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* codes = w.row(r);
      const size_t ssz = dtype_size(w.scale_dtype);
      for (int64_t g = 0; g < ngroups; ++g) {
        s[size_t(g)] =
            load_as_f32(w.scale_dtype, w.scales + size_t(r * w.scale_stride) * ssz, size_t(g));
        b[size_t(g)] =
            load_as_f32(w.scale_dtype, w.biases + size_t(r * w.scale_stride) * ssz, size_t(g));
      }
      float tot[16] = {}, bl[16] = {};
      for (int64_t sp = 0; sp < spans; ++sp)
        for (int k = 0; k < 16; ++k) {
          int64_t A = 0, C = 0, D = 0;
          for (int64_t j = 0; j < per; ++j) {
            const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
            if (col >= cols) continue;
            const int q = code_at(codes, col, bits);
            A += q * pa[size_t(col)];
            if (parts > 1) C += q * pc[size_t(col)];
            if (parts > 2) D += q * pd[size_t(col)];
          }
          float f;
          if (parts == 1) {  // fast numerics: A times the lane factor M / 127
            f = float(int32_t(A)) * fac[size_t(sp * 16 + k)];
          } else if (fused) {  // one int32 (affine_vnni_fused), converted once, times 2^(E-16)
            f = float(int32_t(A * 65536 + C * 256 + D)) *
                (fac[size_t(sp * 16 + k)] * (1.f / 256.f));
          } else {
            const int32_t acc = int32_t(A * 256 + C);  // exact: |acc| < 2^27
            f = float(acc);
            if (parts > 2) f = std::fma(float(D), 1.f / 256.f, f);
            f = f * fac[size_t(sp * 16 + k)];
          }
          const int64_t col0 = sp * span + affine_vnni_lane_col(bits, span, k, 0);
          const float sl = col0 < cols ? s[size_t(col0 / group)] : 0.f;
          tot[k] = std::fma(f, sl, tot[k]);
        }
      for (int64_t g = 0; g < ngroups; ++g)
        bl[g % 16] = std::fma(b[size_t(g)], xsum[size_t(g)], bl[g % 16]);
      y[t * ldy + r] = vnni_sum16(tot) + vnni_sum16(bl);
    }
  }
}

}  // namespace inkling
