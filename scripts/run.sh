#!/usr/bin/env bash
# The README's first command: sets up a fresh clone and runs fusebox's main job, the VIN-decode
# gateway in front of a local vPIC stand-in (no machine here reaches NHTSA).
#
#   scripts/run.sh [--smoke] [vin-gateway flags...]
#
# 1. installs the Debian packages fusebox needs (scripts/install-deps.sh; instant when present),
# 2. configures and builds the `release` preset into build/release,
# 3. starts build/release/bin/vpic-sim on a free loopback port,
# 4. starts build/release/bin/vin-gateway in front of it (default http://127.0.0.1:8080, last-good
#    cache in var/vin-cache.sqlite), prints the URL and decodes one VIN with curl to show it works,
# 5. serves until Ctrl-C (or SIGTERM), then stops both servers.
#
# Flags after the options are passed to vin-gateway, e.g. `scripts/run.sh --listen 127.0.0.1:9000`
# or `scripts/run.sh --cache memory`. `--smoke` stops after the demo decode (CI uses it to prove
# this command works). Exits non-zero on the first failure.
#
# `scripts/run.sh --fleet N [--smoke] [flags...]` builds as above, then runs a fleet instead:
# redis-server, vpic-sim, N gateways sharing their breaker and nginx in front on
# http://127.0.0.1:8080 (scripts/run-fleet.sh; docs/fleet.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh

fleet=""
if [ "${1:-}" = "--fleet" ]; then
  fleet="${2:-}"
  shift 2 || true
fi
smoke=false
gateway_args=()
cache_given=false
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=true ;;
    --cache | --cache=*) cache_given=true; gateway_args+=("$arg") ;;
    *) gateway_args+=("$arg") ;;
  esac
done
if [ "$cache_given" = false ]; then
  gateway_args+=(--cache sqlite:var/vin-cache.sqlite)
fi

echo "==> run: installing dependencies"
bash scripts/install-deps.sh

echo "==> run: configuring and building the release preset (build/release)"
cmake --preset release
# Only the programs this script starts: the tests are the README's second command's job.
cmake --build --preset release --target vin-gateway vpic-sim

if [ -n "$fleet" ]; then
  exec scripts/run-fleet.sh "$fleet" "$@"
fi

bin="build/release/bin"
for program in vpic-sim vin-gateway; do
  if [ ! -x "$bin/$program" ]; then
    echo "run: error: $bin/$program was not built" >&2
    exit 1
  fi
done

logs="build/run"
mkdir -p var
servers_begin run "$logs"

start_server vpic-sim "$bin/vpic-sim" --listen 127.0.0.1:0
upstream_url="$started_url"
echo "==> run: vpic-sim (local stand-in for NHTSA vPIC) at $upstream_url"
start_server vin-gateway "$bin/vin-gateway" --upstream-url "$upstream_url" "${gateway_args[@]}"
gateway_url="$started_url"

vin="1FTMW1T88MFA00001"
echo
echo "vin-gateway is serving at $gateway_url (logs: $logs/vin-gateway.log)"
echo "  web form:  $gateway_url/"
echo "  decode:    curl -s $gateway_url/api/v1/vin/$vin"
echo "  status:    curl -s $gateway_url/status"
echo "  faults:    curl -s -X POST $upstream_url/__control/faults -d '{\"mode\":\"hang\"}'"
echo
echo "\$ curl -s $gateway_url/api/v1/vin/$vin"
curl -sS --fail-with-body --max-time 15 "$gateway_url/api/v1/vin/$vin"
echo
if [ "$smoke" = true ]; then
  echo "==> run: --smoke: stopping"
  exit 0
fi
echo
echo "==> run: serving until Ctrl-C"
wait "${pids[1]}"
