#!/usr/bin/env bash
# Records an incident for `fusebox-sim replay` (docs/replay.md): vpic-sim plays a schedule of
# faults, vin-gateway (JSON log) runs in front of it with a config file, and a steady load of
# decodes goes through it; the gateway's log is what a real bad day would leave behind.
#
#   scripts/record-incident.sh SCHEDULE.toml GATEWAY.toml OUT.log [SECONDS] [RATE]
#
# SCHEDULE.toml: vpic-sim's [[upstream.phase]] tables (times from vpic-sim's start, a moment
# before the load's); GATEWAY.toml: the gateway's config file; SECONDS of load (default 60) at
# RATE decodes a second (default 10; both whole numbers), each a new VIN but one in five asking again for the VIN of
# two requests before (a cache hit, or a join while its call runs), each on its own connection.
# Uses build/release/bin (built first: the release preset's vin-gateway and vpic-sim). Writes
# OUT.log, and prints where the servers' logs are.
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
schedule="$(realpath "$1")"
config="$(realpath "$2")"
out="$3"
seconds="${4:-60}"
rate="${5:-10}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh

cmake --build --preset release --target vin-gateway vpic-sim >/dev/null
bin="build/release/bin"
logs="build/record-incident"
servers_begin record-incident "$logs"

start_server vpic-sim "$bin/vpic-sim" --listen 127.0.0.1:0 --latency 20ms --schedule "$schedule"
upstream_url="$started_url"
start_server vin-gateway "$bin/vin-gateway" --config "$config" --listen 127.0.0.1:0 \
  --upstream-url "$upstream_url" --cache memory --client-rate 0 --offline-db none \
  --log-format json
gateway_url="$started_url"

echo "==> record-incident: ${seconds} s at ${rate} decodes/s through $gateway_url"
total=$((seconds * rate))
interval_ns=$((1000000000 / rate))
start_ns=$(date +%s%N)
for ((i = 0; i < total; i++)); do
  n=$i
  if ((i % 5 == 4)); then
    n=$((i - 2))
  fi
  vin="$(printf '1FTMW1T88MR%06d' "$n")"
  # On its own, not waited for here: a hung call must not hold the next request back.
  curl -s -o /dev/null --max-time 30 "$gateway_url/api/v1/vin/$vin" &
  pause_ns=$((start_ns + (i + 1) * interval_ns - $(date +%s%N)))
  if ((pause_ns > 0)); then
    sleep "$(printf '%d.%09d' $((pause_ns / 1000000000)) $((pause_ns % 1000000000)))"
  fi
done
wait_clients() {
  local job
  for job in $(jobs -p); do
    if ! [[ " ${pids[*]} " == *" $job "* ]]; then
      wait "$job" || true
    fi
  done
}
wait_clients
stop_all
trap - EXIT
cp "$logs/vin-gateway.log" "$out"
echo "==> record-incident: the gateway's log is $out ($(wc -l <"$out") lines); servers' logs in $logs"
