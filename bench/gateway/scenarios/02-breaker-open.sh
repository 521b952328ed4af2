# shellcheck shell=bash
# Scenario 2, breaker open: the breaker forced open, uncached VINs (a new one each request,
# vary_uncached.lua) at 256 saturating connections are refused with 503 CIRCUIT_OPEN. The
# yardstick: nginx answering `return 503` with the gateway's own refusal bytes (the first probe's
# answer) and its headers, from memory, as many workers as the gateway has threads. s2_rounds
# rounds of s2_round_s seconds, nginx then the gateway in each round (interleaved, so that a slow
# spell of this shared VM hits both alike); then a paced run of the gateway, and of nginx under
# the same paced load (the yardstick for what the client and this VM add to a paced p99).
#
# Verdicts:
#   - every refusal is a 503 CIRCUIT_OPEN (the gateway's own count and wrk's);
#   - in EACH round: the gateway's req/s >= 50% of nginx's and its p99 <= 1.5x nginx's (a stall
#     of the event loop shows as a p99 of hundreds of ms in some round: this is what catches it);
#   - p99 < 2 ms on the paced run (256 connections x 50/s, a load that does not saturate);
#     nginx's p99 under the same paced load is shown beside it (information).
# The summary shows min/median/max of req/s and p99 per server and the per-round ratios.

# s2_spread NAME_PREFIX COLUMN: "min median max" of a results.tsv column (3 req/s, 5 p99) over
# the rows whose name starts with NAME_PREFIX.
s2_spread() {
  awk -F'\t' -v p="$1" -v c="$2" 'index($1, p) == 1 { v[++n] = $c }
    END {
      for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
          if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%s %s %s\n", v[1], m, v[n]
    }' "${results}"
}

scenario_breaker_open() {
  echo "[${SECONDS}s] 2. breaker forced open, uncached VINs, nginx return 503 vs gateway," \
    "wrk -t${wrk_threads} -c${conns_open}, ${s2_rounds} rounds of ${s2_round_s}s"
  local probe_vin check url nginx_url open_metric open_before open_after open_counted open_ok
  local open_requests=0 open_non2xx=0 open_paced_p99 open_paced_rps round target measured
  local nginx_paced_p99 nginx_paced_rps
  local rounds_ok=1 ratios="" g_rps g_p99 n_rps n_p99 ok
  local g_rps_spread g_p99_spread n_rps_spread n_p99_spread
  open_metric='vin_gateway_answers_total{status="CIRCUIT_OPEN",source="none"}'
  start_gateway gateway-s2 --cache "$(sqlite_cache s2)" --threads "${load_threads}"
  admin force-open
  probe_vin=$(vins FB 99999)
  check=$(curl -sS --max-time 5 -o "${out}/s2-first-answer.json" -w '%{http_code}' \
    "http://${gateway_addr}/api/v1/vin/${probe_vin}")
  curl -fsS --max-time 5 "http://${gateway_addr}/status" >"${out}/s2-status-open.json"
  start_nginx "${load_threads}" 503 "${out}/s2-first-answer.json"
  url=http://${gateway_addr}/
  nginx_url=http://${nginx_addr}/
  export BENCH_PLANT=FB
  wrk_warm -t"${wrk_threads}" -c"${conns_open}" -d"${warm_s}s" -s "${here}/vary_uncached.lua" \
    "${nginx_url}"
  wrk_warm -t"${wrk_threads}" -c"${conns_open}" -d"${warm_s}s" -s "${here}/vary_uncached.lua" \
    "${url}"
  open_before=$(metric "${gateway_addr}" "${open_metric}")
  for ((round = 1; round <= s2_rounds; round++)); do
    wrk_run "s2-nginx503-w${load_threads}-r${round}" "${nginx_pid}" -t"${wrk_threads}" \
      -c"${conns_open}" -d"${s2_round_s}s" -s "${here}/vary_uncached.lua" "${nginx_url}"
    n_rps=${last_rps}
    n_p99=${last_p99}
    wrk_run "s2-gateway-open-r${round}" "${gateway_pid}" -t"${wrk_threads}" -c"${conns_open}" \
      -d"${s2_round_s}s" -s "${here}/vary_uncached.lua" "${url}"
    g_rps=${last_rps}
    g_p99=${last_p99}
    open_requests=$((open_requests + last_requests))
    open_non2xx=$((open_non2xx + last_non2xx))
    ok=$(awk -v gr="${g_rps}" -v nr="${n_rps}" -v gp="${g_p99}" -v np="${n_p99}" \
      'BEGIN { print (nr > 0 && gr >= 0.5 * nr && gp <= 1.5 * np) ? 1 : 0 }')
    if ((ok == 0)); then
      rounds_ok=0
    fi
    ratios+=$(awk -v gr="${g_rps}" -v nr="${n_rps}" -v gp="${g_p99}" -v np="${n_p99}" \
      'BEGIN { printf "%s%.0f%%/%.1fx", "", (nr > 0 ? 100 * gr / nr : 0), (np > 0 ? gp / np : 0) }')
    ratios+=" "
  done
  open_after=$(metric "${gateway_addr}" "${open_metric}")
  open_counted=$((open_after - open_before))
  BENCH_PACE_MS=${pace_open_ms} wrk_run s2-gateway-open-paced "${gateway_pid}" \
    -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" -s "${here}/vary_uncached.lua" "${url}"
  open_paced_p99=${last_p99}
  open_paced_rps=${last_rps}
  BENCH_PACE_MS=${pace_open_ms} wrk_run s2-nginx503-paced "${nginx_pid}" \
    -t"${wrk_threads}" -c"${conns_open}" -d"${run_s}s" -s "${here}/vary_uncached.lua" "${nginx_url}"
  nginx_paced_p99=${last_p99}
  nginx_paced_rps=${last_rps}
  unset BENCH_PLANT
  stop_server "${gateway_pid}"
  stop_server "${nginx_pid}"
  echo "  first probe answered HTTP ${check}; CIRCUIT_OPEN answers counted by the gateway during" \
    "the rounds: ${open_counted} of ${open_requests} requests (wrk non-2xx: ${open_non2xx})"
  open_ok=$(((open_counted >= open_requests && open_non2xx == open_requests && check == 503) ?
    1 : 0))
  if ! grep -q '"status":"CIRCUIT_OPEN"' "${out}/s2-first-answer.json"; then
    open_ok=0
  fi
  judge "breaker open: every refusal is 503 CIRCUIT_OPEN" \
    "${open_counted} CIRCUIT_OPEN / ${open_requests} requests, ${open_non2xx} non-2xx" \
    "${open_ok}"
  g_rps_spread=$(s2_spread "s2-gateway-open-r" 3)
  g_p99_spread=$(s2_spread "s2-gateway-open-r" 5)
  n_rps_spread=$(s2_spread "s2-nginx503-w${load_threads}-r" 3)
  n_p99_spread=$(s2_spread "s2-nginx503-w${load_threads}-r" 5)
  target="breaker open, ${conns_open} saturating connections: req/s >= 50% of nginx return 503"
  target+=" and p99 <= 1.5x nginx's, in each of ${s2_rounds} rounds"
  measured="rounds (req/s ratio/p99 ratio): ${ratios% }; gateway req/s min/median/max"
  measured+=" ${g_rps_spread// //}, p99 ${g_p99_spread// //} ms; nginx req/s"
  measured+=" ${n_rps_spread// //}, p99 ${n_p99_spread// //} ms"
  judge "${target}" "${measured}" "${rounds_ok}"
  target="breaker open: p99 < 2 ms at ${conns_open} connections"
  target+=" (paced, ${conns_open} conns x $((1000 / pace_open_ms))/s)"
  measured="${open_paced_p99} ms at ${open_paced_rps} req/s"
  judge "${target}" "${measured}" "$(less_than "${open_paced_p99}" 2)"
  judge "  nginx return 503 under the same paced load (yardstick)" \
    "${nginx_paced_p99} ms at ${nginx_paced_rps} req/s" "$(less_than "${nginx_paced_p99}" 2)" info
}
