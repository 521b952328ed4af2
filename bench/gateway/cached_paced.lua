-- One fixed URL (a cached VIN on the gateway, the static file on nginx), every connection paced
-- by pace.lua (BENCH_PACE_MS): the latency of answers when the server is not saturated.
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

function init(args)
  require("pace").install(thread_index)
end
