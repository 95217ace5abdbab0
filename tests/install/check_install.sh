#!/usr/bin/env bash
# Uses an inkling build as a user of the installed library would (ctest install_package):
# `cmake --install` into BUILD/install-test/stage, then examples/generate.cpp built against that
# prefix twice, with find_package(inkling) (examples/CMakeLists.txt) and with pkg-config, each
# run on the bundled tiny checkpoint and checked against its reference greedy ids; and
# examples/quantize.cpp, whose quantize_model() output must equal `inkling quantize`'s.
#   check_install.sh BUILD_DIR SOURCE_DIR
# Environment (set by tests/CMakeLists.txt): INKLING_CXX, INKLING_CXX_FLAGS,
# INKLING_LINKER_FLAGS (the build's compiler and flags), INKLING_GENERATOR.
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
cxx=${INKLING_CXX:-c++}
cxxflags="${INKLING_CXX_FLAGS:-} -Wall -Wextra -Werror"
ldflags=${INKLING_LINKER_FLAGS:-}
work=$build/install-test
stage=$work/stage
rm -rf "$work"
mkdir -p "$work"

# tests/fixtures/full/ref/greedy.json: the prompt and the first 8 of its greedy ids.
model=$src/tests/fixtures/full/og
prompt=386,10,415,335,493,459,313,395,180,238,366,218,490,18,29,45,351,388,136,198,421,329,141,59,122,410,476,382,417,305,144,341
expect="ids: 153 181 418 476 401 400 499 449"
check_run() {  # check_run NAME PROGRAM
  local out
  out=$("$2" "$model" "$prompt" 8)
  if [ "$out" != "$expect" ]; then
    printf 'FAIL %s printed:\n%s\nexpected:\n%s\n' "$1" "$out" "$expect"
    exit 1
  fi
  echo "ok: $1 printed the reference greedy ids"
}

echo "== cmake --install $build --prefix $stage"
cmake --install "$build" --prefix "$stage" >"$work/install.log"
(cd "$stage" && find . -type f | sort)
# The public headers only: nothing from src/ is installed.
headers=$(cd "$stage/include" && find . -type f | sort | tr '\n' ' ')
public=$(cd "$src/include" && find . -type f | sort | tr '\n' ' ')
if [ "$headers" != "$public" ]; then
  echo "FAIL: installed headers are: $headers; include/ has: $public"
  exit 1
fi
pc=$(find "$stage" -name inkling.pc)
config=$(find "$stage" -name inklingConfig.cmake)
[ -n "$pc" ] && [ -n "$config" ] && [ -f "$(dirname "$config")/inklingConfigVersion.cmake" ]

echo "== examples/ with find_package(inkling) and CMAKE_PREFIX_PATH=$stage"
cmake -S "$src/examples" -B "$work/cmake" -G "${INKLING_GENERATOR:-Ninja}" \
  -DCMAKE_PREFIX_PATH="$stage" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$work/cmake.log"
grep -q "inkling_DIR:PATH=$stage/" "$work/cmake/CMakeCache.txt"  # found the staged package
cmake --build "$work/cmake"
check_run "find_package build" "$work/cmake/generate"

echo "== examples/quantize.cpp: quantize_model() from the installed library, as the CLI does"
"$work/cmake/quantize" "$model" "$work/q4-api" 4 | tee "$work/quantize.log"
grep -q "^ids: [0-9]" "$work/quantize.log"
"$build/inkling" quantize -m "$model" -o "$work/q4-cli" --bits 4 --group-size 64 >"$work/cli.log"
for f in "$work"/q4-cli/*; do  # the same folder, byte for byte
  cmp "$f" "$work/q4-api/$(basename "$f")"
done
[ "$(ls "$work/q4-cli")" = "$(ls "$work/q4-api")" ]
echo "ok: the library call wrote the CLI's output byte for byte"

echo "== examples/generate.cpp with pkg-config --cflags --libs inkling"
if ! command -v pkg-config >/dev/null; then
  echo "pkg-config is not installed: skipped"
  exit 0
fi
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs inkling)
echo "pkg-config inkling $(pkg-config --modversion inkling): $flags"
pkg-config --static --libs inkling >/dev/null
# shellcheck disable=SC2086  # the flags are word lists
"$cxx" -std=c++20 $cxxflags "$src/examples/generate.cpp" -o "$work/generate-pc" $flags $ldflags \
  -Wl,-rpath,"$(pkg-config --variable=libdir inkling)"  # for a shared libinkling
check_run "pkg-config build" "$work/generate-pc"
