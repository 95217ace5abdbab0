#pragma once

// Whether this test binary runs under AddressSanitizer. Statistical tests draw fewer samples
// there: the sanitizer build runs the same code paths for memory and UB errors, while the
// normal build keeps the full sample count for the statistical power.
namespace inkling::test {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INKLING_TEST_ASAN 1
#endif
#endif
#if !defined(INKLING_TEST_ASAN) && defined(__SANITIZE_ADDRESS__)
#define INKLING_TEST_ASAN 1
#endif

#ifdef INKLING_TEST_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

// n samples in a normal build, n / divisor under ASan.
inline constexpr int samples(int n, int asan_divisor) {
  return kUnderAsan ? n / asan_divisor : n;
}

}  // namespace inkling::test
