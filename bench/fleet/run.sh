#!/usr/bin/env bash
# The gateway's cost of fleet mode on its hot path: fresh cache hits through one vin-gateway with
# `--fleet redis:// --cache redis://` against the same gateway alone (`--cache memory`), with the
# same wrk settings, in interleaved runs (memory, fleet, memory, fleet, ...: a drift of the
# machine's load hits both alike). Prints each run's req/s and p99, the medians and their ratio,
# then counts Redis round trips: INFO commandstats before and after a fleet run must differ by
# nothing but the INFO itself (0 Redis commands per fresh hit: the in-process hot front serves
# them, docs/fleet.md "The shared cache").
#
#   bench/fleet/run.sh [BIN_DIR] [--quick]
#
# BIN_DIR holds vin-gateway and vpic-sim (default build/release/bin). Environment: ROUNDS
# (pairs of runs, default 3), DURATION (per run, default 10s), CONNECTIONS (default 32), THREADS
# (wrk threads, default 2), VINS_COUNT (distinct VINs, default 64). --quick: 1 round of 3 s. Raw
# wrk outputs go to build/bench-fleet/. Everything runs on 127.0.0.1; every process started here
# is stopped on exit. Exits 1 when a Redis command was counted per hit or a run had errors.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="${repo}/bench/gateway"  # lib/vins.sh finds print_vins.lua there
cd "${repo}"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
# shellcheck source=bench/gateway/lib/measure.sh
source bench/gateway/lib/measure.sh  # parse_wrk
# shellcheck source=bench/gateway/lib/vins.sh
source bench/gateway/lib/vins.sh  # vins (reads $here: the directory of print_vins.lua)

bin_dir="build/release/bin"
rounds="${ROUNDS:-3}"
duration="${DURATION:-10s}"
for arg in "$@"; do
  case "${arg}" in
    --quick) rounds=1 duration=3s ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) bin_dir="${arg}" ;;
  esac
done
connections="${CONNECTIONS:-32}"
threads="${THREADS:-2}"
export VINS_COUNT="${VINS_COUNT:-64}"
export LUA_PATH="${repo}/bench/gateway/?.lua;;"
for tool in wrk redis-server redis-cli curl python3; do
  if ! command -v "${tool}" >/dev/null; then
    echo "bench-fleet: error: ${tool} not found" >&2
    exit 1
  fi
done
for program in vin-gateway vpic-sim; do
  if [ ! -x "${bin_dir}/${program}" ]; then
    echo "bench-fleet: error: ${bin_dir}/${program} was not built" >&2
    exit 1
  fi
done

out="build/bench-fleet"
work="$(mktemp -d "${TMPDIR:-/tmp}/fusebox-bench-fleet.XXXXXX")"
# shellcheck disable=SC2317  # called by stop_all (scripts/lib/servers.sh) on exit
servers_cleanup() { rm -rf "${work}"; }
servers_begin bench-fleet "${out}"

start_redis "${work}"
redis_port="${redis_url##*:}"

start_server vpic-sim "${bin_dir}/vpic-sim" --listen 127.0.0.1:0
upstream="${started_url}"
common=(--listen 127.0.0.1:0 --upstream-url "${upstream}" --client-rate 0 --offline-db none)
start_server gateway-memory "${bin_dir}/vin-gateway" "${common[@]}" --cache memory
memory_url="${started_url}"
start_server gateway-fleet "${bin_dir}/vin-gateway" "${common[@]}" --cache "${redis_url}" \
  --fleet "${redis_url}" --instance-id bench
fleet_url="${started_url}"
for _ in $(seq 100); do
  if curl -s "${fleet_url}/status" | grep -q '"connected":true'; then break; fi
  sleep 0.05
done

# Warm both: every VIN decoded once (live), then once more (a fresh hit from the hot front).
# (The VINs come from the generator hits.lua uses, through wrk's own LuaJIT: lib/vins.sh.)
mapfile -t vins < <(vins FL 0 "${VINS_COUNT}")
for url in "${memory_url}" "${fleet_url}"; do
  for pass in 1 2; do
    for vin in "${vins[@]}"; do
      source=$(curl -sS --max-time 10 "${url}/api/v1/vin/${vin}" | grep -o '"source":"[a-z-]*"')
      if [ "${pass}" = 2 ] && [ "${source}" != '"source":"cache"' ]; then
        echo "bench-fleet: error: ${url} did not serve ${vin} from its cache (${source})" >&2
        exit 1
      fi
    done
  done
done

echo "==> bench-fleet: ${rounds} round(s) of wrk -t${threads} -c${connections} -d${duration}" \
  "--latency over ${VINS_COUNT} cached VINs; memory: ${memory_url}, fleet: ${fleet_url}" \
  "(Redis ${redis_url})"
printf '%-8s %-6s %10s %9s %8s\n' round setup req/s p99_ms errors
memory_rps=() fleet_rps=() memory_p99=() fleet_p99=()
failed=0
for round in $(seq "${rounds}"); do
  for setup in memory fleet; do
    url="${memory_url}"
    [ "${setup}" = fleet ] && url="${fleet_url}"
    file="${out}/${setup}-${round}.txt"
    wrk -t"${threads}" -c"${connections}" -d"${duration}" --latency -s bench/fleet/hits.lua \
      "${url}" >"${file}"
    read -r rps _p50 p99 _requests non2xx errors < <(parse_wrk "${file}")
    printf '%-8s %-6s %10s %9s %8s\n' "${round}" "${setup}" "${rps}" "${p99}" \
      "$((non2xx + errors))"
    if [ "$((non2xx + errors))" -gt 0 ]; then failed=1; fi
    if [ "${setup}" = fleet ]; then
      fleet_rps+=("${rps}") fleet_p99+=("${p99}")
    else
      memory_rps+=("${rps}") memory_p99+=("${p99}")
    fi
  done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
m_rps=$(median "${memory_rps[@]}") f_rps=$(median "${fleet_rps[@]}")
m_p99=$(median "${memory_p99[@]}") f_p99=$(median "${fleet_p99[@]}")
echo
printf 'median   memory %10s %9s\n' "${m_rps}" "${m_p99}"
printf 'median   fleet  %10s %9s\n' "${f_rps}" "${f_p99}"
awk -v f="${f_rps}" -v m="${m_rps}" -v fp="${f_p99}" -v mp="${m_p99}" 'BEGIN {
  printf "ratio    fleet/memory: req/s %.3f, p99 %.3f\n", f / m, (mp > 0 ? fp / mp : 0) }'

# Redis round trips per fresh hit: every command Redis ran, from INFO commandstats.
redis_calls() {
  redis-cli -p "${redis_port}" INFO commandstats |
    awk -F'[:=,]' '/^cmdstat_/ { total += $3 } END { print total + 0 }'
}
before=$(redis_calls)
file="${out}/fleet-commandstats.txt"
wrk -t"${threads}" -c"${connections}" -d3s --latency -s bench/fleet/hits.lua "${fleet_url}" >"${file}"
read -r _rps _p50 _p99 requests _non2xx _errors < <(parse_wrk "${file}")
after=$(redis_calls)
# The second INFO counts the first one: one command that was not the gateway's.
commands=$((after - before - 1))
echo "redis    ${commands} command(s) for ${requests} fresh hits through the fleet gateway" \
  "(INFO commandstats before/after)"
if [ "${commands}" -ne 0 ]; then
  echo "bench-fleet: FAIL: fresh hits must not reach Redis" >&2
  redis-cli -p "${redis_port}" INFO commandstats >&2
  failed=1
fi
exit "${failed}"
