# shellcheck shell=bash
# The verdicts and the summary of the concurrency-limit benchmark. Sourced by
# bench/adaptive/run.sh: write_summary turns its table ($table, one row per capacity and limit)
# and wrk_run's results.tsv (bench/gateway/lib/measure.sh) into $out/summary.md and sets
# `fails`, the targets missed.

# The best fixed limit at a capacity: among the fixed limits whose goodput is within
# best_goodput_band of the highest fixed goodput there, the one with the lowest p99 (the smaller
# limit on a tie). The targets for auto against it.
best_goodput_band=0.95
target_goodput=0.90
target_p99=1.5

# summary_table: the markdown table of $table with each capacity's comparisons; its last line
# is "fails N".
summary_table() {
  awk -F'\t' -v band="${best_goodput_band}" -v tg="${target_goodput}" -v tp="${target_p99}" '
    NR == 1 { next }
    {
      n++
      cap[n] = $1; lim[n] = $2; gp[n] = $3; p50[n] = $4; p99[n] = $5; ref[n] = $6
      lims[n] = $8; queue[n] = $9; trans[n] = $10
      if (!($1 in seen)) { seen[$1] = 1; caps[++ncaps] = $1 }
      if ($2 != "auto" && $3 + 0 > top[$1] + 0) { top[$1] = $3 }
    }
    END {
      for (i = 1; i <= n; i++) {
        c = cap[i]
        if (lim[i] == "auto" || gp[i] + 0 < band * top[c]) { continue }
        if (!(c in best) || p99[i] + 0 < p99[best[c]] + 0 ||
            (p99[i] + 0 == p99[best[c]] + 0 && lim[i] + 0 < lim[best[c]] + 0)) {
          best[c] = i
        }
      }
      print "| capacity | limit | goodput/s | p50 ms | p99 ms | goodput vs best fixed |" \
        " p99 vs best fixed | refused/s | upstream queue (median) | limit during the run" \
        " (min/median/max) | verdict |"
      print "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
      fails = 0
      for (k = 1; k <= ncaps; k++) {
        c = caps[k]
        for (i = 1; i <= n; i++) {
          if (cap[i] != c) { continue }
          label = lim[i]
          if ((c in best) && i == best[c]) { label = label " (best fixed)" }
          if (lim[i] == "16") { label = label " (default)" }
          g = (c in best && gp[best[c]] > 0) ? gp[i] / gp[best[c]] : 0
          p = (c in best && p99[best[c]] > 0) ? p99[i] / p99[best[c]] : 0
          verdict = ""
          if (lim[i] == "auto" && !(c in best)) {
            verdict = "no fixed limit to compare with"
          } else if (lim[i] == "auto") {
            ok_g = (g >= tg); ok_p = (p > 0 && p <= tp)
            verdict = sprintf("goodput %s, p99 %s", ok_g ? "PASS" : "FAIL", ok_p ? "PASS" : "FAIL")
            fails += !ok_g + !ok_p
          }
          if (trans[i] + 0 > 0) {
            verdict = verdict (verdict == "" ? "" : "; ") "breaker moved " trans[i] " times"
          }
          printf "| %s | %s | %.0f | %.1f | %.1f | %.0f%% | %.2fx | %.0f | %s | %s | %s |\n", c,
            label, gp[i], p50[i], p99[i], 100 * g, p, ref[i], queue[i], lims[i], verdict
        }
      }
      print "fails " fails
    }' "${table}"
}

# write_summary: $out/summary.md. Reads quick, started_at, load_start, load_end, conns,
# service_ms, warm_s, auto_warm_s, run_s, results, table and auto_supported.
write_summary() {
  local rows fastest
  rows=$(summary_table)
  # shellcheck disable=SC2034  # read by run.sh
  fails=$(tail -n 1 <<<"${rows}" | awk '{ print $2 }')
  {
    echo "# concurrency-limit benchmark $( ((quick)) && echo '(quick, not a measurement) ')${started_at}"
    echo
    echo "- machine: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "- load average: ${load_start} at the start, ${load_end} at the end"
    echo "- vpic-sim: queue fault, ${service_ms} ms per decode once served, no bound on the queue"
    echo "- wrk $(wrk -v 2>&1 | head -n 1 | awk '{ print $2 }'), -t${wrk_threads}" \
      "-c${conns} closed loop, every request a new VIN; ${run_s}s runs after ${warm_s}s" \
      "warm-ups (${auto_warm_s}s for auto)"
    if ((!auto_supported)); then
      echo "- this vin-gateway has no \`--max-in-flight auto\`: fixed limits only"
    fi
    echo
    echo "Best fixed: among the fixed limits within $(awk -v b="${best_goodput_band}" \
      'BEGIN { printf "%.0f%%", 100 * (1 - b) }') of the highest fixed goodput at that" \
      "capacity, the lowest p99. Targets for auto: goodput >= $(awk -v t="${target_goodput}" \
      'BEGIN { printf "%.0f%%", 100 * t }') of the best fixed limit's, p99 <= ${target_p99}x" \
      "its. p50 and p99: the live decodes alone."
    echo
    sed '$d' <<<"${rows}"
    echo
    # Every answer was a live decode or an OVERLOADED refusal, or this says what else came.
    local others
    others=$(awk '$1 == "answers" && !($2 == 200 && $3 == "live") &&
        !($2 == 503 && $3 == "OVERLOADED") {
          f = FILENAME; sub(/.*\//, "", f); sub(/[.]live$/, "", f)
          printf "%s%s: %s %s x %s", sep, f, $2, $3, $4; sep = "; "
        }' "${out}"/*.live)
    if [[ -n "${others}" ]]; then
      echo "Answers other than live decodes and OVERLOADED refusals: ${others}."
    else
      echo "Every answer was a live decode (200, \"source\":\"live\") or an OVERLOADED refusal."
    fi
    echo
    echo "Every run (wrk's figures cover every answer, refusals included; CPU in cores, 2 ="
    echo "the whole machine; vCPU: the slowest CPU's speed around the run against the fastest of"
    echo "the benchmark, below ~80% the host was busy):"
    echo
    echo "| run | answers | answers/s | p99 of all, ms | gateway | wrk | other | vCPU |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    fastest=$(awk -F'\t' 'NR > 1 && $12 > 0 && (m == "" || $12 < m) { m = $12 } END { print m + 0 }' \
      "${results}")
    tail -n +2 "${results}" | awk -F'\t' -v OFS=' | ' -v f="${fastest}" \
      '{ v = ($12 > 0) ? sprintf("%.0f%%", 100 * f / $12) : "-"
         print "| " $1, $2, $3, $5, $8, $9, $10, v " |" }'
  } >"${out}/summary.md"
}
