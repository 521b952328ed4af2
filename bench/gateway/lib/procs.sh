# shellcheck shell=bash
# Processes of the gateway benchmark: starting vpic-sim, vin-gateway and nginx on 127.0.0.1,
# waiting until they serve, and stopping them. Sourced by bench/gateway/run.sh.
#
# Every process started here (and every background process a scenario adds to `pids`) is stopped
# on exit, whatever happens: procs_setup installs the EXIT trap. Reads the globals here, out,
# gateway_bin, admin_token, sim_addr and vin; sets started_pid/started_addr, gateway_pid/
# gateway_addr and nginx_pid/nginx_addr for the scenarios.

# procs_setup: the temp dir ($tmp, removed on exit), the pid list and the traps.
procs_setup() {
  tmp=$(mktemp -d /tmp/bench-gateway.XXXXXX)
  # nginx's workers run as nobody and must read the document root.
  chmod 755 "${tmp}"
  pids=()
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

stop_pid() {
  local pid=$1
  kill -TERM "${pid}" 2>/dev/null || return 0
  local i
  for ((i = 0; i < 50; i++)); do
    if ! kill -0 "${pid}" 2>/dev/null; then
      wait "${pid}" 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
  kill -KILL "${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
}

stop_all() {
  local pid
  for pid in "${pids[@]}"; do
    stop_pid "${pid}"
  done
  pids=()
}

cleanup() {
  stop_all
  rm -rf "${tmp}"
}

forget_pid() {
  local keep=() pid
  for pid in "${pids[@]}"; do
    if [[ "${pid}" != "$1" ]]; then
      keep+=("${pid}")
    fi
  done
  pids=("${keep[@]}")
}

stop_server() {
  stop_pid "$1"
  forget_pid "$1"
}

# Starts "$@" in the background (stderr to $started_stderr), waits for its first stdout line
# "listening on http://HOST:PORT" and sets started_pid and started_addr.
started_stderr=/dev/null
start_server() {
  local name=$1
  shift
  local stdout_file=${tmp}/${name}.stdout
  # A server started again under the same name must not be found by its predecessor's line:
  # the redirect below truncates the file only once the child runs, after the wait has begun.
  rm -f "${stdout_file}"
  "$@" >"${stdout_file}" 2>"${started_stderr}" &
  started_pid=$!
  pids+=("${started_pid}")
  local url
  if url=$(await_listening "${stdout_file}" "${started_pid}"); then
    started_addr=${url#http://}
    return 0
  fi
  echo "run.sh: ${name} did not start; its command was: $*" >&2
  exit 1
}

# start_vpic_sim: vpic-sim on an ephemeral port; sets sim_addr.
start_vpic_sim() {
  start_server vpic-sim "${sim_bin}" --listen 127.0.0.1:0
  sim_addr=${started_addr}
}

# start_gateway NAME FLAGS...: a gateway in front of vpic-sim; sets gateway_pid and gateway_addr.
# --offline-db none: where scripts/install-deps.sh has put the vPIC snapshot in var/vpic/, the
# gateway would otherwise answer an open breaker's VINs from it (200, not the 503 refusal that
# scenario 2 measures).
# The gateway writes one access-log line per request to stderr; the benchmark throws it away
# (nginx runs with access_log off). Its cost, a formatted line and a write(2) per request, stays.
start_gateway() {
  local name=$1
  shift
  start_server "${name}" env FUSEBOX_ADMIN_TOKEN="${admin_token}" "${gateway_bin}" \
    --listen 127.0.0.1:0 --upstream-url "http://${sim_addr}" --client-rate 0 \
    --offline-db none --shutdown-grace 1s "$@"
  gateway_pid=${started_pid}
  # shellcheck disable=SC2034  # read by lib/control.sh and the scenarios
  gateway_addr=${started_addr}
}

# sqlite_cache NAME: a --cache value for a fresh sqlite cache in the temp dir. Scenarios 2-4 use
# the default cache backend (sqlite) this way.
sqlite_cache() {
  rm -rf "${tmp}/cache-$1"
  echo "sqlite:${tmp}/cache-$1/vin-cache.sqlite"
}

# record_answer: the bytes nginx serves, a real gateway answer (a fresh cache hit) for $vin, into
# $tmp/answer.json (and a copy in $out).
record_answer() {
  start_gateway probe --cache memory
  decode "${vin}" >/dev/null
  decode "${vin}" >"${tmp}/answer.json"
  cp "${tmp}/answer.json" "${out}/answer.json"
  stop_server "${gateway_pid}"
}

# free_port: scripts/lib/free_port.sh.
# shellcheck source=scripts/lib/free_port.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/free_port.sh"

# start_nginx WORKERS [MODE [BODY_FILE]]: nginx on a free port from its own config
# (nginx.conf.in); sets nginx_pid and nginx_addr. MODE static (the default): $tmp/answer.json as
# a file at the gateway's path for $vin. MODE 200 or 503: `return 200` / `return 503` of
# BODY_FILE's bytes (default $tmp/answer.json) at every path, from memory, the way a server
# answers that does no work; 503 with the gateway's Retry-After as well.
start_nginx() {
  local workers=$1 mode=${2:-static} body_file=${3:-${tmp}/answer.json}
  local dir=${tmp}/nginx-${workers}-${mode}
  mkdir -p "${dir}/tmp" "${dir}/www/api/v1/vin"
  cp "${tmp}/answer.json" "${dir}/www/api/v1/vin/${vin}"
  if [[ "${mode}" == static ]]; then
    echo 'location / { }' >"${dir}/location.conf"
  else
    # The body as an nginx string: backslashes and single quotes escaped. A '$' would start a
    # variable, and no gateway answer holds one; refuse rather than serve other bytes.
    if grep -q '\$' "${body_file}"; then
      echo "run.sh: ${body_file} holds a '\$', which nginx's return cannot serve verbatim" >&2
      exit 1
    fi
    {
      echo 'location / {'
      if [[ "${mode}" == 503 ]]; then
        echo '  add_header Retry-After 20 always;'
      fi
      printf "  return %s '%s';\n" "${mode}" "$(sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g" \
        "${body_file}")"
      echo '}'
    } >"${dir}/location.conf"
  fi
  chmod -R a+rX "${dir}"
  local attempt port
  for ((attempt = 0; attempt < 5; attempt++)); do
    port=$(free_port)
    sed -e "s|@WORKERS@|${workers}|g" -e "s|@DIR@|${dir}|g" -e "s|@PORT@|${port}|g" \
      "${here}/nginx.conf.in" >"${dir}/nginx.conf"
    nginx -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/nginx-error.log" 2>>"${dir}/stderr" &
    nginx_pid=$!
    pids+=("${nginx_pid}")
    local i
    for ((i = 0; i < 50; i++)); do
      # Any HTTP answer (a 503 too) means it serves; a return mode must serve the exact bytes.
      if curl -sS -o "${dir}/probe" --max-time 1 "http://127.0.0.1:${port}/api/v1/vin/${vin}" \
        2>/dev/null; then
        if [[ "${mode}" != static ]] && ! cmp -s "${dir}/probe" "${body_file}"; then
          echo "run.sh: nginx's return ${mode} does not serve ${body_file} verbatim" >&2
          exit 1
        fi
        # shellcheck disable=SC2034  # read by the scenarios
        nginx_addr=127.0.0.1:${port}
        return 0
      fi
      if ! kill -0 "${nginx_pid}" 2>/dev/null; then
        break
      fi
      sleep 0.1
    done
    stop_pid "${nginx_pid}"
    forget_pid "${nginx_pid}"
  done
  echo "run.sh: nginx did not start:" >&2
  cat "${dir}/stderr" "${dir}/nginx-error.log" >&2 2>/dev/null || true
  exit 1
}
