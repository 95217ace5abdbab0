# INKLING_HWY_HOST_TARGET (the sanitizer presets, CMakePresets.json): compile the Highway
# kernels only for the target this machine dispatches to in production, instead of EMU128 +
# AVX2 + AVX3. The sanitizer build runs its tests where it is built, and the kernel files are
# most of its compile time (each compiled once per target).
#
# Highway compiles the static target (the best one the -march baseline allows) and the better
# ones it can dispatch to (hwy/detect_targets.h), so raising the baseline to the host's level
# leaves one target: AVX-512 host: -march=x86-64-v4, AVX3 only (AVX3_DL is not attainable
# unless wanted, so production dispatch picks AVX3 there too); AVX2 host: -march=x86-64-v3 with
# AVX3 disabled, AVX2 only. -maes -mpclmul: Highway's AVX2/AVX3 baselines need them
# (x86-64-v3/v4 do not include them). -ffp-contract=off: with FMA in the baseline clang would
# contract a * b + c in the scalar twins, which the tests compare bitwise with the kernels (the
# default baseline has no FMA, so this keeps the scalar code's rounding as in every other build).
# Other machines (x86 without AVX2, cross compiling: EMU128 + AVX2 + AVX3 as before; not x86:
# every target) keep what the sanitizer builds compiled before.
function(inkling_hwy_host_target out)
  set(flags "")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT CMAKE_CROSSCOMPILING)
    try_run(run_result compile_ok ${CMAKE_BINARY_DIR}/hwy_host_probe
      ${PROJECT_SOURCE_DIR}/cmake/probe/x86_level.cpp
      COMPILE_OUTPUT_VARIABLE compile_out RUN_OUTPUT_VARIABLE level)
    if(compile_ok AND run_result EQUAL 0 AND level STREQUAL "4")
      set(flags -march=x86-64-v4 -maes -mpclmul -ffp-contract=off)
      set(what "AVX3 only (-march=x86-64-v4)")
    elseif(compile_ok AND run_result EQUAL 0 AND level STREQUAL "3")
      # HWY_AVX3 = 1 << 8; SSSE3 | SSE4 (0x1800) are below the baseline anyway.
      set(flags -march=x86-64-v3 -maes -mpclmul -ffp-contract=off -DHWY_DISABLED_TARGETS=0x100)
      set(what "AVX2 only (-march=x86-64-v3)")
    endif()
  endif()
  if(NOT flags AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(flags -DHWY_DISABLED_TARGETS=0x1800)  # less SSSE3 | SSE4, as before this option
    set(what "EMU128, AVX2 and AVX3 (no AVX2 host detected)")
  elseif(NOT flags)
    set(what "every target (not x86)")
  endif()
  message(STATUS "INKLING_HWY_HOST_TARGET: Highway kernels for ${what}")
  set(${out} ${flags} PARENT_SCOPE)
endfunction()
