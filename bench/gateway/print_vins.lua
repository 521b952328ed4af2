-- Prints VINs made by vins.lua, one a line, then exits: lib/vins.sh runs it with
-- `wrk -s print_vins.lua URL`, so that the shell gets its VINs from the same generator as the wrk
-- scripts, through the LuaJIT built into wrk. wrk runs a script's main chunk before it resolves
-- or connects to the URL, and this chunk exits there: no request is ever sent.
--
-- BENCH_VINS (env) = "FAMILY FIRST COUNT": COUNT VINs of FAMILY (two letters) from the FIRST-th.
local vins = require("vins")

local family, first, count = (os.getenv("BENCH_VINS") or ""):match("^(%u%u) (%d+) (%d+)$")
if not family then
  io.stderr:write('print_vins.lua: BENCH_VINS must be "FAMILY FIRST COUNT", e.g. "FW 0 20"\n')
  os.exit(2)
end
first = tonumber(first)
for n = first, first + tonumber(count) - 1 do
  io.write(vins.nth(family, n), "\n")
end
io.stdout:flush()
os.exit(0)
