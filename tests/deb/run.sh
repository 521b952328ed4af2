#!/usr/bin/env bash
# The Debian packages on this machine, as an operator would use them (docs/install.md), as root:
#   1. scripts/package.sh BUILD_DIR builds them (lintian: no errors);
#   2. dpkg -i installs all five; the unit passes `systemd-analyze verify`, its exposure score is
#      printed, and the man pages open;
#   3. the installed gateway runs exactly as the unit's ExecStart (its user, its working
#      directory, its config in /etc, edited to ask the installed vpic-sim on loopback), decodes a
#      VIN, opens the packaged offline snapshot, takes a changed config on SIGHUP, and stops
#      cleanly on SIGTERM;
#   4. a consumer project builds against the installed libfusebox-dev (tests/package/run.sh);
#   5. dpkg --purge removes them, and nothing is left but the system user (Debian policy keeps
#      it).
# Packages of an earlier run are purged first. Usage: tests/deb/run.sh [BUILD_DIR]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${1:-build/release}"
packages=(vin-gateway vin-gateway-vpic-data vpic-sim fusebox-sim libfusebox-dev)
unit=/lib/systemd/system/vin-gateway.service
conf=/etc/vin-gateway/vin-gateway.toml
state=/var/lib/vin-gateway

fail() {
  echo "deb: FAILED: $*" >&2
  exit 1
}
if [ "$(id -u)" -ne 0 ]; then
  fail "run as root (it installs and purges packages)"
fi

purge_all() {
  local installed=()
  for p in "${packages[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed\|config-files'; then
      installed+=("$p")
    fi
  done
  if [ ${#installed[@]} -gt 0 ]; then
    dpkg --purge "${installed[@]}" >/dev/null
  fi
}
purge_all

echo "deb: scripts/package.sh $build"
bash scripts/package.sh "$build"
debs=(build/packages/*.deb)
[ ${#debs[@]} -eq 5 ] || fail "expected 5 packages, got ${#debs[@]}"

logs="$(mktemp -d "${TMPDIR:-/tmp}/fusebox-deb.XXXXXX")"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
servers_begin deb "$logs"
finished=false
servers_cleanup() {
  # On a failure, leave the machine as it was found.
  if [ "$finished" = false ]; then
    purge_all
    rm -rf "$logs"
  fi
}

echo "deb: dpkg -i ${debs[*]}"
dpkg -i "${debs[@]}" >"$logs/dpkg.log" 2>&1 || {
  cat "$logs/dpkg.log" >&2
  fail "dpkg -i"
}
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" | grep -q 'install ok installed' || fail "$p not installed"
done
getent passwd vin-gateway >/dev/null || fail "the package made no vin-gateway user"
[ "$(stat -c %U:%a "$state")" = "vin-gateway:750" ] || fail "$state: $(stat -c %U:%a "$state")"
[ -f "$conf" ] || fail "no $conf"
dpkg-query --showformat='${Conffiles}\n' --show vin-gateway | grep -q " $conf " ||
  fail "$conf is not a conffile"

echo "deb: systemd-analyze verify $unit"
systemd-analyze verify "$unit"
score="$(systemd-analyze security --offline=true "$unit" 2>/dev/null | tail -n 1)"
echo "deb: $score"
echo "$score" | grep -Eq 'level for vin-gateway.service: [0-1]\.[0-9] ' ||
  fail "exposure score above 2.0: $score"
for page in vin-gateway vpic-sim fusebox-sim fusebox-scenario; do
  man -P cat "$page" 2>/dev/null | grep -q . || fail "man $page shows nothing"
done

# The operator's edits: vPIC is the installed vpic-sim on loopback, and a free port.
start_server vpic-sim /usr/bin/vpic-sim --listen 127.0.0.1:0
upstream_url="$started_url"
sed -i "s|^# listen = .*|listen = \"127.0.0.1:0\"|; s|^# upstream_url = .*|upstream_url = \"$upstream_url\"|" \
  "$conf"
/usr/bin/vin-gateway --check-config "$conf" >"$logs/check.out" || fail "--check-config $conf"
grep -q "^upstream_url = \"$upstream_url\"" "$logs/check.out" || fail "--check-config output"

# The unit's ExecStart, as its user, in its working directory, with nothing else.
exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
user="$(sed -n 's/^User=//p' "$unit")"
workdir="$(sed -n 's/^WorkingDirectory=//p' "$unit")"
read -r -a exec_argv <<<"$exec_start"
echo "deb: as $user in $workdir: $exec_start"
start_server vin-gateway env -i -C "$workdir" \
  /usr/bin/setpriv --reuid="$user" --regid="$user" --init-groups -- "${exec_argv[@]}"
gateway_url="$started_url"
gateway_pid="${pids[-1]}"

vin=1FTMW1T88MFA00001
answer="$(curl -sS --fail-with-body --max-time 15 "$gateway_url/api/v1/vin/$vin")"
echo "$answer" | grep -q '"make":"FORD"' || fail "decode through the installed gateway: $answer"
echo "deb: decoded $vin through the installed gateway"
[ -f "$state/vin-cache.sqlite" ] || fail "no cache in $state"
[ "$(stat -c %U "$state/vin-cache.sqlite")" = vin-gateway ] || fail "cache not the user's"
grep -q 'offline decode from /usr/share/vin-gateway/vpic/vpic.lite.db' "$logs/vin-gateway.log" ||
  fail "the packaged snapshot was not opened: $(cat "$logs/vin-gateway.log")"

# A reload, as `systemctl reload` sends it.
sed -i 's|^# failure_threshold = .*|failure_threshold = 7|' "$conf"
kill -HUP "$gateway_pid"
reloaded=false
for _ in $(seq 100); do
  if curl -sS --max-time 5 "$gateway_url/status" | grep -Eq '"failure_threshold": ?7[,}]'; then
    reloaded=true
    break
  fi
  sleep 0.05
done
[ "$reloaded" = true ] || fail "SIGHUP: failure_threshold 7 not applied: $(cat "$logs/vin-gateway.log")"
echo "deb: SIGHUP applied failure_threshold = 7"

kill -TERM "$gateway_pid"
status=0
wait "$gateway_pid" || status=$?
[ "$status" -eq 0 ] || fail "SIGTERM: exit status $status"
echo "deb: SIGTERM: stopped with status 0"

echo "deb: tests/package against the installed libfusebox-dev"
FUSEBOX_INSTALLED_PREFIX=/usr bash tests/package/run.sh

echo "deb: dpkg --purge"
finished=true
stop_all
trap - EXIT
dpkg --purge "${packages[@]}" >"$logs/purge.log" 2>&1 || {
  cat "$logs/purge.log" >&2
  fail "dpkg --purge"
}
left=()
for path in /etc/vin-gateway "$state" "$unit" /usr/bin/vin-gateway /usr/bin/vpic-sim \
  /usr/bin/fusebox-sim /usr/share/vin-gateway /usr/include/fusebox \
  /usr/lib/x86_64-linux-gnu/cmake/fusebox /usr/lib/cmake/fusebox \
  /etc/systemd/system/multi-user.target.wants/vin-gateway.service \
  /var/lib/systemd/deb-systemd-helper-enabled/vin-gateway.service; do
  if [ -e "$path" ] || [ -L "$path" ]; then left+=("$path"); fi
done
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed\|config-files'; then
    left+=("package $p")
  fi
done
rm -rf "$logs"
[ ${#left[@]} -eq 0 ] || fail "left after purge: ${left[*]}"
echo "deb: OK (purged; the vin-gateway system user stays, as Debian policy asks)"
