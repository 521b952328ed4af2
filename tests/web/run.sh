#!/usr/bin/env bash
# Browser tests of the vin-gateway VIN form: starts vpic-sim and vin-gateway on loopback ports,
# drives Debian's chromium (/usr/bin/chromium) with playwright-core through the page, and stops
# both servers however it ends.
#
#   tests/web/run.sh [--update-docs-images] BIN_DIR [ARTIFACT_DIR]
#
# BIN_DIR holds vpic-sim and vin-gateway (e.g. build/release/bin). Screenshots of each state and
# the servers' logs go to ARTIFACT_DIR (default build/web-artifacts) and nowhere else: a test run
# never changes tracked files. To refresh the README's and docs/web-form.md's pictures, ask for it
# with --update-docs-images (or WEB_TEST_DOC_IMAGES=1): the OK and OPEN screenshots are then also
# copied to docs/img/form-ok.png and docs/img/form-open.png. Exits non-zero on any failure.
# Needs: node >= 20 with npm (node_modules is installed with `npm ci` when missing) and chromium.
set -euo pipefail

# Off by default: each run's screenshots differ (times, countdowns), so refreshing docs/img on
# every run would leave the tracked images modified after any test run.
update_doc_images="${WEB_TEST_DOC_IMAGES:-0}"
positional=()
for arg in "$@"; do
  case "$arg" in
    --update-docs-images) update_doc_images=1 ;;
    -*)
      echo "run.sh: unknown option $arg" >&2
      echo "usage: $0 [--update-docs-images] BIN_DIR [ARTIFACT_DIR]" >&2
      exit 2
      ;;
    *) positional+=("$arg") ;;
  esac
done
set -- "${positional[@]}"
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 [--update-docs-images] BIN_DIR [ARTIFACT_DIR]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=scripts/lib/servers.sh
source "$repo/scripts/lib/servers.sh"
bin_dir="$(cd "$1" && pwd)"
artifact_dir="${2:-$repo/build/web-artifacts}"
mkdir -p "$artifact_dir"
artifact_dir="$(cd "$artifact_dir" && pwd)"
chromium_path="${CHROMIUM:-/usr/bin/chromium}"

for tool in "$bin_dir/vpic-sim" "$bin_dir/vin-gateway" "$chromium_path"; do
  if [[ ! -x "$tool" ]]; then
    echo "run.sh: $tool is missing (build the binaries; apt-get install chromium)" >&2
    exit 2
  fi
done
if [[ ! -d "$here/node_modules/playwright-core" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/vin-web-test.XXXXXX")"
# The servers (start_server, stop_all: scripts/lib/servers.sh) log into $work; this script's own
# trap below stops them, with the test runner.
servers_prefix="run.sh"
servers_logs="$work"
test_group=""  # the test runner's process group (node and the chromium it starts)
# shellcheck disable=SC2317  # the EXIT trap runs it; shellcheck 0.9 misreads the final exit
cleanup() {
  local status=$?
  if [[ -n "$test_group" ]]; then
    kill -TERM -- "-$test_group" 2>/dev/null || true
  fi
  stop_all
  if [[ -n "$test_group" ]]; then
    for _ in $(seq 30); do
      kill -0 -- "-$test_group" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$test_group" 2>/dev/null || true
  fi
  cp "$work"/*.log "$artifact_dir"/ 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || true
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_server vpic-sim "$bin_dir/vpic-sim" --listen 127.0.0.1:0
sim_url="$started_url"
# Short timings: a hung call answers UPSTREAM_SLOW after 2 s; three failures open the breaker for
# 30 s (long enough to look at it, and nothing waits for it); decodes are fresh for 1 s only, so a
# VIN decoded earlier is served stale once the breaker is open; no client rate limit (the rules
# test sends a few hundred VINs); no offline decoder (the tests expect vPIC's outages to show, and
# cover the offline label with canned answers).
unset FUSEBOX_ADMIN_TOKEN  # the tests need no admin route
start_server vin-gateway \
  "$bin_dir/vin-gateway" --listen 127.0.0.1:0 --upstream-url "$sim_url" --cache memory \
  --call-timeout 2s --cooldown 30s --failure-threshold 3 --cache-ttl 1s --client-rate 0 \
  --offline-db none --probe-mode passive
gateway_url="$started_url"
echo "vpic-sim at $sim_url, vin-gateway at $gateway_url, artifacts in $artifact_dir"

doc_img_dir=""
if [[ "$update_doc_images" != 0 ]]; then
  doc_img_dir="$repo/docs/img"
  echo "run.sh: refreshing docs/img/form-ok.png and docs/img/form-open.png"
fi
cd "$here"
# Its own process group, so that cleanup also ends the chromium it starts; `timeout` bounds it.
GATEWAY_URL="$gateway_url" SIM_URL="$sim_url" \
  ARTIFACT_DIR="$artifact_dir" DOC_IMG_DIR="$doc_img_dir" CHROMIUM="$chromium_path" \
  CALL_TIMEOUT_MS=2000 TMPDIR="$work" \
  setsid timeout --kill-after=5 100 \
  node --test --test-concurrency=1 --test-timeout=60000 form.test.mjs &
test_group=$!
set +e
wait "$test_group"
status=$?
set -e
test_group=""
if [[ $status -ne 0 ]]; then
  echo "run.sh: browser tests failed (exit $status); screenshots and logs in $artifact_dir" >&2
fi
exit "$status"
