#include <list>
#include <string>
#include <unordered_map>
#include <utility>

#include "fusebox/thread_annotations.h"
#include "service/cache.h"

namespace fusebox::gateway {
namespace {

// LRU: a list in order of use (front = most recent) and an index into it.
class MemoryCache final : public ImmediateCache {
 public:
  explicit MemoryCache(std::uint64_t max_entries) : max_entries_(max_entries) {}

  std::optional<CacheEntry> GetNow(std::string_view key) override {
    fusebox::Locked lock(mu_);
    ++gets_;
    auto it = index_.find(std::string(key));
    if (it == index_.end()) {
      return std::nullopt;
    }
    ++hits_;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  void PutNow(std::string_view key, const CacheEntry& entry) override {
    fusebox::Locked lock(mu_);
    ++puts_;
    std::string k(key);
    if (auto it = index_.find(k); it != index_.end()) {
      it->second->second = entry;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.emplace_front(k, entry);
    index_.emplace(std::move(k), order_.begin());
    while (index_.size() > max_entries_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evictions_;
    }
  }

  CacheStats Stats() const override {
    fusebox::Locked lock(mu_);
    CacheStats s;
    s.backend = "memory";
    s.entries = index_.size();
    s.max_entries = max_entries_;
    s.gets = gets_;
    s.hits = hits_;
    s.puts = puts_;
    s.evictions = evictions_;
    return s;
  }

 private:
  using Order = std::list<std::pair<std::string, CacheEntry>>;
  const std::uint64_t max_entries_;
  mutable fusebox::Mutex mu_;
  Order order_ FUSEBOX_GUARDED_BY(mu_);
  std::unordered_map<std::string, Order::iterator> index_ FUSEBOX_GUARDED_BY(mu_);
  std::uint64_t gets_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t hits_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t puts_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t evictions_ FUSEBOX_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<ImmediateCache> MakeMemoryCache(std::uint64_t max_entries) {
  return std::make_unique<MemoryCache>(max_entries == 0 ? 1 : max_entries);
}

std::unique_ptr<Cache> OpenCache(std::string_view uri, std::uint64_t max_entries) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (uri.substr(0, kSqlite.size()) == kSqlite) {
    return MakeSqliteCache(std::string(uri.substr(kSqlite.size())), max_entries);
  }
  return MakeMemoryCache(max_entries);
}

boost::asio::awaitable<std::optional<CacheEntry>> ImmediateCache::Get(std::string key) {
  co_return GetNow(key);
}

boost::asio::awaitable<void> ImmediateCache::Put(std::string key, CacheEntry entry) {
  PutNow(key, entry);
  co_return;
}

}  // namespace fusebox::gateway
