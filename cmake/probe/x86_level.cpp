// Prints the x86-64 level whose Highway target this CPU runs (cmake/hwy_host_target.cmake):
// 4 = AVX3 (AVX-512 F/BW/DQ/VL), 3 = AVX2 (+ BMI2, FMA, F16C), 0 = neither. Highway's AVX2 and
// AVX3 targets need AES and PCLMUL too. __builtin_cpu_supports checks that the OS saves the
// AVX/AVX-512 state; F16C, AES and PCLMUL (which it does not know in every compiler) come from
// CPUID leaf 1.
#include <cpuid.h>

#include <cstdio>

int main() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) ecx = 0;
  const bool leaf1 = (ecx & bit_PCLMUL) && (ecx & bit_AES) && (ecx & bit_F16C);
  const bool avx2 = leaf1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                    __builtin_cpu_supports("fma");
  const bool avx3 = avx2 && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
  std::printf("%d", avx3 ? 4 : avx2 ? 3 : 0);
  return 0;
}
