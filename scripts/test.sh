#!/usr/bin/env bash
# The README's second command: runs every test.
#
#   scripts/test.sh
#
# Installs the Debian packages fusebox needs (idempotent), then runs the `release` workflow
# preset: configure, build and run every CTest test (unit, property, stress, golden, examples,
# gateway integration) of build/release, then the browser tests of the VIN form (tests/web).
# Exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "==> test: installing dependencies"
bash scripts/install-deps.sh

echo "==> test: cmake --workflow --preset release (configure, build, test)"
cmake --workflow --preset release

# The VIN form in a real browser (Debian's chromium driven by playwright-core) against vpic-sim
# and vin-gateway on loopback. Screenshots of each state go to build/web-artifacts; the ones in
# docs/img are refreshed by hand (WEB_TEST_DOC_IMAGES=1), not by every test run.
echo "==> test: tests/web/run.sh build/release/bin (browser tests of the VIN form)"
WEB_TEST_DOC_IMAGES="${WEB_TEST_DOC_IMAGES:-0}" bash tests/web/run.sh build/release/bin \
  build/web-artifacts
echo "==> test: all tests passed"
