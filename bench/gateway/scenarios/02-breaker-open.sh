# shellcheck shell=bash
# Scenario 2, breaker open: the breaker forced open, uncached VINs (a new one each request,
# vary_uncached.lua) at 256 connections are rejected with 503 CIRCUIT_OPEN. Saturating and paced
# runs against the gateway, and the same two against nginx's static 200 for reference.
#
# Verdicts: every rejection is a 503 CIRCUIT_OPEN; p99 < 2 ms on the paced run. With 256
# requests always outstanding, a saturating closed loop's latency is 256 / throughput (Little's
# law) whatever the server, so its p99 measures wrk's queue (nginx's static file misses 2 ms
# there too); it is reported beside the verdict, as information.

scenario_breaker_open() {
  echo "[${SECONDS}s] 2. breaker forced open, uncached VINs," \
    "wrk -t${wrk_threads} -c${conns_open} -d${run_s}s"
  local probe_vin check url open_metric open_before open_after open_counted open_ok
  local open_p99 open_requests open_non2xx open_paced_p99 open_paced_rps
  local nginx_open_p99 nginx_open_paced_p99 target measured
  open_metric='vin_gateway_answers_total{status="CIRCUIT_OPEN",source=""}'
  start_gateway gateway-s2 --cache "$(sqlite_cache s2)" --threads "${load_threads}"
  admin force-open
  probe_vin=$(vins FB 99999)
  check=$(curl -sS --max-time 5 -o "${out}/s2-first-answer.json" -w '%{http_code}' \
    "http://${gateway_addr}/api/v1/vin/${probe_vin}")
  curl -fsS --max-time 5 "http://${gateway_addr}/status" >"${out}/s2-status-open.json"
  url=http://${gateway_addr}/
  export BENCH_PLANT=FB
  wrk_warm -t"${wrk_threads}" -c"${conns_open}" -d"${warm_s}s" -s "${here}/vary_uncached.lua" \
    "${url}"
  open_before=$(metric "${gateway_addr}" "${open_metric}")
  wrk_run s2-gateway-open "${gateway_pid}" -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" \
    -s "${here}/vary_uncached.lua" "${url}"
  open_after=$(metric "${gateway_addr}" "${open_metric}")
  open_p99=${last_p99}
  open_requests=${last_requests}
  open_non2xx=${last_non2xx}
  open_counted=$((open_after - open_before))
  BENCH_PACE_MS=${pace_open_ms} wrk_run s2-gateway-open-paced "${gateway_pid}" \
    -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" -s "${here}/vary_uncached.lua" "${url}"
  open_paced_p99=${last_p99}
  open_paced_rps=${last_rps}
  unset BENCH_PLANT
  stop_server "${gateway_pid}"
  # For reference: what nginx's static 200 gives at the same 256 connections.
  start_nginx "${load_threads}"
  url=http://${nginx_addr}/api/v1/vin/${vin}
  wrk_warm -t"${wrk_threads}" -c"${conns_open}" -d"${warm_s}s" "${url}"
  wrk_run "s2-nginx-w${load_threads}-c${conns_open}" "${nginx_pid}" \
    -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" "${url}"
  nginx_open_p99=${last_p99}
  # And paced like the gateway's judged run: what the host alone does to a p99 at this load.
  BENCH_PACE_MS=${pace_open_ms} wrk_run "s2-nginx-w${load_threads}-c${conns_open}-paced" \
    "${nginx_pid}" -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" \
    -s "${here}/cached_paced.lua" "${url}"
  nginx_open_paced_p99=${last_p99}
  stop_server "${nginx_pid}"
  echo "  first probe answered HTTP ${check}; CIRCUIT_OPEN answers counted by the gateway during" \
    "the run: ${open_counted} of ${open_requests} requests (wrk non-2xx: ${open_non2xx})"
  open_ok=$(((open_counted >= open_requests && open_non2xx == open_requests && check == 503) ?
    1 : 0))
  if ! grep -q '"status":"CIRCUIT_OPEN"' "${out}/s2-first-answer.json"; then
    open_ok=0
  fi
  judge "breaker open: every rejection is 503 CIRCUIT_OPEN" \
    "${open_counted} CIRCUIT_OPEN / ${open_requests} requests, ${open_non2xx} non-2xx" \
    "${open_ok}"
  target="breaker open: p99 < 2 ms at ${conns_open} connections"
  target+=" (paced, ${conns_open} conns x $((1000 / pace_open_ms))/s)"
  measured="${open_paced_p99} ms at ${open_paced_rps} req/s"
  measured+=" (nginx static 200, paced the same: ${nginx_open_paced_p99} ms)"
  judge "${target}" "${measured}" "$(less_than "${open_paced_p99}" 2)"
  judge "  same, saturating wrk (p99 ~ ${conns_open} / throughput)" \
    "${open_p99} ms (nginx static 200 at the same settings: ${nginx_open_p99} ms)" \
    "$(less_than "${open_p99}" 2)" info
}
