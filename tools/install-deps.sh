#!/usr/bin/env bash
# Installs the Debian packages inkling.cpp builds and tests with (see DESIGN: no vendored code).
# Skips the install when every package is already present.
set -euo pipefail
PKGS="cmake ninja-build g++ pkg-config clang-format libhwy-dev nlohmann-json3-dev libpcre2-dev libpng-dev libjpeg-dev
      clang libclang-rt-14-dev
      libcpp-httplib-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libedit-dev
      openmpi-bin libopenmpi-dev"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" != "0" ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
