// E2M1 (NVFP4) codes to floats in SIMD registers, for every Highway target: included by each
// per-target kernel file after <hwy/highway.h> (Highway's -inl.h convention: the guard toggles so
// the header is compiled once per target).
#if defined(INKLING_OPS_E2M1_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef INKLING_OPS_E2M1_INL_H_
#undef INKLING_OPS_E2M1_INL_H_
#else
#define INKLING_OPS_E2M1_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {

// Twice the value of the E2M1 codes in the low 4 bits of each u32 lane of q (bit 3 the sign):
// magnitude index m (0..7 -> 0, 1, 2, 3, 4, 6, 8, 12) as m + max(m - 4, 0) + 2 max(m - 6, 0),
// without a table; the sign bit moves to bit 31. Callers fold the factor 1/2 into their scale.
template <class DF, class VU>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> TwiceE2m1(DF df, VU q) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto zero = hn::Zero(df);
  const auto m = hn::ConvertTo(df, hn::BitCast(di, hn::And(q, hn::Set(du, 7u))));
  const auto m4 = hn::Max(hn::Sub(m, hn::Set(df, 4.f)), zero);
  const auto m6 = hn::Max(hn::Sub(m, hn::Set(df, 6.f)), zero);
  const auto v = hn::Add(hn::Add(m, m4), hn::Add(m6, m6));
  const auto sign = hn::ShiftLeft<28>(hn::And(q, hn::Set(du, 8u)));
  return hn::BitCast(df, hn::Or(hn::BitCast(du, v), sign));
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#endif  // INKLING_OPS_E2M1_INL_H_ per-target guard
