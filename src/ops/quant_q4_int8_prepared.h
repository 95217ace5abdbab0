// What the two forms of the int8 4-bit kernel (quant_q4_int8.h) share: one call's split of x and a
// row's weight factors (quant_q4_int8.cpp, AVX2), and the 512-bit form's rows
// (quant_q4_int8_wide.cpp, AVX512-VNNI). Internal to those files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/aligned_scratch.h"
#include "ops/weight_view.h"

namespace inkling {

struct Q4Int8Prepared {
  // Per token (cols apart): the parts a and c in span order (quant_q4_int8.h), or, for the wide
  // form, each whole pair of spans as [A of s, A of s+1, B of s, B of s+1] (an odd last span stays
  // [A, B]); on cache lines, so a 64-byte load of them is one line.
  AlignedScratch<int8_t> a, c;
  AlignedScratch<float> dl;  // decode forms only: per span, the x factor of each of its 8 lanes
  std::vector<float> d, gsum;
  std::vector<float> rs, rb;  // the current row's weight factors (and affine biases) as f32
};

// Splits n_tok tokens of x for view w into p (AVX2; bitwise q4_int8_split), in the wide form's
// pair order when `pairs`.
void q4_int8_prepare(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int parts,
                     bool pairs, Q4Int8Prepared& p);
// Row r's factors into p.rs (and p.rb): affine scales and biases per group; NVFP4 f32(e4m3) *
// scale2 / 2 per 16 columns.
void q4_int8_row_factors(const MatView& w, int64_t r, Q4Int8Prepared& p);
// The affine bias term of one (row, token): sum over groups g of rb[g] * gs[g], eight lanes over
// whole octets of groups reduced by q4_int8_sum8, then the rest one after another by fma.
float q4_int8_bias(const float* rb, const float* gs, int64_t ng);

// Software prefetch (decode tuning: no effect on the results) of the row `dist` ahead of the one
// being read, TuneParam::kQ4Prefetch blocks of 4 rows (0: none); set up once per call.
struct Q4Int8Prefetch {
  int64_t dist = 0;
  int64_t scale_bytes = 0, scale_elem = 0;  // a row's factor bytes (and biases'), element size
};
Q4Int8Prefetch q4_int8_prefetch(const MatView& w);
// Prefetches the factors of row r + pf.dist and returns its codes (null when that row is at or
// past r_end, or prefetch is off), for the kernel to prefetch line by line as it reads row r's.
const char* q4_int8_prefetch_ahead(const MatView& w, const Q4Int8Prefetch& pf, int64_t r,
                                   int64_t r_end);

// Whether the CPU has F16C (VCVTPH2PS: the NVFP4 factors).
bool q4_int8_cpu_f16c();

// The 512-bit form: true when this binary has it and the CPU runs AVX512F/BW/VL + AVX512-VNNI.
bool q4_int8_wide_cpu();
// q4_int8_row_factors of an NVFP4 row in 512 bits (the wide form's), bitwise the same.
void q4_int8_wide_nvfp4_factors(const MatView& w, int64_t r, Q4Int8Prepared& p);
// Rows [r0, r1) of every token from p (prepared with pairs = true): bitwise the AVX2 form.
void q4_int8_wide_rows(Q4Int8Prepared& p, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1,
                       float* y, int64_t ldy, int parts);

// Calls f(std::bool_constant<NVFP4>, std::integral_constant<int, group>,
// std::integral_constant<int, parts>) for view w (NVFP4: group 16; affine: 32, 64 or 128) and 1
// or 2 parts: the kernels' template dispatch, written once.
template <typename F>
void q4_int8_dispatch(const MatView& w, int parts, F&& f) {
  auto with_parts = [&](auto nv, auto group) {
    if (parts == 2) return f(nv, group, std::integral_constant<int, 2>{});
    return f(nv, group, std::integral_constant<int, 1>{});
  };
  if (w.format == WeightFormat::kNvfp4)
    return with_parts(std::true_type{}, std::integral_constant<int, 16>{});
  switch (w.group) {
    case 32:
      return with_parts(std::false_type{}, std::integral_constant<int, 32>{});
    case 64:
      return with_parts(std::false_type{}, std::integral_constant<int, 64>{});
    default:
      return with_parts(std::false_type{}, std::integral_constant<int, 128>{});
  }
}

// The decode forms' row loop: per row of [r0, r1) its prefetch and factors (factors(w, r, p):
// q4_int8_row_factors or a form's own, bitwise the same) once, then its tokens 4 at a time (the
// row's codes stay in L1), the first pass prefetching the row ahead. Calls
// row(std::integral_constant<int, NT>, t0, r, ahead_or_null) for each pass.
template <typename Row, typename Factors>
void q4_int8_row_passes(Q4Int8Prepared& p, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1,
                        Row&& row, Factors&& factors) {
  constexpr int64_t kTokPass = 4;
  const Q4Int8Prefetch pfs = q4_int8_prefetch(w);
  for (int64_t r = r0; r < r1; ++r) {
    const char* ahead = q4_int8_prefetch_ahead(w, pfs, r, r1);
    factors(w, r, p);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kTokPass) {
      const char* pf = t0 == 0 ? ahead : nullptr;  // the first pass reads the row from memory
      switch (std::min<int64_t>(kTokPass, n_tok - t0)) {
        case 1:
          row(std::integral_constant<int, 1>{}, t0, r, pf);
          break;
        case 2:
          row(std::integral_constant<int, 2>{}, t0, r, pf);
          break;
        case 3:
          row(std::integral_constant<int, 3>{}, t0, r, pf);
          break;
        default:
          row(std::integral_constant<int, 4>{}, t0, r, pf);
          break;
      }
    }
  }
}

}  // namespace inkling
