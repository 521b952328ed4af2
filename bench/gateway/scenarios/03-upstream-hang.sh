# shellcheck shell=bash
# Scenario 3, upstream hangs: vpic-sim hangs every call and hung_calls uncached requests keep
# that many upstream calls in flight (a background wrk, one connection per call) while the
# measured wrk asks for a cached VIN. A call timeout far beyond the phase keeps every hung call
# in flight until the end (the breaker counts a timeout only when it fires, so it stays closed);
# the bulkhead admits them all.
#
# Verdicts: the hung calls stay in flight throughout (vpic-sim began exactly hung_calls hangs,
# all still open at the end); cached-VIN p99 < 5 ms on the saturating run with no non-2xx (the
# paced run as information).

scenario_upstream_hang() {
  echo "[${SECONDS}s] 3. upstream hangs, ${hung_calls} hung calls in flight, cached VIN," \
    "wrk -t${wrk_threads} -c${conns} -d${run_s}s"
  local url baseline_p99 background_s background_pid i hung_before hung_after hang_total
  local upstream_before upstream_after hang_p99 hang_non2xx hang_paced_p99 hang_paced_rps measured
  start_gateway gateway-s3 --cache "$(sqlite_cache s3)" --threads "${load_threads}" \
    --call-timeout 120s --max-in-flight "${hung_calls}"
  decode "${vin}" >/dev/null
  url=http://${gateway_addr}/api/v1/vin/${vin}
  wrk_warm -t"${wrk_threads}" -c"${conns}" -d"${warm_s}s" "${url}"
  wrk_run s3-gateway-cached-baseline "${gateway_pid}" -t"${wrk_threads}" -c"${conns}" \
    -d"${run_s}s" "${url}"
  baseline_p99=${last_p99}
  sim_reset
  sim_fault '{"mode":"hang"}'
  # The background: one connection per hung call, each sending one uncached VIN and waiting
  # (wrk sends the next request on a connection only after the answer, which never comes).
  background_s=$((4 * warm_s + 2 * run_s + 30))
  BENCH_PLANT=FH wrk -t1 -c"${hung_calls}" -d"${background_s}s" \
    --timeout "$((background_s + 10))s" -s "${here}/vary_uncached.lua" \
    "http://${gateway_addr}/" >"${out}/s3-background.txt" 2>&1 &
  background_pid=$!
  pids+=("${background_pid}")
  for ((i = 0; i < 100; i++)); do
    if [[ "$(sim_stat in_flight)" -ge "${hung_calls}" ]]; then
      break
    fi
    sleep 0.1
  done
  hung_before=$(sim_stat in_flight)
  upstream_before=$(metric "${gateway_addr}" vin_gateway_upstream_in_flight)
  curl -fsS --max-time 5 "http://${gateway_addr}/status" >"${out}/s3-status-before.json"
  wrk_warm -t"${wrk_threads}" -c"${conns}" -d"${warm_s}s" "${url}"
  wrk_run s3-gateway-cached-hang "${gateway_pid}" -t"${wrk_threads}" -c"${conns}" \
    -d"${run_s}s" "${url}"
  hang_p99=${last_p99}
  hang_non2xx=${last_non2xx}
  BENCH_PACE_MS=${pace_cached_ms} wrk_run s3-gateway-cached-hang-paced "${gateway_pid}" \
    -t"${wrk_threads}" -c"${conns}" -d"${run_s}s" -s "${here}/cached_paced.lua" "${url}"
  hang_paced_p99=${last_p99}
  hang_paced_rps=${last_rps}
  hung_after=$(sim_stat in_flight)
  hang_total=$(curl -fsS --max-time 5 "http://${sim_addr}/__control/stats" |
    grep -o '"hang": *[0-9]*' | grep -o '[0-9]*$')
  upstream_after=$(metric "${gateway_addr}" vin_gateway_upstream_in_flight)
  curl -fsS --max-time 5 "http://${gateway_addr}/status" >"${out}/s3-status-after.json"
  curl -fsS --max-time 5 "http://${sim_addr}/__control/stats" >"${out}/s3-vpic-sim-stats.json"
  stop_server "${background_pid}"
  stop_server "${gateway_pid}"
  sim_reset
  echo "  hung upstream calls in flight: vpic-sim ${hung_before} before / ${hung_after} after," \
    "gateway ${upstream_before} / ${upstream_after}; hangs begun in total ${hang_total}"
  measured="vpic-sim in_flight ${hung_before} -> ${hung_after} (hangs begun: ${hang_total}),"
  measured+=" gateway ${upstream_before} -> ${upstream_after}"
  judge "upstream hang: ${hung_calls} hung calls in flight throughout" "${measured}" \
    "$(((hung_before >= hung_calls && hung_after >= hung_calls && upstream_before >= hung_calls &&
      upstream_after >= hung_calls && hang_total == hung_calls) ? 1 : 0))"
  judge "upstream hang: cached-VIN p99 < 5 ms (-c${conns}, saturating)" \
    "${hang_p99} ms, non-2xx ${hang_non2xx} (no hang: ${baseline_p99} ms)" \
    "$( ((hang_non2xx == 0)) && less_than "${hang_p99}" 5 || echo 0)"
  judge "  same, paced (${conns} conns x $((1000 / pace_cached_ms))/s)" \
    "${hang_paced_p99} ms at ${hang_paced_rps} req/s" "$(less_than "${hang_paced_p99}" 5)" info
}
