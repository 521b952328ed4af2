// vin-gateway/service/cache.h
//
// The last-good decode cache. Every successful decode is stored with its fetch time; within the
// TTL it is served without an upstream call, and when a live decode is impossible it is served as
// a labeled stale copy (gateway-api.md). The cache is an interface so that backends can change
// (`memory`, `sqlite:PATH`, and later `redis://`): callers see bytes and a fetch time, and decide
// freshness themselves (the TTL is the caller's policy, not the store's).
//
//   Get(key)         -> the entry, whatever its age (stale serving needs old entries too)
//   Put(key, entry)  -> insert or replace; beyond max_entries the least recently used goes
//
// Failures never reach the caller as errors: a backend that breaks (a corrupt SQLite file, a full
// disk) reports itself unhealthy in Stats() and behaves as an empty cache, so the gateway keeps
// serving live decodes.
//
// Thread safety: all members may be called concurrently. Time: entries carry the caller's
// wall-clock fetch time; recency for LRU is the order of use, not a clock.
//
// Example:
//   auto cache = vin_gateway::OpenCache("sqlite:var/vin-cache.sqlite", 1'000'000);
//   cache->Put("1FTMW1T88MFA00001", {SerializeDecode(d), d.fetched_at});
//   if (auto hit = cache->Get("1FTMW1T88MFA00001"); hit && now - hit->fetched_at < ttl) ...
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/decode.h"

namespace vin_gateway {

struct CacheEntry {
  std::string payload;  // SerializeDecode()
  WallTime fetched_at{};
};

struct CacheStats {
  std::string backend;   // "memory", "sqlite"
  std::string location;  // the file for sqlite
  bool healthy = true;
  std::string error;  // the last error when unhealthy
  std::uint64_t entries = 0;
  std::uint64_t max_entries = 0;
  std::uint64_t gets = 0;
  std::uint64_t hits = 0;  // Get found an entry (fresh or not)
  std::uint64_t puts = 0;
  std::uint64_t evictions = 0;
  std::uint64_t errors = 0;  // backend operations that failed
};

class Cache {
 public:
  virtual ~Cache() = default;
  virtual std::optional<CacheEntry> Get(std::string_view key) = 0;
  virtual void Put(std::string_view key, const CacheEntry& entry) = 0;
  virtual CacheStats Stats() const = 0;
};

// An in-process LRU. max_entries >= 1.
std::unique_ptr<Cache> MakeMemoryCache(std::uint64_t max_entries);

struct SqliteCacheOptions {
  // A file locked by another process (one gateway per file; say, the previous gateway still
  // draining while its successor starts) is tried again at most this often, by the next Get or
  // Put, without waiting for the lock: the cache comes back when the other process lets go.
  std::chrono::milliseconds relock_interval = std::chrono::seconds(5);
};

// A SQLite file in WAL mode, created (with its directory) on first run, locked by this process
// until it is destroyed. Never fails: a file that cannot be opened or is not a valid cache yields
// a cache that is unhealthy and empty (a locked one only until the lock can be had).
std::unique_ptr<Cache> MakeSqliteCache(const std::string& path, std::uint64_t max_entries,
                                       SqliteCacheOptions options = {});

// "memory" or "sqlite:PATH" (checked by GatewayConfig::Validate()); anything else: memory.
std::unique_ptr<Cache> OpenCache(std::string_view uri, std::uint64_t max_entries);

}  // namespace vin_gateway
