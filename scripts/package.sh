#!/usr/bin/env bash
# Builds fusebox's Debian packages into build/packages/ (docs/install.md):
#   vin-gateway, vin-gateway-vpic-data, vpic-sim, fusebox-sim, libfusebox-dev
# from a release build (configured here with the `release` preset if it is not yet), building
# only what the packages hold, then checks them with lintian (an error fails the script).
# Usage: scripts/package.sh [BUILD_DIR]   (default build/release)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-build/release}"
out="build/packages"

if [ ! -s var/vpic/vpic.lite.db ]; then
  echo "package: var/vpic/vpic.lite.db is missing (the vin-gateway-vpic-data package is made" \
    "from it): run scripts/install-deps.sh first" >&2
  exit 1
fi
if ! command -v dpkg-shlibdeps >/dev/null; then
  echo "package: dpkg-shlibdeps (dpkg-dev) is missing: run scripts/install-deps.sh first" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  if [ "$build" != "build/release" ]; then
    echo "package: $build is not a configured build directory" >&2
    exit 1
  fi
  cmake --preset release
fi
cmake --build "$build" --target fusebox_deb_files

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
(cd "$build" && cpack -G DEB -B "$staging" >"$staging/cpack.log" 2>&1) || {
  cat "$staging/cpack.log" >&2
  echo "package: cpack failed" >&2
  exit 1
}
rm -rf "$out"
mkdir -p "$out"
mv "$staging"/*.deb "$out"/

if command -v lintian >/dev/null; then
  # Errors fail; the warnings left are explained in docs/install.md ("Lintian").
  lintian_status=0
  lintian --fail-on error --tag-display-limit 0 "$out"/*.deb >"$staging/lintian.log" 2>&1 ||
    lintian_status=$?
  grep -v '^running with root' "$staging/lintian.log" || true
  if [ "$lintian_status" -ne 0 ]; then
    echo "package: lintian reports errors" >&2
    exit 1
  fi
else
  echo "package: lintian is not installed: the packages are not checked" >&2
fi
echo "package: $(find "$out" -name '*.deb' | wc -l) packages in $out:"
ls -l "$out"
