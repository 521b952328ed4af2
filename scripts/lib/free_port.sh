# shellcheck shell=bash
# Sourced by scripts/lib/servers.sh and bench/gateway/lib/procs.sh.
#
#   free_port    prints a loopback TCP port that was free a moment ago: the kernel's choice for
#                a bind to port 0. For servers that cannot listen on port 0 and say which port
#                they took (redis-server, nginx, HAProxy); the others are started on port 0.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
