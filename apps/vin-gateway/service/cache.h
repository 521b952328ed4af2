// vin-gateway/service/cache.h
//
// The last-good decode cache. Every successful decode is stored with its fetch time; within the
// TTL it is served without an upstream call, and when a live decode is impossible it is served as
// a labeled stale copy (docs/http-api.md). The cache is an interface so that backends can change
// (`memory`, `sqlite:PATH`, and later `redis://`): callers see bytes and a fetch time, and decide
// freshness themselves (the TTL is the caller's policy, not the store's).
//
//   co_await Get(key)         -> the entry, whatever its age (stale serving needs old entries too)
//   co_await Put(key, entry)  -> insert or replace; beyond max_entries the least recently used goes
//
// The contract, so that a network backend (redis) can implement it without blocking an event loop:
//   - Get and Put are awaitables, awaited in the request's (or the upstream call's) coroutine.
//     They complete on the awaiting coroutine's executor, never throw, and never block the thread
//     on the network: a backend that talks to a server suspends instead.
//   - Each operation is budgeted by the backend itself, in a few milliseconds (a cache read sits
//     in front of every decode, and a rejection is decided after exactly one): when the budget
//     runs out, Get completes with nullopt (a miss) and Put drops the write, and the backend
//     counts an error. The caller never waits on the cache longer than that budget.
//   - Backends that never wait (memory, SQLite on a local file) derive from ImmediateCache: their
//     awaitables complete at once, without suspending the caller, so the request's coroutine pays
//     only a function call (the synchronous GetNow/PutNow do the work).
// The in-process front of parsed decodes (hot_decodes.h) stays synchronous and sits before Get.
//
// Failures never reach the caller as errors: a backend that breaks (a corrupt SQLite file, a full
// disk, a server that is gone) reports itself unhealthy in Stats() and behaves as an empty cache,
// so the gateway keeps serving live decodes.
//
// Thread safety: all members may be called concurrently, from coroutines on any executors (one
// io_context per I/O thread). Time: entries carry the caller's wall-clock fetch time; recency for
// LRU is the order of use, not a clock; a network backend's budget is its own (Asio timers).
//
// Example:
//   auto cache = fusebox::gateway::OpenCache("sqlite:var/vin-cache.sqlite", 1'000'000);
//   co_await cache->Put("1FTMW1T88MFA00001", {SerializeDecode(d), d.fetched_at});
//   if (auto hit = co_await cache->Get("1FTMW1T88MFA00001"); hit && now - hit->fetched_at < ttl)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "core/wall_clock.h"

namespace fusebox::gateway {

struct CacheEntry {
  std::string payload;  // SerializeDecode()
  WallTime fetched_at{};
};

struct CacheStats {
  std::string backend;   // "memory", "sqlite", "redis"
  std::string location;  // the file for sqlite, the URL for redis: for the operator's log only
  bool healthy = true;
  // The last error when unhealthy. Never names the location (the file's path, its directory, the
  // URL): the public routes (/status, /readyz) show it; a log line adds `location` itself.
  std::string error;
  std::uint64_t entries = 0;
  std::uint64_t max_entries = 0;
  std::uint64_t gets = 0;
  std::uint64_t hits = 0;  // Get found an entry (fresh or not)
  std::uint64_t puts = 0;
  std::uint64_t evictions = 0;
  std::uint64_t errors = 0;  // backend operations that failed
  // Entries found but refused as out of bounds (a shared backend: redis_cache.h), read as misses.
  std::uint64_t refused = 0;
};

class Cache {
 public:
  virtual ~Cache() = default;
  // The entry stored under `key`, whatever its age; nullopt when there is none, or when the
  // backend failed or ran out of its budget.
  virtual boost::asio::awaitable<std::optional<CacheEntry>> Get(std::string key) = 0;
  // Stores `entry` under `key` (best effort: a failure or an exhausted budget drops it).
  virtual boost::asio::awaitable<void> Put(std::string key, CacheEntry entry) = 0;
  virtual CacheStats Stats() const = 0;
};

// A backend whose operations never wait on anything but local memory or a local file: Get and Put
// do the work synchronously (GetNow, PutNow) and complete without suspending.
class ImmediateCache : public Cache {
 public:
  boost::asio::awaitable<std::optional<CacheEntry>> Get(std::string key) final;
  boost::asio::awaitable<void> Put(std::string key, CacheEntry entry) final;

  virtual std::optional<CacheEntry> GetNow(std::string_view key) = 0;
  virtual void PutNow(std::string_view key, const CacheEntry& entry) = 0;
};

// An in-process LRU. max_entries >= 1.
std::unique_ptr<ImmediateCache> MakeMemoryCache(std::uint64_t max_entries);

struct SqliteCacheOptions {
  // A file locked by another process (one gateway per file; say, the previous gateway still
  // draining while its successor starts) is tried again at most this often, by the next Get or
  // Put, without waiting for the lock: the cache comes back when the other process lets go.
  std::chrono::milliseconds relock_interval = std::chrono::seconds(5);
};

// Stamped into every SQLite cache file the gateway makes (`PRAGMA application_id`, the 32-bit
// field at offset 68 of the file's header; "VING" in ASCII), so that a file says whether it is a
// cache before the gateway writes to it.
inline constexpr std::int32_t kSqliteCacheApplicationId = 0x56494E47;

// A SQLite file in WAL mode, created (with its directory) on first run, locked by this process
// until it is destroyed. Never fails: a file that cannot be opened or is not a valid cache yields
// a cache that is unhealthy and empty (a locked one only until the lock can be had). Only an
// empty database, a file stamped with kSqliteCacheApplicationId or one holding exactly the
// cache's schema (made before the stamp) is used; any other file (another application's
// database, a file that is not SQLite) is reported and left untouched.
std::unique_ptr<ImmediateCache> MakeSqliteCache(const std::string& path, std::uint64_t max_entries,
                                                SqliteCacheOptions options = {});

// "memory" or "sqlite:PATH" (checked by GatewayConfig::Validate()); anything else: memory.
std::unique_ptr<Cache> OpenCache(std::string_view uri, std::uint64_t max_entries);

}  // namespace fusebox::gateway
