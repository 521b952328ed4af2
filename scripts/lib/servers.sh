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
#   start_redis DIR              redis-server on a free loopback port, persistence off, its files
#                                in DIR and its log in LOGS/redis.log; waits until it answers PING
#                                and sets $redis_url (redis://127.0.0.1:PORT); on failure prints
#                                its log and returns 1
#   free_port                    a free loopback port (scripts/lib/free_port.sh)
#   servers_cleanup              called after every server stopped; a script may redefine it
#
# stop_all (the EXIT trap) sends SIGTERM to each server and gives it 5 s (a gateway draining a
# hung upstream call), then SIGKILL. $pids holds every pid started (a script adds the ones it
# starts itself).

# shellcheck source=scripts/lib/await_listening.sh
source "$(dirname "${BASH_SOURCE[0]}")/await_listening.sh"
# shellcheck source=scripts/lib/free_port.sh
source "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"

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
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
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

# shellcheck disable=SC2034  # read by the script that sources this file
redis_url=""
# shellcheck disable=SC2034  # redis_url: read by the script that sources this file
start_redis() {
  local dir="$1" port
  port="$(free_port)"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --logfile "$(cd "$servers_logs" && pwd)/redis.log" >/dev/null 2>&1 &
  local pid="$!"
  pids+=("$pid")
  for _ in $(seq 100); do
    if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; then
      redis_url="redis://127.0.0.1:$port"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "$servers_prefix: error: redis-server did not start; its log ($servers_logs/redis.log):" >&2
  cat "$servers_logs/redis.log" >&2 || true
  return 1
}
