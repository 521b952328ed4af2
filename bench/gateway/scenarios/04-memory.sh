# shellcheck shell=bash
# Scenario 4, memory: >= memory_requests mixed requests (mix.lua: fresh cache hits, uncached VINs
# rejected by the forced-open breaker, 422s, /healthz) in wrk runs of memory_chunk_s seconds,
# while the gateway's RSS is sampled every second.
#
# Verdict: flat memory, i.e. the growth over the second half of the measured time, (end - mid) /
# mid, under 5%, and at least memory_requests requests sent.

scenario_memory() {
  echo "[${SECONDS}s] 4. memory: >= ${memory_requests} mixed requests" \
    "(hits, open rejections, 422s, /healthz)"
  local cached=() cached_vin rss_file url hits_before open_before hits opens total chunk
  local memory_start memory_end rss_start rss_mid rss_end rss_max samples growth overall measured
  local open_metric='vin_gateway_answers_total{status="CIRCUIT_OPEN",source="none"}'
  start_gateway gateway-s4 --cache "$(sqlite_cache s4)" --threads "${load_threads}"
  BENCH_CACHED=${cached_vins}
  export BENCH_CACHED
  # The VINs mix.lua asks for as cache hits, cached now.
  mapfile -t cached < <(vins FW 0 "${cached_vins}")
  if ((${#cached[@]} != cached_vins)); then
    echo "run.sh: expected ${cached_vins} VINs from print_vins.lua, got ${#cached[@]}" >&2
    exit 1
  fi
  for cached_vin in "${cached[@]}"; do
    decode "${cached_vin}" >/dev/null
  done
  admin force-open
  rss_file=${out}/s4-rss.tsv
  rss_sampler_start "${gateway_pid}" "${rss_file}"
  url=http://${gateway_addr}/
  wrk_warm -t"${wrk_threads}" -c"${conns}" -d"${warm_s}s" -s "${here}/mix.lua" "${url}"
  hits_before=$(metric "${gateway_addr}" vin_gateway_cache_hits_total)
  open_before=$(metric "${gateway_addr}" "${open_metric}")
  memory_start=$(date +%s.%N)
  total=0
  chunk=0
  while ((total < memory_requests && chunk < memory_max_chunks)); do
    chunk=$((chunk + 1))
    wrk_run "s4-mix-$(printf '%02d' "${chunk}")" "${gateway_pid}" \
      -t"${wrk_threads}" -c"${conns}" -d"${memory_chunk_s}s" -s "${here}/mix.lua" "${url}" \
      >/dev/null
    total=$((total + last_requests))
  done
  memory_end=$(date +%s.%N)
  hits=$(($(metric "${gateway_addr}" vin_gateway_cache_hits_total) - hits_before))
  opens=$(($(metric "${gateway_addr}" "${open_metric}") - open_before))
  sleep 1.2  # one more sample after the load
  stop_server "${rss_sampler_pid}"
  curl -fsS --max-time 5 "http://${gateway_addr}/status" >"${out}/s4-status.json"
  stop_server "${gateway_pid}"
  read -r rss_start rss_mid rss_end rss_max samples < <(rss_figures "${rss_file}" \
    "${memory_start}" "${memory_end}")
  growth=$(awk -v m="${rss_mid}" -v e="${rss_end}" 'BEGIN { printf "%.1f", 100 * (e - m) / m }')
  overall=$(awk -v s="${rss_start}" -v e="${rss_end}" \
    'BEGIN { printf "%.1f", 100 * (e - s) / s }')
  echo "  ${total} requests in ${chunk} runs; RSS KiB start ${rss_start}, mid ${rss_mid}," \
    "max ${rss_max}, end ${rss_end} (${samples} samples); cache hits ${hits}, CIRCUIT_OPEN ${opens}"
  measured="${total} requests; RSS ${rss_start} -> ${rss_end} KiB (max ${rss_max}),"
  measured+=" 2nd half ${growth}%, overall ${overall}%"
  judge "memory flat over >= ${memory_requests} requests (second-half growth < 5%)" "${measured}" \
    "$(awk -v g="${growth}" -v t="${total}" -v r="${memory_requests}" \
      'BEGIN { print (g < 5 && t >= r) ? 1 : 0 }')"
}
