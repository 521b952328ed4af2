-- The benchmark's one VIN generator: used by the wrk scripts (found through LUA_PATH, which run.sh
-- sets) and, through print_vins.lua, by run.sh and its scenarios (lib/vins.sh).
--
-- The gateway rejects only VINs with a wrong length or charset (422, before the cache and the
-- breaker); a wrong check digit still decodes. The benchmark VINs nevertheless carry real check
-- digits, so that they look like what a form sends and stay valid if that rule ever changes.
local M = {}

local kTranslit = {
  A = 1, B = 2, C = 3, D = 4, E = 5, F = 6, G = 7, H = 8,
  J = 1, K = 2, L = 3, M = 4, N = 5, P = 7, R = 9,
  S = 2, T = 3, U = 4, V = 5, W = 6, X = 7, Y = 8, Z = 9,
}
local kWeights = { 8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2 }

local function value(c)
  local digit = tonumber(c)
  if digit then
    return digit
  end
  return kTranslit[c]
end

-- head: positions 1-8, tail: positions 10-17. Returns the 17-character VIN with position 9 set.
function M.make(head, tail)
  local probe = head .. "0" .. tail
  local sum = 0
  for i = 1, 17 do
    sum = sum + value(probe:sub(i, i)) * kWeights[i]
  end
  local remainder = sum % 11
  local check = remainder == 10 and "X" or tostring(remainder)
  return head .. check .. tail
end

-- The n-th VIN of a family: Ford's WMI and model year M (2021) as in the recorded VIN
-- 1FTMW1T88MFA00001; `plant` (position 11 onwards) keeps families apart, so the VINs of one
-- scenario are never cached by another. n < 100000.
function M.nth(plant, n)
  return M.make("1FTMW1T8", "M" .. plant .. string.format("%05d", n % 100000))
end

return M
