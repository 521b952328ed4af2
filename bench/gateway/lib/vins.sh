# shellcheck shell=bash
# The benchmark's VINs for the shell, from the one generator the wrk scripts use (vins.lua), run
# through print_vins.lua by wrk's own LuaJIT: no second check-digit implementation, no other Lua
# interpreter. Sourced by bench/gateway/run.sh; needs LUA_PATH to find vins.lua (run.sh sets it).

# vins FAMILY FIRST [COUNT]: COUNT (default 1) VINs of FAMILY (vins.lua's nth) from the FIRST-th
# on, one a line. wrk exits inside the script, before it resolves or contacts the URL.
vins() {
  BENCH_VINS="$1 $2 ${3:-1}" wrk -s "${here}/print_vins.lua" http://127.0.0.1:1/
}
