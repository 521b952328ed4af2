#!/usr/bin/env bash
# Soak: vpic-sim and vin-gateway on loopback ephemeral ports, mixed traffic under a rotating fault
# schedule, and checks that nothing grows, breaks or answers out of contract.
#
#   scripts/soak.sh [MINUTES]          (default 10; CI runs `scripts/soak.sh 1`)
#
# Builds nothing: the binaries come from BIN_DIR (default build/release/bin). Traffic is wrk with
# a Lua script (scripts/install-deps.sh installs wrk), in rounds of 10 s: hits, misses, invalid
# VINs, batches, /status, /metrics, /healthz and admin commands (FUSEBOX_ADMIN_TOKEN set; a few
# with a wrong token). vpic-sim's schedule (--schedule) alternates 5 s "healthy" with 5 s of a
# fault (error 503, hang, slow, reset, garbage, truncated, drip, flap, 429, capacity with relapse,
# 100 Continue with the answer 300 ms later); "healthy" sends 103 Early Hints before a third of
# its answers. Every decode answered 200 of a VIN whose model year depends on the year asked
# (Harley-Davidson, year code B: 2011 plain, 1981 with ?modelyear=1981) is checked against what
# it asked, so an answer read off the wire for another request is caught.
# After each round it prints the gateway's resident set and descriptors, the round's p99 latency
# and the answers by HTTP status. At the end it fails (exit 1) when:
#   - either process died;
#   - an answer had a status outside 200 401 422 429 502 503 504, or wrk saw socket errors
#     (429: the client rate limit is off, so only failed admin tokens can be throttled);
#   - a decode answered 200 carried another model year than the one asked (or none was checked);
#   - the resident set grew: median of the last third of the samples over the first third's by
#     more than SOAK_RSS_GROWTH_PCT percent (default 25) and more than 4 MiB;
#   - the descriptors grew: last third's median over the first third's by more than
#     SOAK_FD_GROWTH (default 20; idle upstream connections come and go, up to --max-in-flight).
# Knobs: SOAK_CONNECTIONS (wrk connections, default 8), SOAK_THREADS (wrk threads, default 1).
# Everything it starts is stopped on any exit.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/await_listening.sh
source "$root/scripts/lib/await_listening.sh"

minutes="${1:-10}"
if ! [[ "$minutes" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/soak.sh [MINUTES]   (a whole number of minutes, default 10)" >&2
  exit 2
fi
bin_dir="${BIN_DIR:-$root/build/release/bin}"
rss_growth_pct="${SOAK_RSS_GROWTH_PCT:-25}"
fd_growth="${SOAK_FD_GROWTH:-20}"
connections="${SOAK_CONNECTIONS:-8}"
threads="${SOAK_THREADS:-1}"
for tool in wrk curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "soak: $tool not found (scripts/install-deps.sh installs it)" >&2
    exit 2
  fi
done
for program in vin-gateway vpic-sim; do
  if [[ ! -x "$bin_dir/$program" ]]; then
    echo "soak: $bin_dir/$program not found; build it (cmake --build build/release --target $program) or set BIN_DIR" >&2
    exit 2
  fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/fusebox-soak.XXXXXX")"
sim_pid=""
gateway_pid=""
wrk_pid=""
stop_all() {
  local pid
  for pid in "$wrk_pid" "$gateway_pid" "$sim_pid"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the fault schedule: 5 s healthy, 5 s of the next fault, over the whole run (+1 min) ----
faults=(
  'mode = "error"
status = 503'
  'mode = "hang"'
  'mode = "slow"
latency = "2s"
latency_dist = "lognormal"
latency_sigma = 0.5'
  'mode = "reset"'
  'mode = "garbage"'
  'mode = "truncated"'
  'mode = "drip"
drip_bytes = 64
drip_interval = "100ms"'
  'mode = "flap"
every = 3
status = 502'
  'mode = "error"
status = 429
retry_after = 2'
  'mode = "capacity"
capacity = 2
relapse = "2s"
latency = "50ms"'
  'mode = "interim"
interim_status = 100
latency = "300ms"'
)
schedule="$work/schedule.toml"
: >"$schedule"
for ((slot = 0, from = 5; from < (minutes + 1) * 60; slot++, from += 10)); do
  printf '[[upstream.phase]]\nfrom = "%ss"\nto = "%ss"\n%s\n\n' \
    "$from" "$((from + 5))" "${faults[slot % ${#faults[@]}]}" >>"$schedule"
done

# ---- the processes ----
token="soak-$RANDOM$RANDOM"
"$bin_dir/vpic-sim" --listen 127.0.0.1:0 --schedule "$schedule" --mode interim --every 3 >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
if ! sim_url="$(await_listening "$work/sim.out" "$sim_pid")"; then
  echo "soak: vpic-sim did not start:" >&2
  cat "$work/sim.log" >&2
  exit 1
fi
FUSEBOX_ADMIN_TOKEN="$token" "$bin_dir/vin-gateway" --listen 127.0.0.1:0 \
  --upstream-url "$sim_url" --cache "sqlite:$work/cache.sqlite" --cache-max-entries 2000 \
  --client-rate 0 --call-timeout 1s --cooldown 2s \
  >"$work/gateway.out" 2>"$work/gateway.log" &
gateway_pid=$!
if ! gateway_url="$(await_listening "$work/gateway.out" "$gateway_pid")"; then
  echo "soak: vin-gateway did not start:" >&2
  cat "$work/gateway.log" >&2
  exit 1
fi
echo "soak: $minutes min; vpic-sim $sim_url (pid $sim_pid), vin-gateway $gateway_url (pid $gateway_pid)"

# ---- the traffic: one request of the mix per call of request() ----
cat >"$work/soak.lua" <<'LUA'
local token = os.getenv("SOAK_ADMIN_TOKEN")
local charset = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ"
local hits = {}
for i = 1, 20 do hits[i] = string.format("1FTMW1T88MC%06d", i) end
local threads = {}
statuses = {}
checked = 0
wrong = 0
local n = 0

local function random_vin()
  local t = {"1HG"}
  for _ = 1, 14 do
    local k = math.random(#charset)
    t[#t + 1] = charset:sub(k, k)
  end
  return table.concat(t)
end

function setup(thread)
  thread:set("seed", #threads + 1)
  threads[#threads + 1] = thread
end

function init(args)
  math.randomseed(os.time() * 100 + seed)
end

function request()
  n = n + 1
  local k = n % 20
  if k < 8 then
    return wrk.format("GET", "/api/v1/vin/" .. hits[math.random(#hits)])
  elseif k < 11 then
    return wrk.format("GET", "/api/v1/vin/" .. random_vin())
  elseif k < 13 then
    return wrk.format("GET", "/api/v1/vin/1FTMW1T88MFA0000O")
  elseif k == 13 then
    local body = string.format('{"vins": ["%s", "%s", "%s", "1FTMW1T8"]}',
                               hits[math.random(#hits)], random_vin(), random_vin())
    return wrk.format("POST", "/api/v1/vin/batch", {["Content-Type"] = "application/json"}, body)
  elseif k == 14 then
    return wrk.format("GET", "/status")
  elseif k == 15 then
    return wrk.format("GET", "/metrics")
  elseif k == 16 then
    return wrk.format("GET", "/healthz")
  elseif k == 17 and n % 1000 == 17 then
    return wrk.format("POST", "/admin/breakers/vpic/reset",
                      {["Authorization"] = "Bearer " .. token})
  elseif k == 17 and n % 1000 == 537 then
    return wrk.format("POST", "/admin/breakers/vpic/reset",
                      {["Authorization"] = "Bearer wrong-" .. token})
  elseif k == 18 then
    return wrk.format("GET", string.format("/api/v1/vin/1HD1KHM18BB%06d?modelyear=1981",
                                           math.random(200)))
  elseif k == 19 then
    return wrk.format("GET", string.format("/api/v1/vin/1HD1KHM18BB%06d", math.random(200)))
  else
    return wrk.format("GET", "/api/v1/vin/" .. hits[math.random(#hits)] .. "?modelyear=2021")
  end
end

-- A 200 decode of a Harley-Davidson VIN must carry the model year it asked for: "modelyear" in the
-- answer is the year asked (absent when none was), vehicle.model_year what vPIC decoded.
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 200 and body:find('"vin":"1HD1KHM18BB', 1, true) then
    checked = checked + 1
    local asked = body:match('"modelyear":(%d+)')
    local got = body:match('"model_year":"(%d+)"')
    if got ~= (asked == "1981" and "1981" or "2011") then
      wrong = wrong + 1
      if wrong <= 3 then io.stderr:write("SOAK-WRONG " .. body:sub(1, 300) .. "\n") end
    end
  end
end

function done(summary, latency, requests)
  local total = {}
  local all_checked, all_wrong = 0, 0
  for _, thread in ipairs(threads) do
    all_checked = all_checked + thread:get("checked")
    all_wrong = all_wrong + thread:get("wrong")
    for status, count in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(total) do parts[#parts + 1] = status .. "=" .. count end
  table.sort(parts)
  local e = summary.errors
  io.write(string.format("SOAK requests=%d p99_ms=%.1f checked=%d wrong_year=%d socket_errors=%d %s\n",
                         summary.requests, latency:percentile(99) / 1000, all_checked, all_wrong,
                         e.connect + e.read + e.write + e.timeout, table.concat(parts, " ")))
end
LUA

rss_samples=()
fd_samples=()
failures=()
checked_total=0
rounds=$((minutes * 6))
printf '%6s %9s %5s %9s %9s %s\n' "t" "rss_kib" "fds" "p99_ms" "requests" "answers"
for ((round = 1; round <= rounds; round++)); do
  SOAK_ADMIN_TOKEN="$token" wrk -t"$threads" -c"$connections" -d10s --timeout 5s \
    -s "$work/soak.lua" "$gateway_url" >"$work/wrk.out" 2>&1 &
  wrk_pid=$!
  wait "$wrk_pid" || true
  wrk_pid=""
  for pid_name in "$sim_pid:vpic-sim" "$gateway_pid:vin-gateway"; do
    if ! kill -0 "${pid_name%%:*}" 2>/dev/null; then
      failures+=("${pid_name#*:} died in round $round")
    fi
  done
  if ((${#failures[@]} > 0)); then
    break
  fi
  line="$(grep '^SOAK ' "$work/wrk.out" || true)"
  if [[ -z "$line" ]]; then
    failures+=("round $round: wrk gave no summary: $(tail -n 3 "$work/wrk.out" | tr '\n' ' ')")
    continue
  fi
  rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$gateway_pid/status")"
  fds="$(find "/proc/$gateway_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
  rss_samples+=("$rss")
  fd_samples+=("$fds")
  requests="$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")"
  p99="$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<<"$line")"
  socket_errors="$(sed -E 's/.*socket_errors=([0-9]+).*/\1/' <<<"$line")"
  checked="$(sed -E 's/.*checked=([0-9]+).*/\1/' <<<"$line")"
  wrong_year="$(sed -E 's/.*wrong_year=([0-9]+).*/\1/' <<<"$line")"
  checked_total=$((checked_total + checked))
  answers="$(sed -E 's/.*socket_errors=[0-9]+ ?//' <<<"$line")"
  printf '%5ss %9s %5s %9s %9s %s\n' "$((round * 10))" "$rss" "$fds" "$p99" "$requests" "$answers"
  for pair in $answers; do
    case "${pair%%=*}" in
      200 | 401 | 422 | 429 | 502 | 503 | 504) ;;
      *) failures+=("round $round: ${pair#*=} answers with status ${pair%%=*}") ;;
    esac
  done
  if ((wrong_year > 0)); then
    failures+=("round $round: $wrong_year of $checked decodes carried another model year than asked: $(grep -m1 '^SOAK-WRONG' "$work/wrk.out" || true)")
  fi
  if ((socket_errors > 0)); then
    failures+=("round $round: $socket_errors socket errors (connect, read, write or timeout)")
  fi
done

# median of the arguments
median() {
  printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
samples=${#rss_samples[@]}
if ((samples >= 3)); then
  third=$((samples / 3))
  rss_first="$(median "${rss_samples[@]:0:third}")"
  rss_last="$(median "${rss_samples[@]:samples-third}")"
  fd_first="$(median "${fd_samples[@]:0:third}")"
  fd_last="$(median "${fd_samples[@]:samples-third}")"
  echo "soak: RSS median first third $rss_first KiB, last third $rss_last KiB;" \
    "descriptors $fd_first -> $fd_last"
  if ((rss_last > rss_first * (100 + rss_growth_pct) / 100 && rss_last > rss_first + 4096)); then
    failures+=("resident set grew from $rss_first KiB to $rss_last KiB (more than $rss_growth_pct%)")
  fi
  if ((fd_last > fd_first + fd_growth)); then
    failures+=("descriptors grew from $fd_first to $fd_last (more than $fd_growth)")
  fi
elif ((${#failures[@]} == 0)); then
  failures+=("only $samples samples: too few to judge a trend")
fi
if ((checked_total == 0 && ${#failures[@]} == 0)); then
  failures+=("no decode's model year was checked")
fi
echo "soak: $checked_total decodes checked against the VIN and model year asked"
echo "soak: vpic-sim served $(curl -s "$sim_url/__control/stats" | sed -E 's/.*"requests_total": ?([0-9]+).*/\1/') upstream requests"

if ((${#failures[@]} > 0)); then
  printf 'soak: FAILED: %s\n' "${failures[@]}" >&2
  echo "---- last lines of the gateway log ----" >&2
  tail -n 20 "$work/gateway.log" >&2
  exit 1
fi
echo "soak: passed ($minutes min, $samples samples)"
