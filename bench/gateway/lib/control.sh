# shellcheck shell=bash
# Requests to the running servers, outside the measured load: decodes, metrics, the gateway's
# admin routes and vpic-sim's /__control routes. Sourced by bench/gateway/run.sh; reads the
# globals gateway_addr, sim_addr and admin_token (lib/procs.sh sets them).

metric() {  # metric ADDR NAME_WITH_LABELS: one Prometheus sample's value (0 when absent)
  curl -fsS --max-time 5 "http://$1/metrics" |
    awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'
}

sim_stat() {  # sim_stat FIELD: a top-level number from vpic-sim's /__control/stats
  curl -fsS --max-time 5 "http://${sim_addr}/__control/stats" |
    grep -o "\"$1\": *[0-9]*" | head -n 1 | grep -o '[0-9]*$'
}

sim_reset() {  # sim_reset: vpic-sim's faults and counters back to their start
  curl -fsS --max-time 5 -o /dev/null -X POST "http://${sim_addr}/__control/reset"
}

sim_fault() {  # sim_fault JSON
  curl -fsS --max-time 5 -o /dev/null -X POST -H 'Content-Type: application/json' -d "$1" \
    "http://${sim_addr}/__control/faults"
}

admin() {  # admin ACTION: POST /admin/breakers/vpic/ACTION on the current gateway
  curl -fsS --max-time 5 -o /dev/null -X POST -H "Authorization: Bearer ${admin_token}" \
    "http://${gateway_addr}/admin/breakers/vpic/$1"
}

decode() {  # decode VIN: one request through the current gateway, answer on stdout
  curl -fsS --max-time 10 "http://${gateway_addr}/api/v1/vin/$1"
}
