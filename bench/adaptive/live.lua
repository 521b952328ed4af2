-- Every request a VIN that no earlier request of the run asked for, so that every decode the
-- gateway answers 200 is a live upstream call (nothing cached, nothing to join); and a count of
-- what came back: each answer by HTTP status and gateway status, and the latency of the live
-- decodes alone (wrk's own distribution covers every answer, the gateway's instant OVERLOADED
-- refusals included, which would hide the decodes' tail).
--
-- Env: BENCH_PHASE, one letter of the VIN alphabet, keeps the VINs of the runs against one
-- gateway apart (W for the warm-up, R for the measurement); BENCH_LIVE_OUT, when set, is the
-- file done() writes its figures to:
--   duration_s <seconds>
--   end_epoch <when the run ended, Unix time in seconds: the run is [end - duration, end]>
--   live <decodes answered 200 with "source":"live">
--   live_timed <those whose latency was taken: all but any whose X-Request-Id did not come back>
--   live_p50_ms / live_p99_ms / live_max_ms <their latency, to 0.1 ms>
--   answers <HTTP status> <gateway status> <count>   (one line each)
--
-- The latency is taken from just before wrk writes the request (request() is called then) to
-- the answer's arrival, matched by the X-Request-Id the gateway echoes, on CLOCK_MONOTONIC
-- through LuaJIT's FFI: wrk gives a script no clock of its own.
local vins = require("vins")
local ffi = require("ffi")

ffi.cdef([[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock_id, bench_timespec* tp);
]])
local kClockRealtime = 0
local kClockMonotonic = 1
local now_ts = ffi.new("bench_timespec")
local function clock_us(clock_id)
  ffi.C.clock_gettime(clock_id, now_ts)
  return tonumber(now_ts.tv_sec) * 1000000 + tonumber(now_ts.tv_nsec) / 1000
end
local function now_us()
  return clock_us(kClockMonotonic)
end

-- The VIN alphabet (no I, O, Q): 33 characters.
local kAlphabet = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ"
local function encode(n, width)
  local out = {}
  for i = width, 1, -1 do
    local d = n % 33
    out[i] = kAlphabet:sub(d + 1, d + 1)
    n = (n - d) / 33
  end
  return table.concat(out)
end

local phase = os.getenv("BENCH_PHASE") or "R"
local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

-- Per thread (each has its own Lua state).
local counter = 0
local prefix
local started = {}  -- X-Request-Id -> start (us)
answers = {}        -- "200 live", "503 OVERLOADED"... -> count
live_hist = {}      -- latency bucket (0.1 ms) -> count
live_timed = 0

function init(args)
  -- positions 10-17: model year M (2021), the phase, the thread, then a counter of 5
  -- characters (33^5, about 39 million VINs a thread).
  prefix = "M" .. phase .. encode(thread_index or 0, 1)
end

function request()
  counter = counter + 1
  local id = "b" .. (thread_index or 0) .. "-" .. counter
  started[id] = now_us()
  return wrk.format("GET", "/api/v1/vin/" .. vins.make("1FTMW1T8", prefix .. encode(counter, 5)),
    { ["X-Request-Id"] = id })
end

function response(status, headers, body)
  local at = now_us()
  local key
  if status == 200 then
    key = body:find('"source":"live"', 1, true) and "200 live" or "200 not-live"
  else
    key = status .. " " .. (body:match('"status":"([%u_]+)"') or "-")
  end
  answers[key] = (answers[key] or 0) + 1
  local id = headers["X-Request-Id"]
  local start = id and started[id]
  if start then
    started[id] = nil
    if key == "200 live" then
      local bucket = math.floor((at - start) / 100)
      live_hist[bucket] = (live_hist[bucket] or 0) + 1
      live_timed = live_timed + 1
    end
  end
end

-- The latency (ms) at quantile q of the merged histogram.
local function quantile(hist, total, q)
  local keys = {}
  for k in pairs(hist) do
    table.insert(keys, k)
  end
  table.sort(keys)
  local want = math.max(1, math.ceil(total * q))
  local seen = 0
  for _, k in ipairs(keys) do
    seen = seen + hist[k]
    if seen >= want then
      return (k + 1) / 10  -- the bucket's upper edge
    end
  end
  return 0
end

function done(summary, latency, requests)
  local out_path = os.getenv("BENCH_LIVE_OUT")
  if not out_path then
    return
  end
  local hist, total, all = {}, 0, {}
  for _, thread in ipairs(threads) do
    for k, n in pairs(thread:get("live_hist")) do
      hist[k] = (hist[k] or 0) + n
    end
    total = total + thread:get("live_timed")
    for k, n in pairs(thread:get("answers")) do
      all[k] = (all[k] or 0) + n
    end
  end
  local f = assert(io.open(out_path, "w"))
  f:write(string.format("duration_s %.3f\n", summary.duration / 1000000))
  f:write(string.format("end_epoch %.3f\n", clock_us(kClockRealtime) / 1000000))
  f:write(string.format("live %d\n", all["200 live"] or 0))
  f:write(string.format("live_timed %d\n", total))
  f:write(string.format("live_p50_ms %.1f\n", total > 0 and quantile(hist, total, 0.50) or 0))
  f:write(string.format("live_p99_ms %.1f\n", total > 0 and quantile(hist, total, 0.99) or 0))
  f:write(string.format("live_max_ms %.1f\n", total > 0 and quantile(hist, total, 1.0) or 0))
  for k, n in pairs(all) do
    f:write(string.format("answers %s %d\n", k, n))
  end
  f:close()
end
