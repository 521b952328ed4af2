-- Fresh cache hits for bench/fleet/run.sh: cycles over the VINs that run.sh warmed (the same
-- generator, bench/gateway/vins.lua, found through LUA_PATH; family "FL", VINS_COUNT of them).
local vins = require("vins")
local count = tonumber(os.getenv("VINS_COUNT") or "64")
local paths = {}
for i = 0, count - 1 do
  paths[#paths + 1] = "/api/v1/vin/" .. vins.nth("FL", i)
end
local next_index = 0

function request()
  next_index = next_index % #paths + 1
  return wrk.format("GET", paths[next_index])
end
