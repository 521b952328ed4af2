# shellcheck shell=bash
# Measuring for the gateway benchmark: wrk runs recorded in $out/results.tsv with the CPU used
# around them, wrk output parsing, and the gateway's RSS sampled over time. Sourced by
# bench/gateway/run.sh; reads the globals out, tmp, quick and pids (lib/procs.sh).

# measure_setup: $results with its header row ($out must exist).
measure_setup() {
  clk_tck=$(getconf CLK_TCK)
  results=${out}/results.tsv
  printf '%s\t' name requests rps p50_ms p99_ms non_2xx socket_errors server_cores wrk_cores \
    other_cores steal_cores >"${results}"
  printf 'canary_ms\n' >>"${results}"
}

# CPU ticks used so far by the given processes and their children (nginx's workers).
cpu_ticks() {
  local all=() pid
  for pid in "$@"; do
    all+=("${pid}")
    while read -r child; do
      all+=("${child}")
    done < <(pgrep -P "${pid}" || true)
  done
  local total=0 ticks
  for pid in "${all[@]}"; do
    # Fields after the command name, which is in parentheses: utime and stime are 12 and 13.
    ticks=$(sed 's/^.*) //' "/proc/${pid}/stat" 2>/dev/null | awk '{print $12 + $13}') || ticks=0
    total=$((total + ${ticks:-0}))
  done
  echo "${total}"
}

# rps p50_ms p99_ms requests non_2xx socket_errors, from one wrk --latency output.
parse_wrk() {
  awk '
    function ms(v) {
      if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
      if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
      if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 }
      if (v ~ /m$/) { sub(/m$/, "", v); return v * 60000 }
      return v + 0
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /Requests\/sec:/ { rps = $2 }
    / requests in / { requests = $1 }
    /Non-2xx or 3xx responses:/ { non2xx = $5 }
    /Socket errors:/ { errors = ($4 + 0) + ($6 + 0) + ($8 + 0) + ($10 + 0) }
    END { printf "%.0f %.3f %.3f %d %d %d\n", rps, p50, p99, requests, non2xx, errors }
  ' "$1"
}

# Busy and steal ticks of the whole machine (/proc/stat's cpu line: user nice system idle iowait
# irq softirq steal).
machine_ticks() {
  awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat
}

# children_cpu VAR: CPU seconds of this shell's finished children into VAR. `times` must run in
# this shell (not in a subshell such as $(...), whose child times start at zero), hence the file.
children_cpu() {
  times >"${tmp}/times"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    for (i = 1; i <= 2; i++) { split($i, a, "m"); sub(/s$/, "", a[2]); t += a[1] * 60 + a[2] }
    printf "%.3f\n", t
  }' "${tmp}/times")"
}

# canary_ms: milliseconds of a fixed CPU-bound loop on the slowest CPU now. This VM's vCPUs slow
# down now and then (the host is shared; the guest sees no steal time), which changes every
# number here by tens of percent; sampling the loop before and after each run makes it visible.
canary_ms() {
  local cpu slowest=0 t0 t1 ms
  if ((quick)); then
    echo 0  # not measured: a smoke run has no numbers to vouch for
    return 0
  fi
  for ((cpu = 0; cpu < $(nproc); cpu++)); do
    t0=$(date +%s%N)
    taskset -c "${cpu}" awk 'BEGIN { for (i = 0; i < 2000000; i++) s += i }'
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    if ((ms > slowest)); then
      slowest=${ms}
    fi
  done
  echo "${slowest}"
}

# Runs wrk once for the record: wrk_run NAME SERVER_PIDS(space separated) WRK_ARGS...
# Appends a row to results.tsv and sets the last_* figures (last_rps, last_p50, last_p99,
# last_requests, last_non2xx, last_errors, last_cpu). Besides wrk's figures it records the cores
# used by the server, by wrk, and by everything else on the machine ("other": another build, a
# browser...), so a run disturbed by a foreign process shows it. BENCH_PACE_MS and BENCH_PLANT
# (env, read by the wrk scripts) are written into the output's header.
wrk_run() {
  local name=$1 server_pids=$2
  shift 2
  local file=${out}/${name}.txt
  local before after start end wrk_before wrk_after busy_before steal_before busy_after steal_after
  local canary_before canary_after wrk_cpu other_cpu steal_cpu
  canary_before=$(canary_ms)
  # shellcheck disable=SC2086  # server_pids is a list
  before=$(cpu_ticks ${server_pids})
  read -r busy_before steal_before < <(machine_ticks)
  children_cpu wrk_before
  start=$(date +%s.%N)
  {
    echo "# wrk --latency $*"
    echo "# BENCH_PACE_MS=${BENCH_PACE_MS:-0} BENCH_PLANT=${BENCH_PLANT:-}" \
      "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    wrk --latency "$@"
  } >"${file}"
  end=$(date +%s.%N)
  children_cpu wrk_after
  read -r busy_after steal_after < <(machine_ticks)
  # shellcheck disable=SC2086
  after=$(cpu_ticks ${server_pids})
  canary_after=$(canary_ms)
  read -r last_rps last_p50 last_p99 last_requests last_non2xx last_errors < <(parse_wrk "${file}")
  read -r last_cpu wrk_cpu other_cpu steal_cpu < <(awk -v hz="${clk_tck}" -v a="${start}" \
    -v b="${end}" -v server=$((after - before)) -v busy=$((busy_after - busy_before)) \
    -v steal=$((steal_after - steal_before)) -v w0="${wrk_before}" -v w1="${wrk_after}" 'BEGIN {
      t = b - a; s = server / hz / t; w = (w1 - w0) / t; o = busy / hz / t - s - w
      printf "%.2f %.2f %.2f %.2f\n", s, w, (o < 0 ? 0 : o), steal / hz / t
    }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${name}" "${last_requests}" \
    "${last_rps}" "${last_p50}" "${last_p99}" "${last_non2xx}" "${last_errors}" "${last_cpu}" \
    "${wrk_cpu}" "${other_cpu}" "${steal_cpu}" \
    "$((canary_before > canary_after ? canary_before : canary_after))" >>"${results}"
  printf '  %-30s %7s req/s  p50 %7s ms  p99 %7s ms  non-2xx %-7s errors %-3s' \
    "${name}" "${last_rps}" "${last_p50}" "${last_p99}" "${last_non2xx}" "${last_errors}"
  printf ' CPU: server %s wrk %s other %s\n' "${last_cpu}" "${wrk_cpu}" "${other_cpu}"
}

# A warm-up run whose output is thrown away (connections, caches, page faults, CPU frequency).
wrk_warm() {
  wrk "$@" >/dev/null
}

# rss_sampler_start PID FILE: samples PID's VmRSS (KiB) every second into FILE ("epoch<TAB>KiB"
# rows) in the background until PID exits; sets rss_sampler_pid (also in pids).
rss_sampler_start() {
  local pid=$1
  (
    while kill -0 "${pid}" 2>/dev/null; do
      printf '%s\t%s\n' "$(date +%s.%N)" \
        "$(awk '/^VmRSS:/ { print $2 }' "/proc/${pid}/status" 2>/dev/null)"
      sleep 1
    done
  ) >"$2" &
  rss_sampler_pid=$!
  pids+=("${rss_sampler_pid}")
}

# rss_figures FILE START END: "start mid end max samples" of the samples taken from START (epoch
# seconds) on. start: the first sample at or after START; mid: the first at or after the middle of
# START..END; end: the last sample.
rss_figures() {
  awk -v a="$2" -v b="$3" '
    $2 != "" && $1 >= a {
      if (start == "") { start = $2 }
      if (mid == "" && $1 >= (a + b) / 2) { mid = $2 }
      if ($2 > max) { max = $2 }
      end = $2
      n++
    }
    END { print start, mid, end, max, n }' "$1"
}
