// E4M3 (MXFP8) bytes to floats in SIMD registers, for every Highway target: included by each
// per-target kernel file after <hwy/highway.h> (Highway's -inl.h convention: the guard toggles so
// the header is compiled once per target).
#if defined(INKLING_OPS_E4M3_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef INKLING_OPS_E4M3_INL_H_
#undef INKLING_OPS_E4M3_INL_H_
#else
#define INKLING_OPS_E4M3_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {

// Lanes(df) E4M3 bytes at p as f32, each 2^-8 times its value: sign, exponent (bias 7) and
// mantissa move into an f16's fields (bias 15) one place over, subnormals included, so the
// f16 -> f32 widening is exact; callers fold the 2^8 into their block factor
// (mxfp8_block_factor, ops/quant.h). The NaN codes 0x7f / 0xff read as 480 / -480.
template <class DF>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> E4m3Over256(DF df, const uint8_t* p) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const hn::Rebind<uint8_t, DF> d8;
  const auto b = hn::PromoteTo(du16, hn::LoadU(d8, p));
  const auto bits = hn::Or(hn::ShiftLeft<7>(hn::And(b, hn::Set(du16, uint16_t{0x7f}))),
                           hn::ShiftLeft<8>(hn::And(b, hn::Set(du16, uint16_t{0x80}))));
  return hn::PromoteTo(df, hn::BitCast(dh, bits));
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#endif  // INKLING_OPS_E4M3_INL_H_ per-target guard
