#!/usr/bin/env bash
# Installs every Debian package fusebox needs to build, test, lint and run.
# Idempotent: packages already present are skipped, so a second run is instant.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # lint and sanitizer toolchain (clang-14 cannot parse libstdc++ 12's <ranges>)
  clang-16 clang-format-16 clang-tidy-16 libclang-rt-16-dev
  # shell lint (scripts/check-shell.sh)
  shellcheck
  # fuzzing (scripts/fuzz.sh, the `fuzz` preset)
  libfuzzer-16-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  # libraries
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev libssl-dev libcli11-dev libtomlplusplus-dev libfmt-dev libspdlog-dev
  # the main command's demo decode, and the web form's browser tests (tests/web, Playwright)
  curl chromium
  # the soak's traffic (scripts/soak.sh)
  wrk
  # fleet mode and its tests (fusebox::redis, tests/redis): the hiredis client and a server
  libhiredis-dev redis-server
)
# Node.js and npm for the browser tests: Debian's, unless the machine already has both.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
