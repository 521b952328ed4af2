# shellcheck shell=bash
# Sourced by the scripts that start vin-gateway or vpic-sim (scripts/lib/servers.sh, which
# scripts/run.sh, scripts/run-fleet.sh and bench/fleet/run.sh use; tests/web/run.sh;
# bench/gateway/run.sh). Both programs print "listening on http://HOST:PORT" as their first
# stdout line once they accept connections; that line, not a sleep, says a server is ready.
#
#   await_listening STDOUT_FILE PID [SECONDS]
#
# Waits (default 10 s) until STDOUT_FILE's first line is that line and prints the URL
# ("http://HOST:PORT"). Returns 1 without printing if PID exits first or the time runs out.
# Remove STDOUT_FILE before starting the server: the shell truncates it only once the child runs,
# so a file left by an earlier server of the same name could be read first.
await_listening() {
  local file="$1" pid="$2" seconds="${3:-10}"
  local tries=$((seconds * 20)) line=""
  for ((; tries > 0; tries--)); do
    line="$(head -n 1 "$file" 2>/dev/null || true)"
    if [[ "$line" == "listening on http://"* ]]; then
      printf '%s\n' "${line#listening on }"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    sleep 0.05
  done
  return 1
}
