// MLX affine codes of any width decoded in SIMD registers, in the word-lane layout of
// ops/affine_words.h, for every Highway target: included by each per-target kernel file after
// <hwy/highway.h> (Highway's -inl.h convention: the guard toggles so the header is compiled once
// per target). Used by the fused kernels (quant_affine_words.cpp) and the gemm's tile
// dequantizer (matmul_hwy.cpp), so both decode exactly alike.
#if defined(INKLING_OPS_AFFINE_WORDS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef INKLING_OPS_AFFINE_WORDS_INL_H_
#undef INKLING_OPS_AFFINE_WORDS_INL_H_
#else
#define INKLING_OPS_AFFINE_WORDS_INL_H_
#endif

#include <algorithm>
#include <type_traits>
#include <utility>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace affine_words {

// The layout's counts at compile time (ops/affine_words.cpp computes the same at run time):
// codes starting in word p of a 32-element chunk, steps per word, straddling steps.
constexpr int CodeStart(int bits, int p) {
  return (32 * p + bits - 1) / bits;
}
constexpr int Steps(int bits) {
  int s = 0;
  for (int p = 0; p < bits; ++p) s = std::max(s, CodeStart(bits, p + 1) - CodeStart(bits, p));
  return s;
}
constexpr bool Straddles(int bits, int j) {
  for (int p = 0; p < bits; ++p) {
    const int e = CodeStart(bits, p) + j;
    if (e < CodeStart(bits, p + 1) && e * bits - 32 * p + bits > 32) return true;
  }
  return false;
}

// f(std::integral_constant<int, J>) for J = 0 .. n-1, unrolled at compile time.
template <int... Js, class F>
HWY_INLINE void Unroll(std::integer_sequence<int, Js...>, F&& f) {
  (f(std::integral_constant<int, Js>()), ...);
}

// Step J of a vector of code words, as u32 codes. cw: the words; cn: each lane's next word (read
// on straddling steps only); sh: the layout's per-lane right shifts of this step (used when bits
// does not divide 32; otherwise every lane shifts by J * bits, an immediate).
template <int kBits, int J, class DU, class VU = hwy::HWY_NAMESPACE::Vec<DU>>
HWY_INLINE VU Codes(DU du, VU cw, VU cn, VU sh) {
  namespace hn = hwy::HWY_NAMESPACE;
  constexpr uint32_t kMask = (1u << kBits) - 1u;
  if constexpr (32 % kBits == 0) {
    (void)cn, (void)sh;
    if constexpr (J == 0) return hn::And(cw, hn::Set(du, kMask));
    if constexpr (J * kBits + kBits == 32) return hn::ShiftRight<(J * kBits) % 32>(cw);
    return hn::And(hn::ShiftRight<(J * kBits) % 32>(cw), hn::Set(du, kMask));
  } else if constexpr (Straddles(kBits, J)) {
    // Lanes that do not straddle shift by >= 1 (J >= 1 here), so the next word's bits land at
    // >= kBits and the mask removes them; straddling lanes get the code's high bits from it.
    return hn::And(hn::Or(cw >> sh, cn << hn::Sub(hn::Set(du, 32u), sh)), hn::Set(du, kMask));
  } else {
    (void)cn;
    return hn::And(cw >> sh, hn::Set(du, kMask));
  }
}

// The same codes as f32 (exact: codes are below 2^8).
template <int kBits, int J, class DF, class VU>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> CodesF(DF df, VU cw, VU cn, VU sh) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  return hn::ConvertTo(df, hn::BitCast(di, Codes<kBits, J>(du, cw, cn, sh)));
}

}  // namespace affine_words
}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#endif  // INKLING_OPS_AFFINE_WORDS_INL_H_ per-target guard
