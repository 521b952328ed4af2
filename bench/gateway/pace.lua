-- Think time between a connection's requests when BENCH_PACE_MS > 0: exponential with that mean,
-- so that the connections act like independent users (Poisson-like arrivals) instead of firing
-- in lockstep. A fixed delay would make all connections send in bursts (they start together and
-- stay in phase), and the burst, not the server, would set the p99. wrk's latency clock starts
-- when the request is written, so the think time itself is not counted.
local M = {}

function M.install(thread_index)
  local pace_ms = tonumber(os.getenv("BENCH_PACE_MS") or "0")
  if pace_ms <= 0 then
    return
  end
  math.randomseed(os.time() * 64 + (thread_index or 0))
  -- wrk calls a global delay() before each request when the script defines one.
  function delay()
    return math.floor(-math.log(1 - math.random()) * pace_ms + 0.5)
  end
end

return M
