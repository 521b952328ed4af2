#!/usr/bin/env bash
# vin-gateway side by side with what users would put in front of vPIC instead: nginx (cache,
# stale serving, passive failure detection), HAProxy (passive and active health checks) and an
# unprotected proxy, each in turn in front of its own fresh vpic-sim, under the same outage
# (compare.py's PHASES, as a vpic-sim schedule) and the same open-loop clients.
#
# Usage: bench/compare/run.sh [--quick | --check] [--bin DIR] [--out DIR] [--only NAME]...
#   (no mode)  the full outage: about 3 minutes per contender, 13 minutes in all
#   --quick    the same outage with every phase at 0.3x: under a minute per contender
#   --check    phases at 0.06x, 20 requests/s, 10 s client timeout, 20 hot VINs: the harness end
#              to end in about a minute (the test suite runs it); its numbers are not meant to be
#              read
#   --bin DIR  where vin-gateway and vpic-sim are (default build/release/bin)
#   --out DIR  results (default build/bench-compare): per contender samples.csv (one row per
#              request), sim.csv (vpic-sim's counters 4 times a second), logs; results.json,
#              <contender>.svg, overlay.svg and table.md
#   --only N   run only contender N (repeatable): vin-gateway, nginx, haproxy, unprotected; the
#              others' results in --out stay and are analyzed with it
#
# Needs nginx, haproxy, curl and python3-aiohttp (scripts/install-deps.sh installs them). Every
# server binds 127.0.0.1 on a free port and is stopped on exit, whatever happens.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/../.." && pwd)
py=/usr/bin/python3
scale=1
rate=50
client_timeout=30
hot=200
mode=full
bin=${root}/build/release/bin
out=${root}/build/bench-compare
only=()

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick scale=0.3 ;;
    --check) mode=check scale=0.06 rate=20 client_timeout=10 hot=20 ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only+=("$2"); shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

sim_bin=${bin}/vpic-sim
gateway_bin=${bin}/vin-gateway
for tool in "${sim_bin}" "${gateway_bin}"; do
  if [[ ! -x "${tool}" ]]; then
    echo "run.sh: ${tool} is missing: build it first (cmake --build --preset release)" >&2
    exit 2
  fi
done
for tool in nginx haproxy curl; do
  if ! command -v "${tool}" >/dev/null; then
    echo "run.sh: ${tool} is missing: run scripts/install-deps.sh" >&2
    exit 2
  fi
done
if ! "${py}" -c 'import aiohttp' 2>/dev/null; then
  echo "run.sh: python3-aiohttp is missing: run scripts/install-deps.sh" >&2
  exit 2
fi

contenders=(vin-gateway nginx haproxy unprotected)
if [[ ${#only[@]} -gt 0 ]]; then
  for name in "${only[@]}"; do
    if [[ ! " ${contenders[*]} " =~ \ ${name}\  ]]; then
      echo "run.sh: unknown contender '${name}' (vin-gateway, nginx, haproxy, unprotected)" >&2
      exit 2
    fi
  done
  contenders=("${only[@]}")
fi

# Processes: start_server, stop_all, free_port and the EXIT trap, shared with the gateway bench.
# shellcheck source=scripts/lib/await_listening.sh
source "${root}/scripts/lib/await_listening.sh"
# shellcheck source=bench/gateway/lib/procs.sh
source "${root}/bench/gateway/lib/procs.sh"
procs_setup

# --only keeps the other contenders' results, so that one can be run again and analyzed with them.
if [[ ${#only[@]} -gt 0 ]]; then
  for name in "${contenders[@]}"; do
    rm -rf "${out:?}/${name}"
  done
else
  rm -rf "${out}"
fi
mkdir -p "${out}"
"${py}" "${here}/compare.py" schedule --scale "${scale}" >"${out}/outage.toml"
"${py}" "${here}/compare.py" vins --hot "${hot}" --new 6000 --out "${out}/vins.txt"

# wait_http URL PID: until URL answers at all (any status), or PID dies, or 5 s pass.
wait_http() {
  local i
  for ((i = 0; i < 50; i++)); do
    if curl -s -o /dev/null --max-time 1 "$1"; then
      return 0
    fi
    if ! kill -0 "$2" 2>/dev/null; then
      return 1
    fi
    sleep 0.1
  done
  return 1
}

status_text() {
  case "$1" in
    502) echo "Bad Gateway" ;;
    503) echo "Service Unavailable" ;;
    504) echo "Gateway Timeout" ;;
  esac
}

# nginx's workers, when its master runs as root, run as the same user: the default (nobody) could
# not reach its cache and temp dirs under --out when a parent directory is private (a clone in a
# mktemp -d directory is 0700). Not root: nginx keeps the user it was started as, and the line is
# left out (nginx would warn that it ignores it).
nginx_user=""
if [[ $(id -u) == 0 ]]; then
  nginx_user="user $(id -un) $(id -gn);"
fi

# fill TEMPLATE DEST DIR: the template with @DIR@, @SIM@, @PORT@, @BACKUP_PORT@ and @USER@ filled
# in.
fill() {
  sed -e "s|@DIR@|$3|g" -e "s|@SIM@|${sim_addr}|g" -e "s|@PORT@|${port}|g" \
    -e "s|@BACKUP_PORT@|${backup_port}|g" -e "s|@USER@|${nginx_user}|g" "$1" >"$2"
}

# start_contender NAME DIR: sets base (its URL), api (gateway or vpic) and contender_pid.
start_contender() {
  local name=$1 dir=$2 attempt
  case "${name}" in
    vin-gateway)
      # Defaults (SQLite cache, 7 s budget, 20 s cooldown, the offline vPIC snapshot when
      # scripts/install-deps.sh installed it) but no per-client rate limit: the load comes from
      # one address standing for many users.
      local offline=none
      if [[ -f "${root}/var/vpic/vpic.lite.db" ]]; then
        offline=${root}/var/vpic/vpic.lite.db
      fi
      started_stderr=${dir}/gateway.log
      start_server vin-gateway "${gateway_bin}" --listen 127.0.0.1:0 \
        --upstream-url "http://${sim_addr}" --cache "sqlite:${dir}/cache.sqlite" \
        --offline-db "${offline}" --client-rate 0 --shutdown-grace 1s
      started_stderr=/dev/null
      base=http://${started_addr} api=gateway contender_pid=${started_pid}
      return 0
      ;;
  esac
  for ((attempt = 0; attempt < 5; attempt++)); do
    port=$(free_port)
    backup_port=$(free_port)
    mkdir -p "${dir}/tmp" "${dir}/cache"
    case "${name}" in
      nginx | unprotected)
        local template=${here}/nginx.conf.in
        [[ "${name}" == unprotected ]] && template=${here}/unprotected.conf.in
        fill "${template}" "${dir}/nginx.conf" "${dir}"
        nginx -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/error.log" 2>>"${dir}/stderr" &
        ;;
      haproxy)
        fill "${here}/haproxy.cfg.in" "${dir}/haproxy.cfg" "${dir}"
        local code
        for code in 502 503 504; do
          sed -e "1s/^HTTP\/1.1 503 Service Unavailable/HTTP\/1.1 ${code} $(status_text "${code}")/" \
            "${here}/unavailable.http.in" >"${dir}/${code}.http"
        done
        haproxy -db -f "${dir}/haproxy.cfg" >"${dir}/haproxy.log" 2>>"${dir}/stderr" &
        ;;
    esac
    contender_pid=$!
    pids+=("${contender_pid}")
    if wait_http "http://127.0.0.1:${port}/" "${contender_pid}"; then
      base=http://127.0.0.1:${port} api=vpic
      return 0
    fi
    stop_server "${contender_pid}"
  done
  echo "run.sh: ${name} did not start:" >&2
  cat "${dir}/stderr" >&2 2>/dev/null || true
  exit 1
}

# upstream_count NAME DIR FROM_LINE: requests the contender says it sent to vpic-sim, from its own
# log or metrics, since line FROM_LINE of its log.
upstream_count() {
  local name=$1 dir=$2 from=$3
  case "${name}" in
    vin-gateway)
      # Calls ended, and calls running (the gateway's own probe may be in flight).
      curl -fsS "${base}/metrics" |
        awk '/^vin_gateway_upstream_calls_total\{/ || /^vin_gateway_upstream_in_flight / {
               n += $2 } END {print n + 0}'
      ;;
    nginx | unprotected)
      tail -n "+$((from + 1))" "${dir}/access.log" | grep -o "${sim_addr}" | wc -l
      ;;
    haproxy)
      # Request lines start with the status; HAProxy's own notices ("Server vpic/vpic is
      # DOWN") share the log.
      tail -n "+$((from + 1))" "${dir}/haproxy.log" |
        awk '$1 ~ /^-?[0-9]+$/ && $2 == "vpic/vpic" {n++} END {print n + 0}'
      ;;
  esac
}

log_lines() {
  case "$1" in
    nginx | unprotected) wc -l <"$2/access.log" ;;
    haproxy) wc -l <"$2/haproxy.log" ;;
    *) echo 0 ;;
  esac
}

run_contender() {
  local name=$1
  local dir=${out}/${name}
  mkdir -p "${dir}"
  echo "== ${name}" >&2
  start_server vpic-sim "${sim_bin}" --listen 127.0.0.1:0 --latency 0.1 \
    --schedule "${out}/outage.toml"
  sim_addr=${started_addr}
  local sim=http://${sim_addr}
  # Healthy while the caches warm, whatever the schedule says at this moment.
  curl -fsS -o /dev/null -X POST "${sim}/__control/faults" -d '{"mode":"ok","latency_ms":100}'
  start_contender "${name}" "${dir}"
  local from before=0
  from=$(log_lines "${name}" "${dir}")
  "${py}" "${here}/compare.py" warm --base "${base}" --api "${api}" --vins "${out}/vins.txt"
  # The proxies write a request's log line after it ends: wait for the warm-up's.
  local i
  if [[ "${api}" == vpic ]]; then
    for ((i = 0; i < 50 && $(log_lines "${name}" "${dir}") < from + hot; i++)); do
      sleep 0.1
    done
  fi
  from=$(log_lines "${name}" "${dir}")
  if [[ "${name}" == vin-gateway ]]; then
    before=$(upstream_count "${name}" "${dir}" 0)
  fi
  # The load resets vpic-sim as it starts: the schedule starts over, its counters at zero.
  "${py}" "${here}/compare.py" load --base "${base}" --api "${api}" --sim "${sim}" \
    --vins "${out}/vins.txt" --rate "${rate}" --scale "${scale}" --timeout "${client_timeout}" \
    --out "${dir}/samples.csv" --sim-out "${dir}/sim.csv"
  local stats sim_count contender_count
  if [[ "${name}" == vin-gateway ]]; then
    # The gateway probes vPIC on its own: let a probe in flight end (its budget is 2 s) so that
    # both counts are read between probes.
    for ((i = 0; i < 100; i++)); do
      [[ $(curl -fsS "${base}/metrics" |
        awk '/^vin_gateway_upstream_in_flight / {print $2 + 0}') == 0 ]] && break
      sleep 0.05
    done
  fi
  stats=$(curl -fsS "${sim}/__control/stats")
  # HAProxy's health checks use the Extended endpoint: load on vPIC, but not client requests.
  sim_count=$(echo "${stats}" | "${py}" -c \
    'import json,sys; s=json.load(sys.stdin); print(s["requests_total"] - s["requests"].get("DecodeVinValuesExtended", 0))')
  contender_count=$(($(upstream_count "${name}" "${dir}" "${from}") - before))
  echo "${stats}" >"${dir}/sim-stats.json"
  printf '{"sim_count": %s, "contender_count": %s}\n' "${sim_count}" "${contender_count}" \
    >"${dir}/upstream_check.json"
  stop_all
}

for name in "${contenders[@]}"; do
  run_contender "${name}"
done

commit=$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
"${py}" - "${out}/meta.json" <<EOF
import json, sys
json.dump({"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "commit": "${commit}", "mode": "${mode}",
           "scale": ${scale}, "rate_per_s": ${rate}, "client_timeout_s": ${client_timeout},
           "machine": "$(nproc) cores, ${cpu}",
           "nginx": "$(nginx -v 2>&1 | sed 's/.*nginx\///')",
           "haproxy": "$(haproxy -v | head -1 | awk '{print $3}')"},
          open(sys.argv[1], "w"), indent=2)
EOF
"${py}" "${here}/compare.py" analyze --dir "${out}"
echo "results: ${out}/results.json, ${out}/overlay.svg, ${out}/<contender>.svg" >&2
