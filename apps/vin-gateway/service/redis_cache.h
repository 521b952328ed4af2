// vin-gateway/service/redis_cache.h
//
// The last-good cache in Redis (`--cache redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, or rediss://
// for TLS, redis+sentinel:// for a primary found by Sentinel: fusebox/redis_url.h), shared by
// every gateway of a fleet (docs/fleet.md): a decode stored by one instance is a hit on every
// other. The Cache contract (cache.h) holds: Get and Put suspend instead of blocking, complete on
// the awaiting coroutine's executor, and each has its own budget (`--cache-timeout`, default 50
// ms): a slow or dead Redis is an empty cache, never a stall. Calls go through their own breaker
// (`redis`, in /status and /metrics): once it is open, Get and Put skip Redis altogether.
//
// Entries: `<prefix><VIN>` = "<fetched_at, ms since the Unix epoch>\n<payload>", no expiry: the
// TTL is the reader's policy as with every backend, and the size bound is Redis's (`maxmemory`
// with `allkeys-lru`). The in-process hot front stays in front (hot_decodes.h).
//
// Thread safety: as Cache. The client and the breaker outlive the cache.
#pragma once

#include <memory>
#include <string>

#include "core/wall_clock.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/redis_client.h"
#include "service/cache.h"

namespace fusebox::gateway {

struct RedisCacheOptions {
  std::string location;  // the URL, for Stats()
  std::string key_prefix = "fusebox:cache:";
  fusebox::Duration timeout = std::chrono::milliseconds(50);
  // How far in the future a `fetched_at` may be (another gateway's clock ahead of this one's).
  std::chrono::milliseconds max_clock_skew = std::chrono::minutes(1);
};

// The bounds on what is read back (docs/fleet.md, "Bounds"): Redis is shared, and anyone who
// can write there writes what every gateway serves. An entry is refused (a miss, counted in
// CacheStats::refused, never served nor kept in the hot front) when its value is longer than a
// stored decode can be (checked on Redis: no more than that is ever read), it does not parse,
// its `fetched_at` is before 2000 or more than `max_clock_skew` ahead of `wall_clock` (it would
// be fresh for ever), its two copies of `fetched_at` differ, or its VIN or model year is not the
// key's.
std::unique_ptr<Cache> MakeRedisCache(fusebox::RedisClient& client,
                                      fusebox::CircuitBreaker& breaker, const WallClock& wall_clock,
                                      RedisCacheOptions options);

}  // namespace fusebox::gateway
