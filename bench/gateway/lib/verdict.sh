# shellcheck shell=bash
# Verdicts of the gateway benchmark and the summary that shows them. Sourced by
# bench/gateway/run.sh. Each scenario calls judge once per target; write_summary turns the
# verdicts and results.tsv (lib/measure.sh) into $out/summary.md.

verdicts=()
fails=0
judge() {  # judge TARGET MEASURED PASS(0|1) [info]: an info row is shown, not counted
  local verdict=PASS
  if [[ "$3" != 1 ]]; then
    verdict=FAIL
  fi
  if [[ "${4:-}" == info ]]; then
    verdict="(${verdict}, info)"
  elif [[ "${verdict}" == FAIL ]]; then
    fails=$((fails + 1))
  fi
  verdicts+=("$1"$'\t'"$2"$'\t'"${verdict}")
}

less_than() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b) ? 1 : 0 }'; }

# write_summary: $out/summary.md, the verdict table then one row per wrk run (the memory
# scenario's runs folded into one row). Reads quick, started_at, load_start, load_end,
# wrk_threads, warm_s and run_s.
write_summary() {
  local row target measured verdict fastest busy_runs slow_runs
  {
    echo "# vin-gateway benchmark $( ((quick)) && echo '(quick, not a measurement) ')${started_at}"
    echo
    echo "- machine: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "- load average: ${load_start} at the start, ${load_end} at the end"
    echo "- wrk $(wrk -v 2>&1 | head -n 1 | awk '{ print $2 }')," \
      "nginx $(nginx -v 2>&1 | sed 's|.*/||')," \
      "wrk -t${wrk_threads}, ${run_s}s runs after ${warm_s}s warm-ups"
    echo
    echo "| target | measured | verdict |"
    echo "|---|---|---|"
    for row in "${verdicts[@]}"; do
      IFS=$'\t' read -r target measured verdict <<<"${row}"
      echo "| ${target} | ${measured} | ${verdict} |"
    done
    echo
    echo "CPU in cores (2 = the whole machine): the server's, wrk's, and everything else's (other)."
    echo "vCPU: the speed of the slowest CPU around the run (a fixed loop timed on each CPU before"
    echo "and after), relative to the fastest time of this whole benchmark; below ~80% the host was"
    echo "busy."
    echo
    echo "| run | requests | req/s | p50 ms | p99 ms | non-2xx | socket errors | server | wrk | other | vCPU |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    fastest=$(awk -F'\t' 'NR > 1 && $12 > 0 && (m == "" || $12 < m) { m = $12 } END { print m + 0 }' \
      "${results}")
    tail -n +2 "${results}" | grep -v '^s4-mix' | awk -F'\t' -v OFS=' | ' -v f="${fastest}" \
      '{ v = ($12 > 0) ? sprintf("%.0f%%", 100 * f / $12) : "-"
         print "| " $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, v " |" }'
    # The memory scenario's runs (none when --scenario left it out): one row for all of them.
    awk -F'\t' -v f="${fastest}" '$1 ~ /^s4-mix/ {
        c++
        n += $2; t += $2 / $3; s += $8 * $2 / $3; w += $9 * $2 / $3; o += $10 * $2 / $3
        if ($12 > slow) { slow = $12 }
      }
      END {
        if (c == 0) { exit }
        v = (slow > 0) ? sprintf("%.0f%%", 100 * f / slow) : "-"
        printf "| s4-mix (%d runs) | %d | %.0f | | | | | %.2f | %.2f | %.2f | %s |\n", c, n, n / t,
          s / t, w / t, o / t, v
      }' "${results}"
    busy_runs=$(awk -F'\t' 'NR > 1 && $10 > 0.15 { printf "%s%s (%s)", sep, $1, $10; sep = ", " }' \
      "${results}")
    if [[ -n "${busy_runs}" ]]; then
      echo
      echo "Other processes used more than 0.15 cores during: ${busy_runs}." \
        "Re-run on a quiet machine."
    fi
    slow_runs=$(awk -F'\t' -v f="${fastest}" 'NR > 1 && $12 > 0 && 100 * f / $12 < 80 {
        printf "%s%s (%.0f%%)", sep, $1, 100 * f / $12; sep = ", " }' "${results}")
    if [[ -n "${slow_runs}" ]]; then
      echo
      echo "A vCPU ran below 80% of its best speed around: ${slow_runs}."
    fi
  } >"${out}/summary.md"
}
