-- One fixed, cached VIN (the URL wrk is given), every connection paced by pace.lua
-- (BENCH_PACE_MS): the latency of cache hits when the server is not saturated.
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

function init(args)
  require("pace").install(thread_index)
end
