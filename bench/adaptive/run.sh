#!/usr/bin/env bash
# The gateway's concurrency limits side by side against a saturated upstream: vpic-sim in its
# `queue` fault (C decodes served at once, 50 ms each, the others waiting their turn) at several
# capacities C, and vin-gateway in front of it under a closed loop of 128 connections, once with
# each fixed --max-in-flight of a sweep and once with --max-in-flight auto (the adaptive limit),
# no gateway setting changed between capacities. docs/benchmarks.md ("The concurrency limit
# against a saturated upstream") explains the targets and shows a run.
#
#   bench/adaptive/run.sh [BIN_DIR] [--quick] [--capacities LIST] [--limits LIST]
#
# BIN_DIR holds vin-gateway and vpic-sim (default build/release/bin). A whole run takes about ten
# minutes. --quick shortens every run and sweeps fewer limits (a smoke run of under a minute;
# its numbers are not the measurement).
# --capacities and --limits replace the sweeps (comma separated; a limit is a number or `auto`).
# A vin-gateway without `--max-in-flight auto` runs the fixed limits only, and says so. Raw wrk
# outputs, samples, results.tsv and summary.md go to build/bench-adaptive/. Everything runs on
# 127.0.0.1, bounded in time, and every process started here is stopped on exit.
#
# Measured per capacity and limit, over one run:
#   goodput   decodes answered 200 from a live upstream call, per second. Every request asks for a
#             VIN no earlier request asked for (live.lua), the cache is in memory and new with
#             each gateway, and there is no offline snapshot: an answer that is no live decode
#             (an OVERLOADED refusal, a 504) is never a 200, and a 200 that is not `"source":
#             "live"` would be counted apart.
#   p50, p99  latency of those decodes alone, as the client saw it (live.lua); wrk's own
#             distribution, in results.tsv, covers every answer, the instant refusals included.
#   refused   answers per second that were not live decodes (OVERLOADED 503 at a full limit).
#   queue     calls waiting in vpic-sim's queue: the median of samples taken while wrk runs
#             (about one a second: a pause of 0.5 s, then /metrics and vpic-sim's stats).
#   limit     vin_gateway_concurrency_limit from /metrics, min/median/max of the same samples
#             (a fixed limit reports itself; auto, where it moved, with the median of its
#             no-load latency estimate, vin_gateway_no_load_latency_seconds).
# Targets, at each capacity, for auto against the best fixed limit there (among the fixed limits
# within 5% of the highest fixed goodput, the one with the lowest p99): goodput >= 90% of its
# goodput and p99 <= 1.5x its p99. The default fixed limit (16) is set beside them.
#
# The gateway's settings, the same in every run: --cache memory, --offline-db none,
# --client-rate 0 (lib/procs.sh), everything else its default: auto between --max-in-flight-min
# 3 and --max-in-flight-max 256, from 16; no --throttle. In particular --call-timeout
# (7 s), --slow-call-duration (3 s, counted while in flight) and the breaker: the deepest queue
# the sweep builds (128 calls at capacity 4) waits 128 / 4 x 50 ms = 1.6 s, under both, so
# neither a timeout nor the breaker takes part (each run checks the breaker made no transition).
# --answer-deadline (2 s) applies only to a decode with a stale or offline copy to give, and
# there is none. BENCH_GATEWAY_FLAGS (env) adds flags to every gateway, for experiments.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../.." && pwd)
gateway_lib=${repo}/bench/gateway/lib
# shellcheck source=scripts/lib/await_listening.sh
source "${repo}/scripts/lib/await_listening.sh"
# shellcheck source=bench/gateway/lib/procs.sh
source "${gateway_lib}/procs.sh"
# shellcheck source=bench/gateway/lib/measure.sh
source "${gateway_lib}/measure.sh"
# shellcheck source=bench/gateway/lib/control.sh
source "${gateway_lib}/control.sh"

bin_dir=""
quick=0
capacities=""
limits=""
need_value() {
  if (($2 < 2)); then
    echo "run.sh: $1 needs a comma-separated list" >&2
    exit 2
  fi
}
while (($# > 0)); do
  case "$1" in
    --quick) quick=1 ;;
    --capacities)
      need_value "$1" $#
      capacities=$2
      shift
      ;;
    --limits)
      need_value "$1" $#
      limits=$2
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*)
      echo "run.sh: unknown option $1" >&2
      exit 2
      ;;
    *) bin_dir=$1 ;;
  esac
  shift
done
if ((quick)); then
  capacities=${capacities:-4,16,64}
  limits=${limits:-4,16,auto}
else
  capacities=${capacities:-4,16,64}
  limits=${limits:-2,4,8,16,32,64,128,auto}
fi
if [[ ! "${capacities}" =~ ^[0-9]+(,[0-9]+)*$ ]]; then
  echo "run.sh: --capacities takes numbers, comma separated; got '${capacities}'" >&2
  exit 2
fi
if [[ ! "${limits}" =~ ^([0-9]+|auto)(,([0-9]+|auto))*$ ]]; then
  echo "run.sh: --limits takes numbers or auto, comma separated; got '${limits}'" >&2
  exit 2
fi
IFS=, read -r -a capacity_list <<<"${capacities}"
IFS=, read -r -a limit_list <<<"${limits}"

bin_dir=${bin_dir:-${repo}/build/release/bin}
gateway_bin=${bin_dir}/vin-gateway
sim_bin=${bin_dir}/vpic-sim
out=${repo}/build/bench-adaptive

for tool in wrk curl awk taskset pgrep; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "run.sh: ${tool} not found (Debian: apt-get install wrk curl util-linux procps)" >&2
    exit 2
  fi
done
for binary in "${gateway_bin}" "${sim_bin}"; do
  if [[ ! -x "${binary}" ]]; then
    echo "run.sh: ${binary} not found; build it first (cmake --build --preset release)" >&2
    exit 2
  fi
done
# (The help read whole first: grep -q ending the pipe early would fail it under pipefail.)
if ! grep -q -- '--queue-limit' <<<"$("${sim_bin}" --help)"; then
  echo "run.sh: ${sim_bin} has no queue fault; build a newer vpic-sim" >&2
  exit 2
fi
# The adaptive limit comes with its bounds' flags.
auto_supported=0
if grep -q -- '--max-in-flight-min' <<<"$("${gateway_bin}" --help)"; then
  auto_supported=1
fi

# --- settings ---------------------------------------------------------------------------------
# The upstream: each decode served for 50 ms once it has a server, no bound on the queue.
service_ms=50
# The load: a closed loop (each connection sends its next request as soon as its answer is in)
# of 128 connections, above every capacity and every fixed limit but the largest. wrk's timeout
# is far above any answer here, so that no slow answer is dropped from the counts.
wrk_threads=2
conns=128
wrk_timeout=10s
if ((quick)); then
  warm_s=1
  auto_warm_s=2
  run_s=2
else
  # A fixed limit needs no warm-up but a second to fill the upstream's queue. The adaptive one
  # starts at 16 and moves a step per 1-s sample window; it takes its first window's mean for the
  # no-load latency (under this load, a queued one where the capacity is below 16) and measures
  # it afresh, pinned to its minimum for a window, a minute later. Its warm-up spans that and
  # the windows after it, so that the run measures the limit where it settles. The samples of
  # every warm-up go to the output too (c<C>-l<L>-warm.samples.tsv), to show where it went.
  warm_s=1
  auto_warm_s=${BENCH_AUTO_WARM_S:-90}
  run_s=10
fi
sample_s=0.5
export LUA_PATH="${here}/?.lua;${repo}/bench/gateway/?.lua;;"

# --- helpers ----------------------------------------------------------------------------------
# start_sim CAPACITY: a vpic-sim whose startup fault is the queue; sets sim_addr and sim_pid.
start_sim() {
  start_server "vpic-sim-$1" "${sim_bin}" --listen 127.0.0.1:0 --mode queue --capacity "$1" \
    --latency "${service_ms}ms"
  sim_pid=${started_pid}
  sim_addr=${started_addr}
}

sim_ok() {  # decodes vpic-sim has served (its `ok` count)
  curl -fsS --max-time 5 "http://${sim_addr}/__control/stats" | grep -o '"ok": *[0-9]*' |
    head -n 1 | grep -o '[0-9]*$'
}

# sim_drained: waits (at most 10 s) until vpic-sim has nothing in flight, the previous gateway's
# calls answered or abandoned.
sim_drained() {
  local i
  for ((i = 0; i < 100; i++)); do
    if [[ "$(sim_stat in_flight)" == 0 ]]; then
      return 0
    fi
    sleep 0.1
  done
  echo "run.sh: vpic-sim still has calls in flight 10 s after the gateway stopped" >&2
  return 1
}

# sampler_start FILE: every $sample_s, one row "epoch_seconds limit gateway_in_flight
# sim_queued no_load_ms" (the limit and the adaptive limit's no-load latency empty when the
# gateway reports none) into FILE, in the background; sets sampler_pid.
sampler_start() {
  local file=$1
  (
    local metrics limit inflight queued no_load
    while :; do
      metrics=$(curl -fsS --max-time 2 "http://${gateway_addr}/metrics" 2>/dev/null || true)
      limit=$(awk '$1 ~ /^vin_gateway_concurrency_limit([{]|$)/ { print $2; exit }' \
        <<<"${metrics}")
      inflight=$(awk '$1 == "vin_gateway_upstream_in_flight" { print $2; exit }' <<<"${metrics}")
      no_load=$(awk '$1 == "vin_gateway_no_load_latency_seconds" { printf "%.1f", 1000 * $2; exit }' \
        <<<"${metrics}")
      queued=$(sim_stat queued 2>/dev/null || true)
      printf '%s\t%s\t%s\t%s\t%s\n' "$(date +%s.%N)" "${limit}" "${inflight}" "${queued}" \
        "${no_load}"
      sleep "${sample_s}"
    done
  ) >"${file}" &
  sampler_pid=$!
  pids+=("${sampler_pid}")
}

# column_stats FILE COLUMN [FROM TO]: "min median max" of a samples column, of the samples taken
# from FROM to TO (epoch seconds) when given ("- - -" when there are none).
column_stats() {
  awk -F'\t' -v c="$2" -v a="${3:-0}" -v b="${4:-1e12}" '$c != "" && $1 >= a && $1 <= b {
      print $c
    }' "$1" | sort -n | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "- - -"; exit }
      printf "%s %s %s\n", v[1], v[int((NR + 1) / 2)], v[NR]
    }'
}

live_field() {  # live_field FILE KEY: a figure of live.lua's output
  awk -v k="$2" '$1 == k { print $2; exit }' "$1"
}

# run_one CAPACITY LIMIT: one gateway with that limit, warmed up, then measured; appends a row
# to $table.
run_one() {
  local capacity=$1 limit=$2
  local name="c${capacity}-l${limit}" warm=${warm_s}
  if [[ "${limit}" == auto ]]; then
    warm=${auto_warm_s}
  fi
  # shellcheck disable=SC2086  # BENCH_GATEWAY_FLAGS is a list of flags
  start_gateway "${name}" --cache memory --max-in-flight "${limit}" ${BENCH_GATEWAY_FLAGS:-}
  local transitions_before
  transitions_before=$(metric "${gateway_addr}" 'fusebox_transitions_total{breaker="vpic"}')
  local url="http://${gateway_addr}/"
  local wrk_args=(-t"${wrk_threads}" -c"${conns}" --timeout "${wrk_timeout}" -s "${here}/live.lua")

  sampler_start "${out}/${name}-warm.samples.tsv"
  BENCH_PHASE=W wrk_warm "${wrk_args[@]}" -d"${warm}s" "${url}"
  stop_server "${sampler_pid}"
  if [[ "${limit}" == auto ]]; then
    # Where the limit went during the warm-up: a sample about every 10 s (with the no-load
    # latency it went by, in ms).
    echo "  ${name} warm-up, limit at: $(awk -F'\t' '$2 != "" {
        if (t0 == "") { t0 = $1 }
        if ($1 - t0 >= next_at) {
          printf "%s%.0fs %s (%s)", sep, $1 - t0, $2, ($5 == "" ? "-" : $5); sep = ", "
          next_at += 10
        }
      }' "${out}/${name}-warm.samples.tsv")"
  fi

  # vpic-sim's own count of the decodes it served between readings just before and after the run:
  # a cross-check of the live decodes counted by live.lua (it adds the calls in flight at either
  # edge), in adaptive.tsv as sim_served.
  local served_before served_after
  served_before=$(sim_ok)
  sampler_start "${out}/${name}.samples.tsv"
  BENCH_PHASE=R BENCH_LIVE_OUT="${out}/${name}.live" wrk_run "${name}" "${gateway_pid}" \
    "${wrk_args[@]}" -d"${run_s}s" "${url}"
  stop_server "${sampler_pid}"
  served_after=$(sim_ok)
  local transitions
  transitions=$(($(metric "${gateway_addr}" 'fusebox_transitions_total{breaker="vpic"}') -
    transitions_before))
  stop_server "${gateway_pid}"
  sim_drained

  local live_file=${out}/${name}.live seconds live p50 p99 answers other limit_figures queued
  seconds=$(live_field "${live_file}" duration_s)
  live=$(live_field "${live_file}" live)
  p50=$(live_field "${live_file}" live_p50_ms)
  p99=$(live_field "${live_file}" live_p99_ms)
  answers=$(awk '$1 == "answers" { n += $4 } END { print n + 0 }' "${live_file}")
  other=$(awk '$1 == "answers" && !($2 == 200 && $3 == "live") { n += $4 } END { print n + 0 }' \
    "${live_file}")
  # The samples taken while wrk ran.
  local run_end run_start
  run_end=$(live_field "${live_file}" end_epoch)
  run_start=$(awk -v e="${run_end}" -v s="${seconds}" 'BEGIN { printf "%.3f", e - s }')
  limit_figures=$(column_stats "${out}/${name}.samples.tsv" 2 "${run_start}" "${run_end}" |
    tr ' ' /)
  queued=$(column_stats "${out}/${name}.samples.tsv" 4 "${run_start}" "${run_end}" |
    awk '{ print $2 }')
  local no_load
  no_load=$(column_stats "${out}/${name}.samples.tsv" 5 "${run_start}" "${run_end}" |
    awk '{ print $2 }')
  if [[ "${no_load}" != - ]]; then
    limit_figures="${limit_figures} (no-load ${no_load} ms)"
  fi
  # capacity limit goodput p50 p99 refused/s sim_served limit(min/med/max) queue_median
  # breaker_transitions answers
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${capacity}" "${limit}" \
    "$(awk -v n="${live}" -v s="${seconds}" 'BEGIN { printf "%.1f", n / s }')" "${p50}" "${p99}" \
    "$(awk -v n="${other}" -v s="${seconds}" 'BEGIN { printf "%.1f", n / s }')" \
    "$((served_after - served_before))" \
    "${limit_figures}" "${queued}" "${transitions}" "${answers}" >>"${table}"
  printf '  %-14s goodput %8s/s  p50 %7s ms  p99 %7s ms  refused %9s/s  limit %s  queue %s\n' \
    "${name}" "$(tail -n 1 "${table}" | cut -f3)" "${p50}" "${p99}" \
    "$(tail -n 1 "${table}" | cut -f6)" "${limit_figures}" "${queued}"
}

# --- run ----------------------------------------------------------------------------------------
procs_setup
mkdir -p "${out}"
rm -f "${out}"/*.txt "${out}"/*.tsv "${out}"/*.live "${out}"/summary.md
measure_setup
table=${out}/adaptive.tsv
printf 'capacity\tlimit\tgoodput\tp50_ms\tp99_ms\trefused_per_s\tsim_served\tlimit_min_med_max' \
  >"${table}"
printf '\tqueue_median\tbreaker_transitions\tanswers\n' >>"${table}"
admin_token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "concurrency-limit benchmark $( ((quick)) && echo '(quick) ')${started_at}," \
  "load average ${load_start}"
echo "  binaries: ${bin_dir}; output: ${out}"
echo "  capacities ${capacities}; limits ${limits}; ${conns} connections; ${service_ms} ms" \
  "service; warm-up ${warm_s}s (auto ${auto_warm_s}s), runs ${run_s}s"
if ((!auto_supported)) && [[ ",${limits}," == *",auto,"* ]]; then
  echo "  ${gateway_bin} has no --max-in-flight auto: the fixed limits only"
fi

for capacity in "${capacity_list[@]}"; do
  echo "[${SECONDS}s] capacity ${capacity}"
  start_sim "${capacity}"
  for limit in "${limit_list[@]}"; do
    if [[ "${limit}" == auto ]] && ((!auto_supported)); then
      continue
    fi
    run_one "${capacity}" "${limit}"
  done
  stop_server "${sim_pid}"
done
stop_all
echo "[${SECONDS}s] done"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/adaptive/summary.sh
source "${here}/summary.sh"
write_summary
echo
cat "${out}/summary.md"
if ((fails > 0)); then
  echo
  echo "${fails} target(s) missed."
fi
