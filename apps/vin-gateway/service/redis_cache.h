// vin-gateway/service/redis_cache.h
//
// The last-good cache in Redis (`--cache redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`), shared by
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

#include "fusebox/circuit_breaker.h"
#include "fusebox/redis_client.h"
#include "service/cache.h"

namespace fusebox::gateway {

struct RedisCacheOptions {
  std::string location;  // the URL, for Stats()
  std::string key_prefix = "fusebox:cache:";
  fusebox::Duration timeout = std::chrono::milliseconds(50);
};

std::unique_ptr<Cache> MakeRedisCache(fusebox::RedisClient& client,
                                      fusebox::CircuitBreaker& breaker, RedisCacheOptions options);

}  // namespace fusebox::gateway
