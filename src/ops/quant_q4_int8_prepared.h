// What the two forms of the int8 4-bit kernel (quant_q4_int8.h) share: one call's split of x and a
// row's weight factors (quant_q4_int8.cpp, AVX2), and the 512-bit form's rows
// (quant_q4_int8_wide.cpp, AVX512-VNNI). Internal to those files.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_scratch.h"
#include "ops/weight_view.h"

namespace inkling {

struct Q4Int8Prepared {
  // Per token (cols apart): the parts a and c in span order (quant_q4_int8.h), or, for the wide
  // form, each whole pair of spans as [A of s, A of s+1, B of s, B of s+1] (an odd last span stays
  // [A, B]); on cache lines, so a 64-byte load of them is one line.
  AlignedScratch<int8_t> a, c;
  AlignedScratch<float> dl;  // per span, the x factor of each of its 8 lanes
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

// Software prefetch (decode tuning: no effect on the results): the row q4_int8_prefetch_rows()
// ahead of the one being read, TuneParam::kQ4Prefetch blocks of 4 rows (0: none). Its factors
// are prefetched by q4_int8_prefetch_ahead(), which returns its codes (null when it is past
// r_end, or prefetch is off) for the kernel to prefetch line by line as it reads row r's.
int64_t q4_int8_prefetch_rows();
const char* q4_int8_prefetch_ahead(const MatView& w, int64_t r, int64_t dist, int64_t r_end);

// Whether the CPU has F16C (VCVTPH2PS: the NVFP4 factors).
bool q4_int8_cpu_f16c();

// The 512-bit form: true when this binary has it and the CPU runs AVX512F/BW/VL + AVX512-VNNI.
bool q4_int8_wide_cpu();
// Rows [r0, r1) of every token from p (prepared with pairs = true): bitwise the AVX2 form.
void q4_int8_wide_rows(Q4Int8Prepared& p, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1,
                       float* y, int64_t ldy, int parts);

}  // namespace inkling
