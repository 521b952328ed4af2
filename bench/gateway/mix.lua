-- The memory scenario's traffic, in a fixed cycle of ten requests:
--   4 fresh cache hits (BENCH_CACHED VINs, warmed by run.sh),
--   3 uncached VINs rejected by the open breaker (a new VIN each time, so per-key state such as
--     single-flight entries would pile up if it leaked),
--   2 invalid VINs (422: a letter O, or too short), 1 GET /healthz.
local vins = require("vins")

local cached = tonumber(os.getenv("BENCH_CACHED") or "20")
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local step = 0
local fresh = 0
local invalid = { "1FTMW1T8OMFA00001", "1FTMW1T88MF" }

function init(args)
  fresh = (thread_index or 0) * 50000
end

function request()
  step = step + 1
  local slot = step % 10
  if slot < 4 then
    return wrk.format("GET", "/api/v1/vin/" .. vins.nth("FW", step % cached))
  elseif slot < 7 then
    fresh = fresh + 1
    return wrk.format("GET", "/api/v1/vin/" .. vins.nth("FM", fresh))
  elseif slot < 9 then
    return wrk.format("GET", "/api/v1/vin/" .. invalid[slot - 6])
  end
  return wrk.format("GET", "/healthz")
end
