-- Every request asks for a different, never-cached VIN: with the breaker open, each one goes
-- validate -> cache miss -> its own single-flight -> bulkhead -> breaker rejection (503
-- CIRCUIT_OPEN); with the upstream hanging, each one becomes an upstream call that never returns.
--
-- BENCH_PLANT (env) picks the VIN family, so scenarios do not share VINs; threads get disjoint
-- ranges. BENCH_PACE_MS > 0 paces every connection (pace.lua): a load that does not saturate the
-- server, whose latency shows the service time rather than the queue that 256 connections build
-- in front of a saturated server.
local vins = require("vins")

local plant = os.getenv("BENCH_PLANT") or "FB"
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local counter

function init(args)
  -- thread_index is set by setup() in this thread's own Lua state.
  counter = (thread_index or 0) * 25000
  require("pace").install(thread_index)
end

function request()
  counter = counter + 1
  return wrk.format("GET", "/api/v1/vin/" .. vins.nth(plant, counter))
end
