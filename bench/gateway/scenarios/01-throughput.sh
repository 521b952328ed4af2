# shellcheck shell=bash
# Scenario 1, throughput: nginx `return 200` of the gateway's own answer bytes (from memory, no
# file) vs the gateway's fresh cache hits, same wrk settings,
# same footing (nginx workers = gateway --threads, 1 and 2), both cache backends (memory, and
# sqlite in the temp dir). The three servers of one footing run side by side (an idle server
# costs nothing) and are measured in alternating rounds, so that a slow spell of this shared VM
# hits all of them alike; each gets s1_rounds x s1_round_s seconds.
#
# Verdict, per backend and footing: the median over rounds of (gateway req/s / nginx req/s in
# the same round) >= 80%. This VM's speed drifts by tens of percent within a minute (both
# servers slow down together), so a ratio taken within one round is steadier than a ratio of
# medians.

median_of() {  # median_of NAME...: "median low high" req/s of the named results.tsv rows
  awk -F'\t' -v names=" $* " 'index(names, " " $1 " ") { v[++n] = $3 }
    END {
      for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
          if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      printf "%d %d %d\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n]
    }' "${results}"
}

ratio_of_rounds() {  # ratio_of_rounds GATEWAY_LABEL NGINX_LABEL: "median% r1% r2% ..."
  awk -F'\t' -v g="s1-$1-r" -v n="s1-$2-r" '
    index($1, g) == 1 { a[substr($1, length(g) + 1)] = $3 }
    index($1, n) == 1 { b[substr($1, length(n) + 1)] = $3 }
    END {
      for (r in a) { v[++k] = 100 * a[r] / b[r] }
      for (i = 1; i <= k; i++)
        for (j = i + 1; j <= k; j++)
          if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      m = (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
      line = sprintf("%.1f", m)
      for (r = 1; r in a; r++) { line = line sprintf(" %.0f", 100 * a[r] / b[r]) }
      print line
    }' "${results}"
}

# s1_label SERVER THREADS: the results.tsv label of a server (nginx, memory or sqlite).
s1_label() {
  if [[ "$1" == nginx ]]; then
    echo "nginx-w$2"
  else
    echo "gateway-$1-t$2"
  fi
}

scenario_throughput() {
  echo "[${SECONDS}s] 1. return 200 (nginx) vs fresh cache hits (gateway)," \
    "wrk -t${wrk_threads} -c${conns}, ${s1_rounds} rounds of ${s1_round_s}s"
  local -A rps=() range=()
  local threads backend server cache label round hits median low high names
  for threads in 1 2; do
    local -A s1_pid=() s1_url=() s1_addr=() s1_hits=()
    start_nginx "${threads}" 200
    s1_pid[nginx]=${nginx_pid}
    s1_url[nginx]=http://${nginx_addr}/api/v1/vin/${vin}
    for backend in memory sqlite; do
      cache=memory
      if [[ "${backend}" == sqlite ]]; then
        rm -rf "${tmp}/cache-s1-${threads}"
        cache=sqlite:${tmp}/cache-s1-${threads}/vin-cache.sqlite
      fi
      start_gateway "gateway-s1-${backend}" --cache "${cache}" --threads "${threads}"
      decode "${vin}" >/dev/null  # warm: the one upstream call; every request after it is a hit
      s1_pid[${backend}]=${gateway_pid}
      s1_url[${backend}]=http://${gateway_addr}/api/v1/vin/${vin}
      s1_addr[${backend}]=${gateway_addr}
      s1_hits[${backend}]=$(metric "${gateway_addr}" vin_gateway_cache_hits_total)
    done
    for server in nginx memory sqlite; do
      wrk_warm -t"${wrk_threads}" -c"${conns}" -d"${warm_s}s" "${s1_url[${server}]}"
    done
    local -A s1_requests=([memory]=0 [sqlite]=0) s1_non2xx=([memory]=0 [sqlite]=0)
    for ((round = 1; round <= s1_rounds; round++)); do
      for server in nginx memory sqlite; do
        label=$(s1_label "${server}" "${threads}")
        wrk_run "s1-${label}-r${round}" "${s1_pid[${server}]}" \
          -t"${wrk_threads}" -c"${conns}" -d"${s1_round_s}s" "${s1_url[${server}]}"
        if [[ "${server}" != nginx ]]; then
          s1_requests[${server}]=$((s1_requests[${server}] + last_requests))
          s1_non2xx[${server}]=$((s1_non2xx[${server}] + last_non2xx))
        fi
      done
    done
    for backend in memory sqlite; do
      hits=$(($(metric "${s1_addr[${backend}]}" vin_gateway_cache_hits_total) -
        s1_hits[${backend}]))
      if ((s1_non2xx[${backend}] != 0 || hits < s1_requests[${backend}])); then
        echo "run.sh: gateway answers were not all fresh cache hits (${backend}: non-2xx" \
          "${s1_non2xx[${backend}]}, ${hits} hits for ${s1_requests[${backend}]} requests)" >&2
        exit 1
      fi
    done
    for server in nginx memory sqlite; do
      label=$(s1_label "${server}" "${threads}")
      names=()
      for ((round = 1; round <= s1_rounds; round++)); do
        names+=("s1-${label}-r${round}")
      done
      read -r median low high < <(median_of "${names[@]}")
      rps[${server}-${threads}]=${median}
      range[${server}-${threads}]=""
      if ((s1_rounds > 1)); then
        range[${server}-${threads}]=" (${low}-${high})"
      fi
      stop_server "${s1_pid[${server}]}"
    done
  done

  local ratio per_round gateway_rps nginx_rps target
  for threads in 1 2; do
    for backend in memory sqlite; do
      read -r ratio per_round < <(ratio_of_rounds "gateway-${backend}-t${threads}" \
        "nginx-w${threads}")
      gateway_rps=${rps[${backend}-${threads}]}${range[${backend}-${threads}]}
      nginx_rps=${rps[nginx-${threads}]}${range[nginx-${threads}]}
      target="cache hits >= 80% of nginx return 200 req/s (${backend} cache, --threads ${threads}"
      target+=" vs ${threads} worker(s))"
      judge "${target}" \
        "${ratio}% (rounds: ${per_round// /%, }%); median req/s ${gateway_rps} vs ${nginx_rps}" \
        "$(awk -v r="${ratio}" 'BEGIN { print (r >= 80) ? 1 : 0 }')"
    done
  done
}
