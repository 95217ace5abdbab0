#!/usr/bin/env bash
# inkling inside another project (ctest install_subproject): configures tests/install/subproject,
# a parent that does add_subdirectory() on this source tree and links examples/generate.cpp to
# inkling::inkling, builds it (the library is compiled again, at -O0 to keep this cheap) and runs
# it on the bundled tiny checkpoint.
#   check_subproject.sh BUILD_DIR SOURCE_DIR
# Environment (set by tests/CMakeLists.txt): INKLING_CXX, INKLING_CXX_LAUNCHER (ccache, when the
# build uses it), INKLING_GENERATOR.
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
work=$build/subproject-test
rm -rf "$work"

echo "== configure the parent project"
cmake -S "$src/tests/install/subproject" -B "$work" -G "${INKLING_GENERATOR:-Ninja}" \
  -DINKLING_SOURCE_DIR="$src" -DCMAKE_CXX_COMPILER="${INKLING_CXX:-c++}" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="${INKLING_CXX_LAUNCHER:-}" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS_NONE=-O0 -DINKLING_WERROR=ON
echo "== build"
start=$SECONDS
cmake --build "$work" --parallel "${INKLING_TEST_JOBS:-2}"
echo "built in $((SECONDS - start)) s"

out=$("$work/generate" "$src/tests/fixtures/full/og" 386,10,415,335 4)
echo "$out"
case "$out" in
  "ids: "[0-9]*) echo "ok: the parent project's program generated tokens" ;;
  *) echo "FAIL: unexpected output"; exit 1 ;;
esac
