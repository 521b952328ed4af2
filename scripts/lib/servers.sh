# shellcheck shell=bash
# Sourced by scripts/run.sh and scripts/run-fleet.sh: the servers a script starts in the
# background, each waited for until it listens, and all stopped together when the script exits
# (normally, on error, on Ctrl-C or SIGTERM).
#
#   servers_begin PREFIX LOGS    PREFIX names the script in errors ("run"); LOGS is the directory
#                                of the servers' output; arms the traps
#   start_server NAME CMD...     starts CMD (stdout in LOGS/NAME.out, stderr in LOGS/NAME.log),
#                                waits for its "listening on http://HOST:PORT" line and sets
#                                $started_url; on failure prints its log and returns 1
#   servers_cleanup              called after every server stopped; a script may redefine it
#
# $pids holds every pid started (a script adds the ones it starts itself).

# shellcheck source=scripts/lib/await_listening.sh
source "$(dirname "${BASH_SOURCE[0]}")/await_listening.sh"

pids=()
started_url=""
servers_prefix="run"
servers_logs="build/run"

servers_cleanup() { :; }

stop_all() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  servers_cleanup
}

servers_begin() {
  servers_prefix="$1"
  servers_logs="$2"
  mkdir -p "$servers_logs"
  trap stop_all EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

start_server() {
  local name="$1"
  shift
  rm -f "$servers_logs/$name.out"  # never read a predecessor's "listening on" line
  "$@" >"$servers_logs/$name.out" 2>"$servers_logs/$name.log" &
  local pid="$!"
  pids+=("$pid")
  # shellcheck disable=SC2034  # read by the script that sources this file
  if started_url="$(await_listening "$servers_logs/$name.out" "$pid")"; then
    return 0
  fi
  echo "$servers_prefix: error: $name did not start; its log ($servers_logs/$name.log):" >&2
  cat "$servers_logs/$name.log" >&2
  return 1
}
