#!/usr/bin/env bash
# The README's second command: runs every test.
#
#   scripts/test.sh
#
# Installs the Debian packages fusebox needs (idempotent), then runs the `release` workflow
# preset: configure, build and run every CTest test (unit, property, stress, examples) of
# build/release. Exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "==> test: installing dependencies"
bash scripts/install-deps.sh

echo "==> test: cmake --workflow --preset release (configure, build, test)"
cmake --workflow --preset release
echo "==> test: all tests passed"
