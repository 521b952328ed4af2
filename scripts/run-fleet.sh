#!/usr/bin/env bash
# A fleet of vin-gateways on this machine (docs/fleet.md): redis-server (own temp dir, loopback,
# a free port, no persistence), vpic-sim, N gateways sharing their breaker through Redis, and
# nginx in front of them on http://127.0.0.1:8080 (round robin). Prints where everything is and
# stops it all on Ctrl-C (or SIGTERM).
#
#   scripts/run-fleet.sh N [--smoke] [vin-gateway flags...]    (scripts/run.sh --fleet N builds
#                                                                first, then runs this)
#
# Uses the programs of $FUSEBOX_BIN (default build/release/bin). `--smoke` stops after one decode
# through nginx and a look at every instance's "fleet" status. nginx appends the client's address
# to X-Forwarded-For and the gateways run with --trusted-proxy 127.0.0.1/32, so the per-client rate
# limit counts each client, not nginx.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh

count="${1:-}"
if ! [[ "$count" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fleet: usage: scripts/run-fleet.sh N [--smoke] [vin-gateway flags...]" >&2
  exit 2
fi
shift
smoke=false
gateway_args=()
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=true ;;
    *) gateway_args+=("$arg") ;;
  esac
done

bin="${FUSEBOX_BIN:-build/release/bin}"
for tool in redis-server redis-cli python3 nginx curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "run-fleet: error: $tool not found (scripts/install-deps.sh; nginx: apt-get install nginx)" >&2
    exit 1
  fi
done
for program in vpic-sim vin-gateway; do
  if [ ! -x "$bin/$program" ]; then
    echo "run-fleet: error: $bin/$program was not built" >&2
    exit 1
  fi
done

logs="build/run-fleet"
work="$(mktemp -d "${TMPDIR:-/tmp}/fusebox-fleet.XXXXXX")"
chmod 755 "$work"
servers_cleanup() { rm -rf "$work"; }
servers_begin run-fleet "$logs"

start_redis "$work"
echo "==> run-fleet: redis-server at $redis_url (log: $logs/redis.log)"

start_server vpic-sim "$bin/vpic-sim" --listen 127.0.0.1:0
upstream_url="$started_url"
echo "==> run-fleet: vpic-sim at $upstream_url"

gateway_urls=()
upstreams=""
for i in $(seq "$count"); do
  start_server "gateway-$i" "$bin/vin-gateway" --listen 127.0.0.1:0 --upstream-url "$upstream_url" \
    --cache memory --trusted-proxy 127.0.0.1/32 --fleet "$redis_url" --instance-id "gw-$i" \
    "${gateway_args[@]}"
  gateway_urls+=("$started_url")
  upstreams+="    server ${started_url#http://};"$'\n'
  echo "==> run-fleet: gateway gw-$i at $started_url (log: $logs/gateway-$i.log)"
done

mkdir -p "$work/tmp"
# Started as root, nginx's workers would run as nobody, who cannot write its temp dir inside the
# private (0700) work dir: a large answer (a batch) buffered to disk would fail. They run as the
# same user instead; not root, nginx keeps its user and the line is left out.
nginx_user=""
if [[ $(id -u) == 0 ]]; then
  nginx_user="user $(id -un) $(id -gn);"
fi
cat >"$work/nginx.conf" <<CONF
$nginx_user
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $root/$logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  upstream vin_gateways {
$upstreams  }
  server {
    listen 127.0.0.1:8080;
    location / {
      proxy_pass http://vin_gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" &
pids+=("$!")
for _ in $(seq 100); do
  if curl -s -o /dev/null http://127.0.0.1:8080/status; then break; fi
  sleep 0.05
done

vin="1FTMW1T88MFA00001"
echo
echo "The fleet is serving at http://127.0.0.1:8080 (nginx, round robin over ${#gateway_urls[@]} gateways)"
echo "  decode:    curl -s http://127.0.0.1:8080/api/v1/vin/$vin"
echo "  instances: ${gateway_urls[*]}   (curl -s URL/status | jq .fleet)"
echo "  outage:    curl -s -X POST $upstream_url/__control/faults -d '{\"mode\":\"error\",\"status\":503}'"
echo "  revival:   curl -s -X POST $upstream_url/__control/faults -d '{\"mode\":\"ok\"}'"
echo
echo "\$ curl -s http://127.0.0.1:8080/api/v1/vin/$vin"
curl -sS --fail-with-body --max-time 15 "http://127.0.0.1:8080/api/v1/vin/$vin"
echo
connected=true
for url in "${gateway_urls[@]}"; do
  for _ in $(seq 100); do
    if curl -s "$url/status" | grep -q '"connected":true'; then break; fi
    sleep 0.05
  done
  fleet="$(curl -s "$url/status" | grep -o '"fleet":{[^}]*}')"
  echo "$url $fleet"
  if [[ "$fleet" != *'"connected":true'* ]]; then connected=false; fi
done
if [ "$connected" = false ]; then
  echo "run-fleet: error: not every instance reached Redis within 5 s" >&2
  exit 1
fi
if [ "$smoke" = true ]; then
  echo "==> run-fleet: --smoke: stopping"
  exit 0
fi
echo
echo "==> run-fleet: serving until Ctrl-C"
wait "${pids[-1]}"
