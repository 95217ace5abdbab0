#!/usr/bin/env bash
# Brief CI run of every libFuzzer target: configure + build build-fuzz with clang
# (-DINKLING_FUZZ=ON), replay each target's seed corpus and past findings
# (tests/fuzz/corpus/<t>, tests/fuzz/regressions/<t>), then fuzz each for FUZZ_SECONDS (default
# 20) from a scratch copy of its corpus, JOBS (default 2) targets at a time. Exits non-zero on any
# crash, leak, timeout or OOM.
# Usage: tools/fuzz-smoke.sh [target...]   (targets without the fuzz_ prefix; default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-20}
JOBS=${JOBS:-2}

# A build already configured with INKLING_FUZZ=ON (e.g. BUILD_DIR=build-asan from the asan-ubsan
# preset, which CI builds anyway) is reused as it is.
# Otherwise build-fuzz is configured from the fuzz preset (CMakePresets.json).
if ! grep -q "^INKLING_FUZZ:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null; then
  if [ "$BUILD" = build-fuzz ]; then
    cmake --preset fuzz >/dev/null
  else
    CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DINKLING_FUZZ=ON -DINKLING_TESTS=OFF \
      -DINKLING_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
fi
if [ $# -gt 0 ]; then targets=("$@"); else
  targets=()
  for f in tests/fuzz/fuzz_*.cpp; do t=$(basename "$f" .cpp); targets+=("${t#fuzz_}"); done
fi
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
common=(-rss_limit_mb=2048 -timeout=30 -print_final_stats=1)  # replay: inputs at full length

# One target: replay, then fuzz. Its report goes to $work/$t.out; a failure exits non-zero.
smoke() {
  local t=$1 bin="$BUILD/fuzz/fuzz_$1" inputs=(tests/fuzz/corpus/"$1")
  [ -d tests/fuzz/regressions/"$t" ] && inputs+=(tests/fuzz/regressions/"$t")
  echo "== fuzz_$t: replaying ${inputs[*]}"
  "$bin" "${common[@]}" -runs=0 "${inputs[@]}" >"$work/$t.replay.log" 2>&1 ||
    { tail -n 60 "$work/$t.replay.log"; echo "fuzz_$t: FAILED on a committed input"; return 1; }
  mkdir -p "$work/$t"
  cp -r "${inputs[0]}"/. "$work/$t"/
  echo "== fuzz_$t: fuzzing ${SECONDS_EACH}s"
  "$bin" "${common[@]}" -max_len=32768 -max_total_time="$SECONDS_EACH" -artifact_prefix="$work/$t-" \
    "$work/$t" >"$work/$t.log" 2>&1 ||
    { tail -n 60 "$work/$t.log"; echo "fuzz_$t: FAILED; reproducer: $(ls "$work/$t"-* 2>/dev/null)";
      mkdir -p fuzz-artifacts && cp "$work/$t"-* fuzz-artifacts/ 2>/dev/null; return 1; }
  grep -h "stat::number_of_executed_units" "$work/$t.log" | sed "s/^/   fuzz_$t /" || true
}

# JOBS targets at a time (each fuzzer is one process on one core), every one for the full
# FUZZ_SECONDS; reports are printed in target order, and any failure fails the run.
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  { smoke "$t" >"$work/$t.out" 2>&1; echo $? >"$work/$t.rc"; } &
done
wait
failed=0
for t in "${targets[@]}"; do
  cat "$work/$t.out"
  [ "$(cat "$work/$t.rc" 2>/dev/null)" = 0 ] || failed=1
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz smoke: ${#targets[@]} targets clean"
